"""harness.worker.compare: what matches, what does not, and what the message says."""
from __future__ import annotations

import dataclasses
import re

import numpy as np

from harness.worker.compare import DEFAULT_TOLERANCES, Output, compare

TOL = (1e-6, 1e-6)


def out(values, dtype="float32", name="grad_input"):
    return Output(name, np.asarray(values, dtype=np.float64), dtype)


def golden(shape=(2, 3, 4), seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, size=shape)


def check(got, want, dtype="float32", tol=TOL, k=1):
    return compare([got], [want], dtype, tol, {want.name: k})


def test_equal_arrays_pass():
    w = golden()
    assert check(out(w), out(w)) is None


def test_float32_rounding_passes():
    w = golden()
    assert check(out(w.astype(np.float32).astype(np.float64)), out(w)) is None


def test_one_percent_error_fails_with_a_full_message():
    w = golden(seed=1)
    g = w * 1.01
    rtol, atol = DEFAULT_TOLERANCES["float32"]
    message = check(out(g), out(w), tol=(rtol, atol))
    assert message.startswith("grad_input: ")
    count = re.search(r"(\d+) of (\d+) elements differ beyond tolerance", message)
    assert count and int(count.group(2)) == w.size and 0 < int(count.group(1)) <= w.size
    err = np.abs(g - w)
    assert f"max abs error {err.max():.3g}" in message
    assert "max rel error 0.01" in message
    allowed = rtol * np.abs(w) + atol * max(1.0, np.sqrt(np.mean(w * w)))
    worst = np.unravel_index(np.argmax(err - allowed), w.shape)
    assert f"worst at index {list(map(int, worst))}: got {g[worst]:.6g}, want {w[worst]:.6g}" in message
    assert f"tolerance rtol={rtol:g}, atol={atol:g}" in message
    assert "scaled by sqrt(1)" in message


def test_mismatch_count_is_exact():
    w = np.ones((10,))
    g = w.copy()
    g[[2, 7]] += 0.5
    message = check(out(g), out(w))
    assert "2 of 10 elements differ" in message
    assert "worst at index [2]" in message  # ties: the first


def test_one_bad_output_of_several_is_one_line_naming_it():
    w1, w2 = out(golden(seed=2), name="grad_input"), out(golden(seed=3), name="grad_weight")
    bad = out(w2.values + 1, name="grad_weight")
    message = compare([w1, bad], [w1, w2], "float32", TOL, {})
    assert message.startswith("grad_weight: ") and "\n" not in message


BACKWARD = ("grad_input", "grad_weight", "grad_bias")


def test_every_bad_output_is_named_with_its_worst_element():
    """Each output perturbed at its own element: each gets a line with that element, in output order."""
    wants = [out(golden((2, 3), seed=i), name=n) for i, n in enumerate(BACKWARD)]
    worst = {"grad_input": (0, 1), "grad_weight": (1, 2), "grad_bias": (1, 0)}
    gots = []
    for w in wants:
        g = w.values.copy()
        g[worst[w.name]] += 0.25
        gots.append(out(g, name=w.name))
    message = compare(gots, wants, "float32", TOL, {})
    lines = message.splitlines()
    assert lines[0] == "3 of 3 outputs differ: grad_input, grad_weight, grad_bias"
    assert len(lines) == 4
    for line, g, w in zip(lines[1:], gots, wants):
        at = worst[w.name]
        assert line.startswith(f"{w.name}: 1 of 6 elements differ beyond tolerance; max abs error 0.25, "), line
        assert f"worst at index {list(at)}: got {g.values[at]:.6g}, want {w.values[at]:.6g}; " in line, line


def test_the_header_names_only_the_outputs_that_differ():
    wants = [out(golden(seed=i), name=n) for i, n in enumerate(BACKWARD)]
    gots = [out(wants[0].values + 1, name="grad_input"), wants[1], out(wants[2].values * 2, name="grad_bias")]
    lines = compare(gots, wants, "float32", TOL, {}).splitlines()
    assert lines[0] == "2 of 3 outputs differ: grad_input, grad_bias"
    assert [line.split(":")[0] for line in lines[1:]] == ["grad_input", "grad_bias"]


