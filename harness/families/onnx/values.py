"""ONNX values in a worker: read from a test's .pb files, and compared as ONNX's backend runner does.

A value is a numpy array (ml_dtypes for bfloat16, float8 and int4), a list of values (a
sequence) or None (an empty optional). The comparison follows `onnx.backend.test.runner`:
as many outputs as expected; a sequence element by element; a tensor's shape, then strings
exactly, everything else with its dtype equal and `allclose(rtol, atol)` (NaN equal to NaN),
bfloat16 with rtol at least two of its ULPs. Messages name the output and say what differs.
`margins` says how close each floating tensor output came to failing under that rule.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np
import onnx
from onnx import numpy_helper

BFLOAT16_RTOL = 2.0 ** -6   # two bfloat16 ULPs, as ONNX's runner allows


def read_value(path: Path, type_proto: onnx.TypeProto) -> Any:
    data = path.read_bytes()
    if type_proto.HasField("sequence_type"):
        sequence = onnx.SequenceProto()
        sequence.ParseFromString(data)
        return numpy_helper.to_list(sequence)
    if type_proto.HasField("optional_type"):
        optional = onnx.OptionalProto()
        optional.ParseFromString(data)
        return numpy_helper.to_optional(optional)
    tensor = onnx.TensorProto()
    tensor.ParseFromString(data)
    return numpy_helper.to_array(tensor)


def read_value_file(path: Path) -> np.ndarray:
    """A user's tensor file: .npy (numpy.save) or .pb (an ONNX TensorProto)."""
    if path.suffix == ".npy":
        return np.load(path, allow_pickle=False)
    proto = onnx.TensorProto()
    proto.ParseFromString(path.read_bytes())
    return numpy_helper.to_array(proto)


def read_data_set(directory: Path, graph: onnx.GraphProto, kind: str) -> list:
    """input_<j>.pb (kind "input") or output_<j>.pb of one test_data_set directory, in order."""
    values = graph.input if kind == "input" else graph.output
    count = len(list(directory.glob(f"{kind}_*.pb")))
    return [read_value(directory / f"{kind}_{j}.pb", values[j].type) for j in range(count)]


def compare_values(got: Sequence[Any], want: Sequence[Any], names: Sequence[str], rtol: float,
                   atol: float) -> str | None:
    """None when the outputs are similar, else `<output>: <what differs>` for the first that is not."""
    got = list(got)
    if len(got) != len(want):
        return f"expected {len(want)} outputs ({', '.join(names)}), got {len(got)}"
    for name, g, w in zip(names, got, want):
        problem = _similar(g, w, rtol, atol)
        if problem:
            return f"{name}: {problem}"
    return None


def margins(got: Sequence[Any], want: Sequence[Any], names: Sequence[str], rtol: float,
            atol: float) -> dict[str, float]:
    """Each floating tensor output's worst |got - want| over atol + rtol x |want| (1.0 at the
    limit), where its shape and dtype are as expected; NaN matching NaN and equal values count 0."""
    figures = {}
    for name, g, w in zip(names, got, want):
        if not isinstance(w, np.ndarray) or w.dtype.kind != "f" and w.dtype.name != "bfloat16":
            continue
        g = np.asarray(g)
        if g.shape != w.shape or g.dtype != w.dtype or not w.size:
            continue
        tolerance = max(rtol, BFLOAT16_RTOL) if w.dtype.name == "bfloat16" else rtol
        g, w = g.astype(np.float64), w.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            ratio = np.abs(g - w) / np.maximum(atol + tolerance * np.abs(w), np.finfo(np.float64).tiny)
            ratio = np.where((np.isnan(g) & np.isnan(w)) | (g == w), 0.0, ratio)
        figures[name] = float(np.nan_to_num(ratio, nan=np.inf, posinf=np.finfo(np.float64).max).max())
    return figures


def _similar(got: Any, want: Any, rtol: float, atol: float) -> str | None:
    if isinstance(want, (list, tuple)):
        if not isinstance(got, (list, tuple)):
            return f"a sequence of {len(want)} was expected, got {type(got).__name__}"
        if len(got) != len(want):
            return f"a sequence of {len(want)} was expected, got {len(got)} elements"
        for index, (g, w) in enumerate(zip(got, want)):
            problem = _similar(g, w, rtol, atol)
            if problem:
                return f"element {index}: {problem}"
        return None
    if want is None or got is None:
        return None if want is None and got is None else ("an empty optional was expected, got a value"
                                                          if want is None else "a value was expected, got none")
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return f"shape {list(got.shape)} differs from expected {list(want.shape)}"
    if want.dtype == object or want.dtype.kind in "SU":
        return _equal(_texts(got), _texts(want), "compared exactly")
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} differs from expected {want.dtype}"
    if want.dtype.kind == "b":
        return _equal(got, want, "compared exactly")
    if want.dtype.kind in "iu" or want.dtype.name.startswith(("int", "uint")):   # ml_dtypes' int4 too
        return _equal(got.astype(np.int64), want.astype(np.int64), "compared exactly")
    if want.dtype.name == "bfloat16":
        rtol = max(rtol, BFLOAT16_RTOL)
    return _close(got.astype(np.float64), want.astype(np.float64), rtol, atol)


def _texts(values: np.ndarray) -> np.ndarray:
    """Strings as str, whether a backend gives them as bytes or str."""
    return np.vectorize(lambda v: v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v),
                        otypes=[object])(values) if values.size else values.astype(object)


def _equal(got: np.ndarray, want: np.ndarray, how: str) -> str | None:
    bad = got != want
    if not np.any(bad):
        return None
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    return (f"{int(np.sum(bad))} of {bad.size} elements differ ({how}); "
            f"first at index {list(first)}: got {_shown(got[first])}, want {_shown(want[first])}")


def _shown(value) -> str:
    """A numpy scalar as its Python value (1, not np.int64(1)); a string quoted."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def _close(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str | None:
    nan = np.isnan(got) & np.isnan(want)
    equal = got == want   # equal infinities are close
    with np.errstate(invalid="ignore"):
        err = np.abs(got - want)
        bad = ~(nan | equal | (err <= atol + rtol * np.abs(want)))
    if not bad.any():
        return None
    worst = np.unravel_index(int(np.argmax(np.where(bad, np.nan_to_num(err, nan=np.inf), -1))), bad.shape)
    return (f"{int(bad.sum())} of {bad.size} elements differ beyond tolerance; "
            f"worst at index {list(map(int, worst))}: got {got[worst]:.6g}, want {want[worst]:.6g}; "
            f"tolerance rtol={rtol:g}, atol={atol:g} (the test's, as ONNX's backend runner compares)")
