"""Cases of this project's own family (registered by the entry point in pyproject.toml)."""
from e2e_example.reductions import reduction_case

CASES = [
    reduction_case("rows", op="sum", shape=[4, 8], dims=[1]),
    reduction_case("all", op="mean", shape=[3, 5, 7]),
    reduction_case("rows_keepdim", op="amax", shape=[4, 8], dims=[-1], keepdim=True),
    reduction_case("columns", op="prod", shape=[6, 3], dims=[0]),
    reduction_case("rows", op="logsumexp", shape=[4, 8], dims=[1]),
    reduction_case("rows_float64", op="var", shape=[4, 8], dims=[1], dtype="float64"),
    reduction_case("rows_bfloat16", op="sum", shape=[4, 8], dims=[1], dtype="bfloat16"),
]