def test_shape_dtype_values_and_nan_problems_are_each_named():
    w = [out(golden((2, 2), seed=i), name=n) for i, n in enumerate(("a", "b", "c", "d"))]
    nan = w[3].values.copy()
    nan[1, 1] = np.nan
    got = [out(golden((2, 3)), name="a"), out(w[1].values, "float64", name="b"),
           out(w[2].values + 1, name="c"), out(nan, name="d")]
    lines = compare(got, w, "float32", TOL, {}).splitlines()
    assert lines == ["4 of 4 outputs differ: a, b, c, d",
                     "a: shape [2, 3] differs from expected [2, 2]",
                     "b: dtype float64 differs from expected float32",
                     lines[3], lines[4]]
    assert lines[3].startswith("c: 4 of 4 elements differ beyond tolerance; ")
    assert lines[4].startswith("d: 1 NaN and 0 Inf where the golden value is finite") and "[1, 1]" in lines[4]


def test_every_wrong_integer_output_is_named_with_its_first_difference():
    ints = [Output(n, np.arange(6).reshape(2, 3), "int64") for n in ("values", "counts")]
    got = [dataclasses.replace(o, values=o.values + np.eye(2, 3, k=i, dtype=int)) for i, o in enumerate(ints)]
    lines = compare(got, ints, "float32", TOL, {}, reference=ints).splitlines()
    assert lines == ["2 of 2 outputs differ: values, counts",
                     "values: 2 of 6 elements differ (compared exactly); first at index [0, 0]: got 1, want 0",
                     "counts: 2 of 6 elements differ (compared exactly); first at index [0, 1]: got 2, want 1"]


def test_every_wrong_selection_is_named():
    source = np.array([[3.0, 1.0, 2.0], [5.0, 5.0, 4.0]])
    want = [Output(n, np.array([0, 0]), "int64") for n in ("indices", "argmax")]
    got = [Output("indices", np.array([1, 0]), "int64"), Output("argmax", np.array([0, 2]), "int64")]
    lines = compare(got, want, "float32", TOL, {}, reference=want,
                    selections={"indices": (source, 1), "argmax": (source, 1)}).splitlines()
    assert lines[0] == "2 of 2 outputs differ: indices, argmax"
    assert lines[1].startswith("indices: 1 of 2 elements differ (by the input's values they select")
    assert lines[1].endswith("first at index [0]: got 1.0, want 3.0")
    assert lines[2].endswith("first at index [1]: got 4.0, want 5.0")


def test_every_output_past_the_ratio_rule_is_named():
    """The model family's rule: each floating output against eager's own error."""
    wants = [out(golden(seed=i), name=n) for i, n in enumerate(("logits", "hidden"))]
    eager = [out(w.values + 1e-4, name=w.name) for w in wants]
    got = [out(w.values + 0.5, name=w.name) for w in wants]
    lines = compare(got, wants, "float32", TOL, {}, reference=eager, ratio=(3.0, 1e-5)).splitlines()
    assert lines[0] == "2 of 2 outputs differ: logits, hidden"
    for line, name in zip(lines[1:], ("logits", "hidden")):
        assert line.startswith(f"{name}: RMS error 0.5 against the float64 model (5e+03x eager's 0.0001) exceeds ")
    assert compare([got[0], eager[1]], wants, "float32", TOL, {}, reference=eager, ratio=(3.0, 1e-5)) == lines[1]


def test_a_relative_floor_catches_a_small_output_one_percent_off():
    """A training step's gradients are far below 1: a floor of 1e-5 x max(1, RMS) passes them 1%
    off, 1e-5 x their RMS does not; a gradient that is 0 (a bias before batch norm) takes the
    rounding of a backend's other order of sums."""
    want = out(golden() * 1e-5, name="grad/w")
    got = out(want.values * 1.01, name="grad/w")
    assert compare([got], [want], "float32", TOL, {}, reference=[want], ratio=(3.0, 1e-5)) is None
    problem = compare([got], [want], "float32", TOL, {}, reference=[want], ratio=(3.0, 1e-5, True))
    rms = float(np.sqrt(np.mean(want.values ** 2)))
    assert problem.startswith("grad/w: RMS error ") and problem.endswith(f"x rms {rms:.3g} = {1e-5 * rms:.3g}")
    zero, noise = out(want.values * 0, name="grad/bias"), out(want.values * 0 + 4e-9, name="grad/bias")
    assert compare([noise], [zero], "float32", TOL, {}, reference=[zero], ratio=(3.0, 1e-5, True)) is None
    far = compare([out(zero.values + 1e-4, name="grad/bias")], [zero], "float32", TOL, {}, reference=[zero],
                  ratio=(3.0, 1e-5, True))
    assert far.endswith("x 1 (rms 0: zero but for rounding) = 1e-05")   # a zero's floor is absolute


