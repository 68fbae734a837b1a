"""The reference side of `python -m harness isolate` for ONNX models (imports onnx and numpy; run as
`python -m harness.isolate.reference_onnx` by harness.isolate.engine, never imported by the controller).

It builds the case with its family's builder and runs the model on its first input set with ONNX's
reference evaluator twice, keeping every value: at the model's own dtypes, and widened to float64
(inputs, initializers, constants and every floating dtype a node names become float64). Then, per
candidate node (a node of the top graph with a tensor input, floating tensor outputs, no subgraph,
and the same results when run twice), it writes a one-node model into ops/<n>/:

    model.onnx, model.onnx.txt   the node alone (ONNX's text format to read); its floating inputs
                    the model computed are graph inputs, every other input (initializers, a
                    Constant's output, integer values such as shapes) an initializer with its value
    test_data_set_0/input_<j>.pb the graph inputs: the float64 run's values cast to the dtypes they
                    had (so the node sees the numbers the whole model saw, rounded once)
    test_data_set_0/output_<j>.pb the expected outputs: the float64 values cast to the outputs' dtypes
    references.npz  want_<j>: the node's float64 results (the node widened to float64, run by the
                    reference evaluator on those inputs); eager_<j>: the reference runtime's results
                    at the model's dtypes (onnxruntime, else the reference evaluator), as float64

Where the node cannot run at float64, its `want` is the reference runtime's results, and the op's
entry says "against": the runtime's name: it is judged under the family's tolerance against them.

The protocol is reference.py's: a JSON request on stdin, one JSON line on stdout, {"ops": [per
op: folder, op, node, module, source, shapes, dtypes, outputs, reductions, against, reference,
measure: "tolerances", the errors being the worst element's in tolerances],
"ratio": null, "tolerance": the case's [rtol, atol]}; with "prefix": NODE, the model up to that
node (every value the rest reads as an output, judged against the float64 run) in prefixes/NODE/.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from harness.backend_interface import OnnxProgram, graph_inputs
from harness.case_data import Case
from harness.families.interface import load_builder
from harness.isolate import serve

NARROW = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16}
DTYPE_ATTRIBUTES = {"to", "dtype", "output_dtype"}   # Cast's, the random and EyeLike ops', ...
DEFAULT_TOLERANCE = (1e-3, 1e-7)                     # ONNX's backend runner's
EVALUATOR = "the ONNX reference evaluator"


def floating(value: Any) -> bool:
    return isinstance(value, np.ndarray) and (value.dtype.kind == "f" or value.dtype.name == "bfloat16")


def widened(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of the model computing at float64 wherever it computes at a narrower float."""
    wide = onnx.ModelProto()
    wide.CopyFrom(model)
    _widen_graph(wide.graph)
    return wide


def _widen_graph(graph: onnx.GraphProto) -> None:
    del graph.value_info[:]   # the narrow types the model's shape inference wrote
    for value in [*graph.input, *graph.output]:
        if value.type.tensor_type.elem_type in NARROW:
            value.type.tensor_type.elem_type = TensorProto.DOUBLE
    for index, initializer in enumerate(graph.initializer):
        graph.initializer[index].CopyFrom(_wide_tensor(initializer))
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.TENSOR:
                attribute.t.CopyFrom(_wide_tensor(attribute.t))
            elif attribute.type == onnx.AttributeProto.INT and attribute.name in DTYPE_ATTRIBUTES \
                    and attribute.i in NARROW:
                attribute.i = TensorProto.DOUBLE
            elif attribute.type == onnx.AttributeProto.GRAPH:
                _widen_graph(attribute.g)


def _wide_tensor(tensor: TensorProto) -> TensorProto:
    if tensor.data_type not in NARROW:
        return tensor
    return numpy_helper.from_array(numpy_helper.to_array(tensor).astype(np.float64), tensor.name)


def _wide_value(value: Any) -> Any:
    return value.astype(np.float64) if floating(value) else value


class ModelRuns:
    """The case's model, with every value at its own dtypes and at float64 (None when the widened
    model does not run: then `float64_failure` says why)."""

    def __init__(self, case: Case, family: dict):
        built = load_builder(family)(case)
        if not isinstance(built.program, OnnxProgram):
            raise TypeError(f"its program is a {type(built.program).__name__}, not an ONNX model")
        self.model: onnx.ModelProto = built.program.model
        self.tolerance = list(built.tolerance or DEFAULT_TOLERANCE)
        self.initializers = {i.name: numpy_helper.to_array(i) for i in self.model.graph.initializer}
        self.feeds = dict(zip((i.name for i in graph_inputs(self.model)), built.input_sets[0]))
        self.at_dtype = {**self.initializers, **self.feeds,
                         **_every_value(self.model, self.feeds)}
        self.float64_failure = ""
        try:
            wide_feeds = {name: _wide_value(value) for name, value in self.feeds.items()}
            self.at_float64: dict[str, Any] | None = {**{n: _wide_value(v) for n, v in self.initializers.items()},
                                                      **wide_feeds, **_every_value(widened(self.model), wide_feeds)}
        except Exception as e:  # noqa: BLE001 - an op the evaluator cannot run at float64
            self.at_float64 = None
            self.float64_failure = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
        self.constants = {o for n in self.model.graph.node if n.op_type == "Constant" for o in n.output}

    def reference_value(self, name: str) -> Any:
        """The value the node is fed: the float64 run's, cast to the dtype the model computes it at."""
        value = self.at_dtype[name]
        if self.at_float64 is None or not floating(value):
            return value
        return self.at_float64[name].astype(value.dtype)

    def fed(self, name: str) -> bool:
        """A graph input of a one-node model (else an initializer): a floating value the model computed."""
        return floating(self.at_dtype.get(name)) and name not in self.initializers and name not in self.constants


