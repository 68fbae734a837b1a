"""harness.worker.compare: what matches, what does not, and what the message says."""
from __future__ import annotations

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


def test_only_the_first_bad_output_is_named():
    w1, w2 = out(golden(seed=2), name="grad_input"), out(golden(seed=3), name="grad_weight")
    bad = out(w2.values + 1, name="grad_weight")
    message = compare([w1, bad], [w1, w2], "float32", TOL, {})
    assert message.startswith("grad_weight: ")


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