def test_relative_error_is_not_made_up_where_the_golden_is_zero():
    zeros = np.zeros((2, 3))
    message = check(out(zeros + 0.5), out(zeros))
    assert "max abs error 0.5, rel error n/a (want 0); " in message
    assert "worst at index [0, 0]: got 0.5, want 0; " in message
    assert "e+" not in message


def test_relative_error_leaves_out_zero_goldens_and_says_so():
    w = np.array([0.0, 2.0, 0.0, 4.0])
    g = np.array([0.1, 2.2, 0.0, 4.0])   # 0.1 off a zero golden, 10% off the 2
    message = check(out(g), out(w))
    assert "2 of 4 elements differ beyond tolerance; max abs error 0.2, " in message
    assert "max rel error 0.1 (n/a at 1 failing element where want is 0); " in message
    g[2] = -0.1
    assert "(n/a at 2 failing elements where want is 0)" in check(out(g), out(w))
    assert "max rel error 0.1; " in check(out(w * 1.1), out(w))   # a zero golden matched: nothing to say


def test_output_count_mismatch():
    w = [out(golden(), name=n) for n in ("grad_input", "grad_weight", "grad_bias")]
    assert compare(w[:2], w, "float32", TOL, {}) == \
        "expected 3 outputs (grad_input, grad_weight, grad_bias), got 2"


def test_nan_where_golden_is_finite_fails():
    w = golden()
    g = w.copy()
    g[1, 2, 3] = np.nan
    message = check(out(g), out(w))
    assert message.startswith("grad_input: ")
    assert "1 NaN and 0 Inf where the golden value is finite" in message
    assert "first at index [1, 2, 3]: got nan" in message


def test_finite_where_golden_is_nan_fails():
    w = golden()
    w[0, 0, 1] = np.nan
    g = np.nan_to_num(w)
    message = check(out(g), out(w))
    assert "1 finite where it is not" in message and "first at index [0, 0, 1]" in message


def test_nan_and_inf_in_the_same_places_pass_and_the_rest_is_compared():
    w = golden()
    w[0, 0, 0], w[1, 1, 1], w[1, 2, 3] = np.nan, np.inf, -np.inf
    assert check(out(w.copy()), out(w)) is None
    g = w.copy()
    g[0, 1, 1] += 0.1  # a finite element off: still caught
    message = check(out(g), out(w))
    assert "1 of 24 elements differ" in message and "worst at index [0, 1, 1]" in message


def test_inf_where_golden_is_finite_fails():
    w = golden()
    g = w.copy()
    g[0, 2, 2] = np.inf
    assert "0 NaN and 1 Inf where the golden value is finite" in check(out(g), out(w))


def test_inf_of_the_wrong_sign_fails():
    w = golden()
    w[1, 0, 0] = np.inf
    g = w.copy()
    g[1, 0, 0] = -np.inf
    message = check(out(g), out(w))
    assert message is not None
    assert "first at index [1, 0, 0]: got -inf, want inf" in message


def test_inf_of_the_wrong_sign_is_counted_in_the_message():
    w = np.array([np.inf, 1.0])
    g = np.array([-np.inf, 1.0])
    message = check(out(g, name="o"), out(w, name="o"))
    counts = message.split("first at index")[0]
    assert re.search(r"\b[1-9]\d*\b", counts), f"every count is zero: {message}"


def test_shape_mismatch():
    w = golden((1, 2, 4, 4))
    g = np.concatenate([w, w])
    assert check(out(g), out(w)) == "grad_input: shape [2, 2, 4, 4] differs from expected [1, 2, 4, 4]"