def node_id(node: onnx.NodeProto, names: dict[str, int]) -> str:
    """The node's name where it is unique in the graph, else its first output's."""
    return node.name if node.name and names[node.name] == 1 else next(o for o in node.output if o)


def op_type(node: onnx.NodeProto) -> str:
    return f"{node.domain}.{node.op_type}" if node.domain not in ("", "ai.onnx") else node.op_type


def module_of(node: onnx.NodeProto) -> str:
    """Where the node came from: the scope torch.onnx's exporter records, else the node's name."""
    props = {p.key: p.value for p in node.metadata_props}
    return props.get("pkg.torch.onnx.name_scopes") or props.get("namespace") or node.name


def source_of(node: onnx.NodeProto) -> str | None:
    """The node's doc_string, or the last line of the stack trace the exporter recorded; None."""
    props = {p.key: p.value for p in node.metadata_props}
    trace = [line.strip() for line in props.get("pkg.torch.onnx.stack_trace", "").splitlines() if line.strip()]
    return node.doc_string.strip() or (trace[-1] if trace else None)


def is_candidate(node: onnx.NodeProto, runs: ModelRuns) -> bool:
    if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute):
        return False
    inputs = [runs.at_dtype.get(name) for name in node.input if name]
    if not inputs or not all(isinstance(v, np.ndarray) for v in inputs):
        return False
    return any(floating(runs.at_dtype.get(name)) for name in node.output if name)


def one_node_model(runs: ModelRuns, nodes: list[onnx.NodeProto], fed: list[str], constant: list[str],
                   outputs: list[str]) -> tuple[onnx.ModelProto, list]:
    """These nodes as a model: `fed` graph inputs (with their reference values), `constant` initializers."""
    values = {name: runs.reference_value(name) for name in fed}
    graph = helper.make_graph(nodes, "isolated", [_value_info(name, values[name]) for name in fed],
                              [_value_info(name, runs.at_dtype[name]) for name in outputs],
                              initializer=[numpy_helper.from_array(np.asarray(runs.at_dtype[n]), n) for n in constant])
    model = helper.make_model(graph, opset_imports=runs.model.opset_import, ir_version=runs.model.ir_version,
                              functions=runs.model.functions)
    return model, [values[name] for name in fed]


def _value_info(name: str, value: np.ndarray) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(value.dtype), list(value.shape))


def reference_runtime(model: onnx.ModelProto, inputs: list) -> tuple[list, str]:
    """(the model's outputs at its dtypes, the runtime's name): onnxruntime with every optimisation
    off, as the families' goldens are, else the reference evaluator."""
    feeds = dict(zip((i.name for i in model.graph.input), inputs))
    try:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        options.log_severity_level = 3
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        return session.run(None, feeds), "onnxruntime"
    except Exception:  # noqa: BLE001 - not installed, or no kernel for the node: the evaluator runs anything
        return _outputs(model, feeds), EVALUATOR


def _every_value(model: onnx.ModelProto, feeds: dict) -> dict[str, Any]:
    """Every value the evaluator computes, by name: the inputs', the nodes' and the outputs'."""
    values = ReferenceEvaluator(model).run(None, feeds, intermediate=True)
    assert isinstance(values, dict), "intermediate=True gives them by name"
    return values


def _outputs(model: onnx.ModelProto, feeds: dict) -> list:
    values = ReferenceEvaluator(model).run(None, feeds)
    assert isinstance(values, list), "the outputs, in order"
    return values


def float64_outputs(model: onnx.ModelProto, inputs: list) -> list | None:
    """The model widened to float64 on its inputs widened; None when the evaluator cannot run it so."""
    try:
        feeds = {i.name: _wide_value(value) for i, value in zip(model.graph.input, inputs)}
        return _outputs(widened(model), feeds)
    except Exception:  # noqa: BLE001 - an op whose float64 form the evaluator lacks
        return None


