"""Compare a backend's outputs with float64 golden values; say exactly what differs.

Floating outputs are compared within a tolerance (below); integer and boolean outputs, and the
dtype of every output, against eager PyTorch at the case's dtype when the family gives that
reference; outputs of random ops by shape and dtype only.

An element is within tolerance when
    |got - want| <= sqrt(K) * (rtol * |want| + atol * max(1, rms(want)))
where K is the number of terms summed per output element (rounding error of a sum grows
with its length, so a fixed tolerance would call a correct large case wrong) and rms(want)
sets the absolute scale (elements near zero after cancellation carry the error of the sum).

Every output is judged, and the message names each one that fails, in output order: one failing
output is one line, "<name>: <what differs>"; several open with a line that counts and names them,
"2 of 3 outputs differ: grad_input, grad_bias", then one such line per output. Each line carries
its output's detail (how many elements differ, the worst one, the errors, the tolerance). The
failure signature (harness.controller.signature) is made from the first failing output's line,
so one output's bug keeps its signature whether or not another output fails with it. A wrong
number of outputs is one line: which output is which is then unknown.

The relative error of an element whose golden value is 0 is undefined: it is left out of "max rel
error" and the message says at how many failing elements it is n/a ("max rel error 0.02 (n/a at 3
failing elements where want is 0)"; "rel error n/a (want 0)" when the whole golden is 0); the
absolute error and the worst element's got and want still show how far off it is.

How close each floating output came to failing is kept too (`Accuracy`): its margin, the worst
element's error over its tolerance under the rule that judged it (1.0 at the limit, so a pass is
below 1; for the ratio rule, the RMS error over what the rule allows), and, for float16 and
bfloat16 outputs, its distance from the float64 golden in units in the last place of its dtype.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable, Collection, Mapping, Sequence

import numpy as np

# Used when a backend config gives no tolerance for a dtype. Calibrated with
# benchmarks/tolerance_margins.py, the worst normalised error of a correct result: float32 1.2e-7
# and float64 8e-17 (eager and linalg-on-tensors, every case), leaving about 8x while still
# catching a 1% error in float32. float16 and bfloat16 are torch.testing's own rtol (1e-3, 1.6e-2):
# over every convolution-backward case at those dtypes (--dtypes), eager's own error reached 4.9e-4
# and 3.8e-3 (2026-12-06), which the 5e-3 bfloat16 had once set from five cases left 1.3x above.
DEFAULT_TOLERANCES = {
    "float64": (1e-12, 1e-12),
    "float32": (1e-6, 1e-6),
    "float16": (1e-3, 1e-3),
    "bfloat16": (1.6e-2, 1.6e-2),
}
# A complex output is compared as its real and imaginary parts, with its parts' tolerance.
DEFAULT_TOLERANCES.update({"complex128": DEFAULT_TOLERANCES["float64"], "complex64": DEFAULT_TOLERANCES["float32"],
                           "complex32": DEFAULT_TOLERANCES["float16"]})


FLOATING = frozenset(DEFAULT_TOLERANCES)


# A float16 or bfloat16 value's explicit mantissa bits and smallest normal exponent: its ULP is
# 2 ** (max(exponent, smallest) - bits).
ULP_FORMATS = {"float16": (10, -14), "bfloat16": (7, -126)}


@dataclasses.dataclass
class Accuracy:
    """How close each compared floating output came to failing, the worst over the input sets
    compared so far (the record's `margins` and `ulps`): `margins[name]` its worst error over its
    tolerance (1.0 at the limit), `ulps[name]` {"max", "p99"} of its elements' distance from the
    golden in ULPs of its dtype, for float16 and bfloat16 outputs. Three significant digits: they
    are compared across runs, where the fourth is noise of no interest."""

    margins: dict[str, float] = dataclasses.field(default_factory=dict)
    ulps: dict[str, dict[str, float]] = dataclasses.field(default_factory=dict)

    def note(self, name: str, margin: float, ulps: dict[str, float] | None = None) -> None:
        self.margins[name] = max(self.margins.get(name, 0.0), _significant(margin))
        if ulps is not None:
            before = self.ulps.get(name, {})
            self.ulps[name] = {k: max(before.get(k, 0.0), _significant(v)) for k, v in ulps.items()}


def _significant(value: float) -> float:
    return float(f"{value:.3g}")


def looser(*tolerances: tuple[float, float]) -> tuple[float, float]:
    """The loosest rtol and the loosest atol of several (rtol, atol) pairs, each on its own (a
    tuple's max would compare rtol first and could keep the tighter atol)."""
    return max(rtol for rtol, _ in tolerances), max(atol for _, atol in tolerances)


@dataclasses.dataclass(frozen=True)
class Output:
    """One output as numpy float64 (or its raw type) plus the dtype name the backend produced."""

    name: str
    values: np.ndarray
    dtype: str
    python_scalar: bool = False   # a bool, int or float, not a tensor: its kind is checked, not its width


def compare(got: Sequence[Output], want: Sequence[Output], dtype: str,
            tolerance: tuple[float, float], reduction_sizes: dict[str, int], *,
            reference: Sequence[Output] | None = None, unchecked: Collection[str] = (),
            tolerance_of: Callable[[str], tuple[float, float]] | None = None,
            selections: Mapping[str, tuple[np.ndarray, int | None]] = {},
            ratio: tuple | None = None, accuracy: Accuracy | None = None) -> str | None:
    """None when every output matches, else a message naming every output that does not (see the
    module docstring for its layout).

    `reference`: the outputs of eager PyTorch at the case's dtype; each one's dtype is the expected
    dtype, and integer and boolean outputs must equal it. `unchecked`: names of outputs compared by
    shape and dtype only ("*": all).
    `tolerance_of(dtype)`: the tolerance of a floating output whose dtype is not the case's (the
    looser of the two applies). `selections`: index outputs (name -> the tensor they index, the dim
    or None for the flattened tensor) compared by the values they select, which ties leave unique.
    `ratio`: (multiplier, floor[, relative]): floating outputs are judged against eager's own error instead
    (`reference` is eager's outputs; see within_ratio). `accuracy`: each floating output's margin
    (and ULPs) is noted there, pass or fail."""
    if len(got) != len(want):
        names = ", ".join(w.name for w in want)
        return f"expected {len(want)} outputs ({names}), got {len(got)}"
    problems = []   # (name, what differs) of every failing output: naming the first alone hid the rest
    for index, (g, w) in enumerate(zip(got, want)):
        r = reference[index] if reference is not None else None
        expected = r.dtype if r is not None else dtype
        problem = _shape_and_dtype(g, w, expected, r is not None and r.python_scalar)
        if problem is None and not ({w.name, "*"} & set(unchecked)):
            margin = None
            if expected in FLOATING and ratio and r is not None:
                problem, margin = _judge_ratio(g, w, r, *ratio)
            elif expected in FLOATING:
                own = tolerance_of(expected) if tolerance_of and expected != dtype else tolerance
                problem, margin = _judge_within(g, w, looser(tolerance, own), reduction_sizes.get(w.name, 1))
            elif w.name in selections:
                problem = _equal_selection(g, r if r is not None else w, *selections[w.name])
            else:
                problem = _equal(g, r if r is not None else w)
            if accuracy is not None and margin is not None:
                accuracy.note(w.name, margin, ulp_figures(g, w) if g.dtype in ULP_FORMATS else None)
        if problem:
            problems.append((w.name, problem))
    if not problems:
        return None
    lines = [f"{name}: {problem}" for name, problem in problems]
    if len(problems) > 1:
        lines.insert(0, f"{len(problems)} of {len(want)} outputs differ: {', '.join(n for n, _ in problems)}")
    return "\n".join(lines)


def _shape_and_dtype(got: Output, want: Output, dtype: str, kind_only: bool) -> str | None:
    if tuple(got.values.shape) != tuple(want.values.shape):
        return f"shape {list(got.values.shape)} differs from expected {list(want.values.shape)}"
    if kind_only and np.dtype(_numpy_name(got.dtype)).kind == np.dtype(_numpy_name(dtype)).kind:
        return None
    if got.dtype != dtype:
        return f"dtype {got.dtype} differs from expected {dtype}"
    return None


def _numpy_name(dtype: str) -> str:
    return "float16" if dtype == "bfloat16" else dtype


def _equal(got: Output, want: Output, how: str = "compared exactly") -> str | None:
    """Integer and boolean outputs: every element exactly (NaN equal to NaN)."""
    g, w = np.asarray(got.values), np.asarray(want.values)
    bad = (g != w) & ~(_isnan(g) & _isnan(w))
    if not bad.any():
        return None
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    return (f"{int(bad.sum())} of {bad.size} elements differ ({how}); "
            f"first at index {list(first)}: got {g[first]}, want {w[first]}")


def _isnan(values: np.ndarray) -> np.ndarray:
    return np.isnan(values) if values.dtype.kind in "fc" else np.zeros(values.shape, bool)


def _equal_selection(got: Output, want: Output, source: np.ndarray, dim: int | None) -> str | None:
    """Indices by what they select: the input's values at the backend's indices against its values
    at eager's, so that either of two equal elements is right."""
    length = source.size if dim is None or source.ndim == 0 else source.shape[dim]
    for o in (got, want):
        values = np.asarray(o.values)
        if values.size and not (0 <= values.min() and values.max() < length):
            return f"indices out of range: {values.min()} to {values.max()} for {length} elements along dim {dim}"
    got_at, want_at = (dataclasses.replace(o, values=select(source, np.asarray(o.values), dim)) for o in (got, want))
    return _equal(got_at, want_at, how="by the input's values they select, exactly; ties make the indices ambiguous")


def select(source: np.ndarray, indices: np.ndarray, dim: int | None) -> np.ndarray:
    """source's values at `indices` along `dim` (None: the flattened source), as torch.gather would
    take them; indices of a reduction without keepdim lack that dim."""
    if dim is None or source.ndim == 0:
        return source.reshape(-1)[indices]
    if indices.ndim < source.ndim:
        indices = np.expand_dims(indices, dim)
        return np.squeeze(np.take_along_axis(source, indices, dim), axis=dim)
    return np.take_along_axis(source, indices, dim)


def _judge_within(got: Output, want: Output, tolerance: tuple[float, float],
                  reduction: int) -> tuple[str | None, float | None]:
    """(what differs or None, the margin: the largest element error over its allowed error; None
    when no element was compared by value)."""
    problem, g, w = _non_finite(_float64(got.values), _float64(want.values))
    if problem or g.size == 0:
        return problem, None
    rtol, atol = tolerance
    scale = math.sqrt(max(reduction, 1))
    rms = math.sqrt(sum(float(np.dot(b, b)) for b in _blocks(w)) / w.size)
    floor = atol * max(1.0, rms)
    margin, failing = 0.0, 0
    for gb, wb in zip(_blocks(g), _blocks(w)):   # a block's temporaries stay in the CPU's cache
        allowed = np.abs(wb)
        allowed *= rtol
        allowed += floor
        allowed *= scale
        err = np.subtract(gb, wb)
        np.abs(err, out=err)
        failing += int(np.count_nonzero(err > allowed))
        np.maximum(allowed, TINY, out=allowed)
        margin = max(margin, float(np.max(np.divide(err, allowed, out=err))))
    if not failing:
        return None, margin
    allowed = scale * (rtol * np.abs(w) + floor)
    err = np.abs(g - w)
    worst = np.unravel_index(int(np.argmax(err - allowed)), err.shape)
    return (f"{failing} of {err.size} elements differ beyond tolerance; "
            f"max abs error {float(err.max()):.3g}, {_relative_error(err, w, err > allowed)}; "
            f"worst at index {list(map(int, worst))}: got {g[worst]:.6g}, want {w[worst]:.6g}; "
            f"tolerance rtol={rtol:g}, atol={atol:g} x max(1, rms {rms:.3g}), "
            f"scaled by sqrt({reduction}) for the reduction length"), margin


BLOCK = 1 << 15   # elements: 256 KiB of float64, so that a block's few temporaries fit in L2


def _blocks(values: np.ndarray):
    """The values flattened, BLOCK elements at a time (views, not copies)."""
    flat = values.reshape(-1)
    return (flat[start:start + BLOCK] for start in range(0, flat.size, BLOCK))


def _float64(values: np.ndarray) -> np.ndarray:
    """The values as float64, without a copy when they are already (outputs are upcast once, in
    harness.worker.execute): nothing here writes to them."""
    return np.asarray(values, dtype=np.float64)


TINY = np.finfo(np.float64).tiny   # an allowed error of 0 (atol 0, want 0): any error is far beyond it


def ulp_figures(got: Output, want: Output) -> dict[str, float]:
    """{"max", "p99"}: the finite elements' |got - want| in ULPs of got's dtype (float16 or
    bfloat16) at want, the float64 golden: a correctly rounded result is within 0.5."""
    bits, smallest = ULP_FORMATS[got.dtype]
    g, w = got.values.astype(np.float64), want.values.astype(np.float64)
    finite = np.isfinite(g) & np.isfinite(w)
    if not finite.any():
        return {"max": 0.0, "p99": 0.0}
    g, w = g[finite], w[finite]
    with np.errstate(divide="ignore"):
        exponent = np.maximum(np.floor(np.log2(np.abs(w))), smallest)   # log2(0) is -inf: the smallest
    distance = np.abs(g - w) / np.exp2(exponent - bits)
    return {"max": float(distance.max()), "p99": float(np.percentile(distance, 99))}


def _relative_error(err: np.ndarray, want: np.ndarray, bad: np.ndarray) -> str:
    """The largest |got - want| / |want| where want is not 0; dividing by 0 (or by the smallest
    float, as it once did) would print 1e+305 for what is an absolute error."""
    nonzero = want != 0
    if not nonzero.any():
        return "rel error n/a (want 0)"
    text = f"max rel error {float((err[nonzero] / np.abs(want[nonzero])).max()):.3g}"
    at_zero = int((bad & ~nonzero).sum())
    return text + (f" (n/a at {at_zero} failing element{'s' * (at_zero > 1)} where want is 0)" if at_zero else "")


def _non_finite(g: np.ndarray, w: np.ndarray) -> tuple[str | None, np.ndarray, np.ndarray]:
    """NaN and Inf must sit exactly where the golden has them (same sign for Inf): (what differs or
    None, g, w), where g and w are copies with their shared non-finite elements set to 0, for the
    rest to be compared, when there are any, else the arrays given."""
    if math.isfinite(float(np.sum(g))) and math.isfinite(float(np.sum(w))):
        return None, g, w   # one pass each: a sum is finite only when every element is (or it overflowed)
    g_nan, w_nan = np.isnan(g), np.isnan(w)
    g_inf, w_inf = np.isinf(g), np.isinf(w)
    wrong = (g_nan != w_nan) | (g_inf != w_inf) | (g_inf & w_inf & (np.sign(g) != np.sign(w)))
    if not wrong.any():
        shared = g_nan | g_inf
        return None, np.where(shared, 0.0, g), np.where(shared, 0.0, w)
    first = list(map(int, np.argwhere(wrong)[0]))
    golden_finite = ~(w_nan | w_inf)
    counts = {"NaN": g_nan & golden_finite, "Inf": g_inf & golden_finite,
              "finite": ~(g_nan | g_inf) & ~golden_finite}
    wrong_sign = int((g_inf & w_inf & (np.sign(g) != np.sign(w))).sum())
    other = int(wrong.sum()) - sum(int(c.sum()) for c in counts.values()) - wrong_sign  # NaN vs Inf swaps
    return (f"{int(counts['NaN'].sum())} NaN and {int(counts['Inf'].sum())} Inf where the golden value is "
            f"finite, {int(counts['finite'].sum())} finite where it is not, {wrong_sign} Inf of the wrong sign"
            + (f", {other} NaN/Inf swapped" if other else "")
            + f"; first at index {first}: got {g[tuple(first)]}, want {w[tuple(first)]}"), g, w


def normalised_error(got: np.ndarray, want: np.ndarray, reduction: int) -> float:
    """The smallest tolerance t (as rtol = atol = t) under which `got` would match: for calibration."""
    g, w = got.astype(np.float64), want.astype(np.float64)
    if w.size == 0:
        return 0.0
    rms = float(np.sqrt(np.mean(w * w)))
    scale = math.sqrt(max(reduction, 1)) * (np.abs(w) + max(1.0, rms))
    return float((np.abs(g - w) / scale).max())


def rms_errors(got: Output, want: Output, eager: Output) -> tuple[float, float, float]:
    """(the backend's RMS error, eager's, the golden's RMS), finite elements only (NaN and Inf are
    checked where they sit first)."""
    g, w, e = (o.values.astype(np.float64) for o in (got, want, eager))
    finite = np.isfinite(w) & np.isfinite(g) & np.isfinite(e)
    if not finite.any():
        return 0.0, 0.0, 0.0
    g, w, e = g[finite], w[finite], e[finite]
    return (float(np.sqrt(np.mean((g - w) ** 2))), float(np.sqrt(np.mean((e - w) ** 2))),
            float(np.sqrt(np.mean(w * w))))


# A golden output's RMS at or below this, judged by a relative floor, is a zero that cancellation
# left (a convolution bias's gradient before batch norm): its error has no scale of its own, so
# the floor is absolute there (a backend's 4e-9 of rounding, eager's exact 0).
NEGLIGIBLE_RMS = 1e-12


def within_ratio(got: Output, want: Output, eager: Output, multiplier: float, floor: float,
                 relative: bool = False) -> str | None:
    """A whole model's output: its RMS error against the float64 golden is at most `multiplier`
    times eager's own (at the case's dtype) plus `floor` x max(1, the golden's RMS), the rule of
    PyTorch's dynamo benchmarks (a fixed tolerance is either too tight for a deep model or too
    loose for a shallow one). `relative`: `floor` x the golden's RMS, for outputs whose scale is
    far below 1 (a training step's gradients: 1e-5 absolute would pass them 1% off), or `floor`
    alone where the golden is 0 but for rounding (NEGLIGIBLE_RMS)."""
    return _judge_ratio(got, want, eager, multiplier, floor, relative)[0]


def _judge_ratio(got: Output, want: Output, eager: Output, multiplier: float, floor: float,
                 relative: bool = False) -> tuple[str | None, float | None]:
    """within_ratio's (what differs or None, the margin: the RMS error over what the rule allows)."""
    problem = _non_finite(_float64(got.values), _float64(want.values))[0]
    if problem or got.values.size == 0:
        return problem, None
    error, eager_error, rms = rms_errors(got, want, eager)
    zero = relative and rms <= NEGLIGIBLE_RMS
    scale = 1.0 if zero else rms if relative else max(1.0, rms)
    allowed = multiplier * eager_error + floor * scale
    margin = error / max(allowed, TINY)
    if error <= allowed:
        return None, margin
    times = f"{error / eager_error:.3g}x eager's" if eager_error else "eager's is 0"
    scaled = (f"1 (rms {rms:.3g}: zero but for rounding)" if zero else f"rms {rms:.3g}" if relative
              else f"max(1, rms {rms:.3g})")
    return (f"RMS error {error:.3g} against the float64 model ({times} {eager_error:.3g}) exceeds "
            f"{multiplier:g} x eager's + {floor:g} x {scaled} = {allowed:.3g}"), margin