def test_dtype_mismatch():
    w = golden()
    assert check(out(w, dtype="float64"), out(w)) == "grad_input: dtype float64 differs from expected float32"
    assert check(out(w, dtype="float32"), out(w), dtype="bfloat16") == \
        "grad_input: dtype float32 differs from expected bfloat16"


def test_shape_is_checked_before_dtype():
    w = golden((2, 2))
    assert "shape" in check(out(golden((2, 3)), dtype="float16"), out(w))


def test_sqrt_k_scaling():
    w = np.ones((4, 4))
    g = w + 1e-5  # allowed per element: sqrt(K) * (1e-6 * 1 + 1e-6 * max(1, rms=1)) = sqrt(K) * 2e-6
    failure = check(out(g), out(w), k=1)
    assert failure is not None and "scaled by sqrt(1)" in failure
    assert "scaled by sqrt(16)" in check(out(g), out(w), k=16)  # 4 * 2e-6 = 8e-6 < 1e-5: fails
    assert check(out(g), out(w), k=36) is None                    # 6 * 2e-6 = 1.2e-5 > 1e-5: passes


def test_rms_sets_the_absolute_scale():
    # Elements near zero (cancellation) are judged against the scale of the whole output.
    w = np.array([1000.0, 0.0])
    g = np.array([1000.0, 1e-4])
    assert check(out(g), out(w)) is None                     # 1e-4 <= 1e-6 * max(1, rms 707)
    assert check(out(g * 0 + [1000.0, 1e-2]), out(w)) is not None


def test_empty_outputs_match():
    empty = np.zeros((0, 3))
    assert check(out(empty), out(empty)) is None


def test_tolerance_is_the_one_given():
    w = np.ones((3,))
    g = w * 1.001
    assert check(out(g), out(w), tol=(1e-6, 1e-6)) is not None
    assert check(out(g), out(w), tol=(1e-2, 0.0)) is None


def test_an_outputs_own_tolerance_merges_with_the_cases_component_by_component():
    """Case dtype float32 at (rtol 1e-5, atol 1e-7); a float64 output whose own tolerance is
    (1e-6, 1e-5): the looser rtol and the looser atol apply, 2e-5 at |want| = 1. A tuple max
    would keep (1e-5, 1e-7), and reject this 1.5e-5 error."""
    want = out(np.ones(4), "float64")
    got = out(np.ones(4) + 1.5e-5, "float64")
    tolerance_of = {"float64": (1e-6, 1e-5)}.get
    assert compare([got], [want], "float32", (1e-5, 1e-7), {}, reference=[want], tolerance_of=tolerance_of) is None
    too_far = out(np.ones(4) + 2.5e-5, "float64")
    assert compare([too_far], [want], "float32", (1e-5, 1e-7), {}, reference=[want],
                   tolerance_of=tolerance_of) is not None


def test_a_large_output_is_judged_block_by_block_with_the_whole_arrays_figures():
    from harness.worker.compare import BLOCK, Accuracy
    w = golden(shape=(3 * BLOCK + 5,), seed=3)
    g = w.copy()
    g[[7, BLOCK + 1, 3 * BLOCK + 4]] += [1e-3, 1e-4, 0.5]   # the worst in the last, partial block
    accuracy = Accuracy()
    message = compare([out(g)], [out(w)], "float32", TOL, {}, accuracy=accuracy)
    assert f"3 of {w.size} elements differ" in message and f"worst at index [{3 * BLOCK + 4}]" in message
    allowed = 1e-6 * np.abs(w) + 1e-6 * max(1.0, np.sqrt(np.mean(w * w)))
    assert accuracy.margins["grad_input"] == float(f"{(np.abs(g - w) / allowed).max():.3g}")


def test_the_outputs_compared_are_left_as_they_were():
    w = golden()
    w[0, 0, 0] = np.nan
    got, want = out(w.copy()), out(w)
    assert check(got, want) is None
    assert np.isnan(got.values[0, 0, 0]) and np.isnan(want.values[0, 0, 0])


def test_finite_values_whose_sum_overflows_are_checked_element_by_element():
    w = np.array([1.5e308, 1.5e308, 1.0])
    with np.errstate(over="ignore"):
        assert check(out(w.copy()), out(w)) is None
        g = w.copy()
        g[2] = np.nan
        assert "1 NaN and 0 Inf where the golden value is finite" in check(out(g), out(w))