def write_case(folder: Path, model: onnx.ModelProto, inputs: list, want: list, eager: list) -> None:
    """The folder's files (the module docstring says which): a one-node model's, or a prefix's."""
    folder.mkdir(parents=True, exist_ok=True)
    onnx.save(model, folder / "model.onnx")
    (folder / "model.onnx.txt").write_text(onnx.printer.to_text(model), encoding="utf-8")
    data = folder / "test_data_set_0"
    data.mkdir(exist_ok=True)
    for j, value in enumerate(inputs):
        (data / f"input_{j}.pb").write_bytes(numpy_helper.from_array(np.asarray(value)).SerializeToString())
    for j, (w, e) in enumerate(zip(want, eager)):
        expected = np.asarray(w).astype(np.asarray(e).dtype)
        (data / f"output_{j}.pb").write_bytes(numpy_helper.from_array(expected).SerializeToString())
    arrays = {**{f"want_{j}": np.asarray(w, np.float64) for j, w in enumerate(want)},
              **{f"eager_{j}": np.asarray(e).astype(np.float64) for j, e in enumerate(eager)}}
    # the names are want_J and eager_J, never savez's own allow_pickle, which mypy cannot tell
    np.savez(folder / "references.npz", **arrays)  # type: ignore[arg-type]


def write_node(node: onnx.NodeProto, runs: ModelRuns, folder: Path, node_name: str) -> dict | None:
    """The node's folder and what the command prints of it; None when no runtime runs the node
    alone (a function's body the model lacks), or it gives other results when run again (a random op)."""
    read = list(dict.fromkeys(name for name in node.input if name))
    fed = [name for name in read if runs.fed(name)]
    outputs = [name for name in node.output if name and floating(runs.at_dtype.get(name))]
    model, inputs = one_node_model(runs, [node], fed, [n for n in read if n not in fed], outputs)
    try:
        eager, reference = reference_runtime(model, inputs)
        again, _ = reference_runtime(model, inputs)
    except Exception:  # noqa: BLE001 - the evaluator's error: a node that runs only inside its model
        return None
    if not all(np.array_equal(a, b, equal_nan=True) for a, b in zip(eager, again)):
        return None
    want = float64_outputs(model, inputs)
    write_case(folder, model, inputs, want if want is not None else eager, eager)
    values = [runs.at_dtype[name] for name in read]
    return {"folder": str(folder), "op": op_type(node), "node": node_name, "module": module_of(node),
            "source": source_of(node), "shapes": [list(np.shape(v)) for v in values],
            "dtypes": [np.asarray(v).dtype.name for v in values], "outputs": outputs, "reductions": {},
            "against": "float64" if want is not None else reference, "reference": reference, "measure": "tolerances"}


def write_ops(case: Case, family: dict, out: Path) -> dict:
    """The reply: every candidate node written, and the family's tolerance."""
    runs = ModelRuns(case, family)
    graph_nodes = list(runs.model.graph.node)
    names: dict[str, int] = {}
    for node in graph_nodes:
        names[node.name] = names.get(node.name, 0) + 1
    ops: list[dict] = []
    for node in graph_nodes:
        if is_candidate(node, runs):
            written = write_node(node, runs, out / "ops" / str(len(ops)), node_id(node, names))
            if written is not None:
                ops.append(written)
    return {"ops": ops, "ratio": None, "tolerance": runs.tolerance}


def write_prefix(case: Case, family: dict, boundary: str, out: Path) -> dict:
    """The model up to the boundary node, fed its own inputs, returning each floating value a later
    node or the model's output reads, judged against the float64 run (eager: the evaluator's at dtype)."""
    runs = ModelRuns(case, family)
    if runs.at_float64 is None:
        raise ValueError(f"the model does not run at float64 ({runs.float64_failure}): no prefix to judge")
    nodes = list(runs.model.graph.node)
    names: dict[str, int] = {}
    for node in nodes:
        names[node.name] = names.get(node.name, 0) + 1
    end = next(i for i, node in enumerate(nodes) if node_id(node, names) == boundary) + 1
    made = [name for node in nodes[:end] for name in node.output if floating(runs.at_dtype.get(name))]
    later = {name for node in nodes[end:] for name in node.input} | {o.name for o in runs.model.graph.output}
    crossing = [name for name in made if name in later]
    fed = list(runs.feeds)
    model, _ = one_node_model(runs, nodes[:end], [], list(runs.initializers), crossing)
    del model.graph.input[:]
    model.graph.input.extend(v for v in runs.model.graph.input if v.name in fed)
    folder = out / "prefixes" / hashlib.sha1(boundary.encode()).hexdigest()[:12]
    write_case(folder, model, [runs.feeds[n] for n in fed], [runs.at_float64[n] for n in crossing],
               [runs.at_dtype[n] for n in crossing])
    return {"folder": str(folder), "node": boundary, "outputs": crossing, "reductions": {}}


def answer(request: dict) -> dict:
    case, out = Case.from_json(request["case"]), Path(request["out"])
    if request.get("prefix"):
        return write_prefix(case, request["family"], request["prefix"], out)
    return write_ops(case, request["family"], out)


if __name__ == "__main__":
    serve(answer)
