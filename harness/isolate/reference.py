"""The reference side of `python -m harness isolate` (imports torch; run as `python -m
harness.isolate.reference` by harness.isolate.engine, never imported by the controller).

It builds the case with its family's builder, exports its program as the reducer does
(harness.reduce.torch_graph: torch.export, strict only when non-strict cannot trace it), and runs
the exported graph twice through an FX interpreter that keeps every intermediate value: once at
the case's dtype, once at float64 (inputs and weights upcast, every floating dtype the graph names
widened), on the first input set. Then, per candidate op (a call_function node of an aten op with
at least one tensor input and floating tensor results, not a random one: run twice in eager,
its results differ), it writes a one-op program into ops/<n>/:

    model.py        the op alone, an nn.Module `Model` (harness.graph_source), its tensor arguments inputs
    inputs.pt       the float64 reference values of its arguments, cast to the dtypes they had at the
                    case's dtype (so the op sees the numbers the whole program saw, rounded once)
    references.pt   {"want": its float64 results, "eager": eager's results at the case's dtype on inputs.pt,
                    "names": the results' names (the node's, `node.i` for a tuple's i-th)}

As a program: a JSON request on stdin, {"case": Case.to_json(), "family": Family.worker_request,
"out": FOLDER}; on stdout one JSON line: {"ops": [per op: folder, op, node, module, source, shapes,
dtypes, outputs, reductions], "ratio": the family's [multiplier, floor] or null, "tolerance": the
case's [rtol, atol] or null} or {"error": one line} when the program does not build or export.
With "prefix": NODE in the request, it writes the program up to that node instead
(harness.isolate.prefix_program) into prefixes/NODE/ and replies with that folder's entry.
"""
from __future__ import annotations

import operator
from pathlib import Path
from typing import Any, cast

import torch
from torch.export.graph_signature import InputKind

from harness import graph_source
from harness.backend_interface import Program, export_program
from harness.case_data import Case
from harness.families.interface import load_builder
from harness.isolate import serve

EXPORTER_CHECKS = {"_assert_scalar", "_assert_tensor_metadata", "_assert_async", "sym_constrain_range",
                   "sym_constrain_range_for_size"}
SHAPE_QUERIES = {"sym_size", "sym_numel", "sym_stride", "sym_storage_offset"}
NARROW_FLOATS = {torch.float32, torch.float16, torch.bfloat16}
TORCH_SOURCES = str(Path(torch.__file__).parent)
REDUCTIONS = {"sum", "mean", "var", "std", "prod", "var_mean", "std_mean", "logsumexp", "norm", "linalg_vector_norm"}
MATRIX_PRODUCTS = {"mm", "bmm", "addmm", "matmul", "linear", "baddbmm", "addmv", "mv", "dot", "einsum"}


class ExportedRuns:
    """The case's program exported, with every node's value at the case's dtype and at float64."""

    def __init__(self, case: Case, family: dict):
        built = load_builder(family)(case)
        rule = getattr(built.golden, "rule", None)   # RatioGolden's (multiplier, floor, relative)
        self.rule = {"ratio": list(rule) if rule else None,
                     "tolerance": list(built.tolerance) if built.tolerance else None}
        program = built.program
        if not isinstance(program, Program):
            raise TypeError(f"its program is an {type(program).__name__}, not a PyTorch program")
        self.step = program.train_step is not None
        try:
            exported = export_program(program)
        except Exception:  # noqa: BLE001 - a data-dependent program: TorchDynamo traces what non-strict cannot
            exported = export_program(program, strict=True)
        self.graph_module = exported.graph_module
        state = {**exported.state_dict, **exported.constants}
        user = iter(program.example_inputs)
        arguments = [next(user) if spec.kind == InputKind.USER_INPUT else state[spec.target]
                     for spec in exported.graph_signature.input_specs]
        # each placeholder's kind and value at the case's dtype (a prefix takes its inputs and weights)
        self.placeholders = {node: (spec.kind, value) for node, spec, value in
                             zip(self.graph_module.graph.find_nodes(op="placeholder"),
                                 exported.graph_signature.input_specs, arguments)}
        self.at_dtype = recorded_values(self.graph_module, arguments, widen=False)
        self.at_float64 = recorded_values(self.graph_module, [_wide(a) for a in arguments], widen=True)


def recorded_values(graph_module: torch.fx.GraphModule, arguments: list, widen: bool) -> dict:
    """Every node's value (tensors cloned: a later in-place op must not change them). `widen`:
    every floating dtype an op names becomes float64 and every floating result is upcast, so that
    the whole graph runs at float64 even where it fixes a dtype (a mask's `to(float32)`)."""
    values = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, node):
            if widen and node.op == "call_function":
                args, kwargs = self.fetch_args_kwargs_from_env(node)
                result = _wide(node.target(*_wide_dtypes(args), **_wide_dtypes(kwargs)))
            else:
                result = super().run_node(node)
            values[node] = _cloned(result)
            return result

    with torch.no_grad():
        Recorder(graph_module).run(*arguments)
    return values


def _wide(value: Any) -> Any:
    if isinstance(value, torch.Tensor) and value.dtype in NARROW_FLOATS:
        return value.to(torch.float64)
    if isinstance(value, (list, tuple)):
        return type(value)(_wide(v) for v in value)
    return value


def _wide_dtypes(value: Any) -> Any:
    if isinstance(value, torch.dtype) and value in NARROW_FLOATS:
        return torch.float64
    if isinstance(value, (list, tuple)):
        return type(value)(_wide_dtypes(v) for v in value)
    if isinstance(value, dict):
        return {k: _wide_dtypes(v) for k, v in value.items()}
    return value


def _cloned(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, (list, tuple)):
        return type(value)(_cloned(v) for v in value)
    return value


def _floating(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.is_floating_point()


def result_positions(node: torch.fx.Node, value: Any) -> list[int | None] | None:
    """Which results of the node are compared: None for a lone floating tensor, the indices the
    graph reads (getitem) of a tuple's floating tensors; None when it has none (not a candidate)."""
    if _floating(value):
        return [None]
    if isinstance(value, (list, tuple)):
        read = sorted({cast(int, u.args[1]) for u in node.users if u.target is operator.getitem})
        positions: list[int | None] = [i for i in read if _floating(value[i])]
        return positions or None
    return None


def op_name(node: torch.fx.Node) -> str:
    return str(node.target).removeprefix("torch.ops.")   # "aten.gelu.default"


def is_candidate(node: torch.fx.Node, runs: ExportedRuns) -> bool:
    if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
        return False
    if node.target._opname in EXPORTER_CHECKS | SHAPE_QUERIES:
        return False
    has_tensor_input = any(isinstance(runs.at_dtype.get(a), torch.Tensor) for a in node.all_input_nodes)
    return has_tensor_input and result_positions(node, runs.at_dtype[node]) is not None


def one_op_graph(node: torch.fx.Node, runs: ExportedRuns) -> tuple[torch.fx.Graph, list, list[str]]:
    """(the graph of the op alone, its inputs: the float64 references cast to their dtype, its outputs' names)."""
    graph, env, inputs = torch.fx.Graph(), {}, []
    for argument in node.all_input_nodes:
        at_dtype = runs.at_dtype[argument]
        if isinstance(at_dtype, torch.Tensor):
            env[argument] = graph.placeholder(argument.name)
            inputs.append((argument.name, runs.at_float64[argument].to(at_dtype.dtype)))
        else:   # a size or scalar the program computed: a literal
            env[argument] = graph_source.literal(at_dtype)
    copied = graph.node_copy(node, lambda a: env[a])
    positions = result_positions(node, runs.at_dtype[node])
    assert positions is not None, "a candidate node has results to compare"
    results = [copied if p is None else graph.call_function(operator.getitem, (copied, p)) for p in positions]
    graph.output(tuple(results))
    names = [node.name if p is None else f"{node.name}.{p}" for p in positions]
    return graph, inputs, names


def module_stack(node: torch.fx.Node) -> list[tuple[str, str]]:
    """The nn.Modules the op sits in, outermost first: (path, class name). A training step's
    backward op sits in the modules of the forward code it differentiates
    (harness.training.joint.forward_provenance)."""
    return [(path, str(kind).rpartition(".")[2]) for path, kind in (node.meta.get("nn_module_stack") or {}).values()]


def is_backward(node: torch.fx.Node) -> bool:
    return node.meta.get("partitioner_tag") == "is_backward"


def module_paths(stacks: list[list[tuple[str, str]]], backward: list[bool], step: bool) -> list[str]:
    """Each op's innermost module as `path (Class)`, the path from the user's model: the module
    every op sits in below the program's own (a family's wrapper, ModelCase's `inner`; in a training
    step, below its loss and that wrapper) is the root. A backward op's ends in ", backward"."""
    level = 2 if step else 1
    nested = [stack for stack in stacks if len(stack) > 1]   # not the program's own ops (a step's loss)
    shared = {stack[level] for stack in nested if len(stack) > level}
    root = next(iter(shared))[0] if len(shared) == 1 and all(len(s) > level for s in nested) else ""
    paths = []
    for stack, back in zip(stacks, backward):
        path, kind = stack[-1] if stack else ("", "")
        relative = path[len(root):].lstrip(".") if root and path.startswith(root) else path
        where = f"{relative} ({kind})" if relative else kind
        paths.append(f"{where}, backward" if back and where else where)
    return paths


def source_line(node: torch.fx.Node) -> str:
    """`"file", line N, in function: code` of the innermost frame the export recorded for the op
    outside torch itself (the model's line that calls F.linear, not F.linear's), or ""."""
    lines = (node.meta.get("stack_trace") or "").rstrip().splitlines()
    frames = [i for i, line in enumerate(lines) if line.strip().startswith("File ")]
    outside = [i for i in frames if TORCH_SOURCES not in lines[i]]
    if not frames:
        return ""
    last = (outside or frames)[-1]
    where = lines[last].strip().removeprefix("File ")
    code = lines[last + 1].strip() if last + 1 < len(lines) else ""
    return f"{where}: {code}" if code else where


def reduction_length(node: torch.fx.Node, inputs: list, outputs: list) -> int:
    """Terms summed into each result element, for the default comparison's tolerance: a matrix
    product's inner dimension, a convolution's window, a reduction's input per output element; 1
    for any other op (a normalisation's own sums are short next to its error)."""
    target: Any = node.target   # an OpOverload: candidates are aten ops
    name = target._opname
    tensors = [t for _, t in inputs]
    if name in MATRIX_PRODUCTS and tensors[0].dim():
        return max(1, tensors[-2 if len(tensors) > 1 else 0].shape[-1])
    if name.startswith("conv") and len(tensors) > 1 and tensors[1].dim() > 1:
        return max(1, tensors[1][0].numel())
    if name in REDUCTIONS and outputs[0].numel():
        return max(1, tensors[0].numel() // outputs[0].numel())
    return 1


def write_op(node: torch.fx.Node, runs: ExportedRuns, folder: Path) -> dict | None:
    """The op's folder (above) and what the command prints of it; None when eager cannot run it
    alone, or gives other results when run again (a random op)."""
    graph, inputs, names = one_op_graph(node, runs)
    module = torch.fx.GraphModule(torch.nn.Module(), graph)
    try:
        with torch.no_grad():   # twice: a random op (dropout in training) has no reference to compare with
            eager, again = ([_cloned(v) for v in module(*[t.clone() for _, t in inputs])] for _ in range(2))
    except Exception:  # noqa: BLE001 - an op that runs only inside its program (an in-place one, say)
        return None
    if not all(torch.equal(a, b) or bool(torch.isnan(a).any()) for a, b in zip(eager, again)):
        return None
    value = runs.at_float64[node]
    positions = result_positions(node, runs.at_dtype[node])
    assert positions is not None, "a candidate node has results to compare"
    want = [value if p is None else value[p] for p in positions]
    folder.mkdir(parents=True, exist_ok=True)
    graph_source.write_model(folder, graph, {}, inputs, f"{op_name(node)} ({node.name}) alone, as in the program",
                             written_by="python -m harness isolate")
    torch.save([t for _, t in inputs], folder / "inputs.pt")
    torch.save({"want": want, "eager": eager, "names": names}, folder / "references.pt")
    return {"folder": str(folder), "op": op_name(node), "node": node.name, "stack": module_stack(node),
            "backward": is_backward(node), "source": source_line(node), "shapes": [list(t.shape) for _, t in inputs],
            "dtypes": [str(t.dtype).removeprefix("torch.") for _, t in inputs], "outputs": names,
            "reductions": {n: reduction_length(node, inputs, eager) for n in names}}


def write_ops(case: Case, family: dict, out: Path) -> dict:
    """The reply: every op written, and the rule the case's family judges by."""
    runs = ExportedRuns(case, family)
    ops: list[dict] = []
    for node in runs.graph_module.graph.nodes:
        if is_candidate(node, runs):
            written = write_op(node, runs, out / "ops" / str(len(ops)))
            if written is not None:
                ops.append(written)
    stacks, backward = [op.pop("stack") for op in ops], [op.pop("backward") for op in ops]
    for op, path in zip(ops, module_paths(stacks, backward, runs.step)):
        op["module"] = path
    return {"ops": ops, **runs.rule}


def answer(request: dict) -> dict:
    case, out = Case.from_json(request["case"]), Path(request["out"])
    if request.get("prefix"):
        from harness.isolate.prefix_program import write_prefix

        boundary = request["prefix"]
        return write_prefix(ExportedRuns(case, request["family"]), boundary, out / "prefixes" / boundary)
    return write_ops(case, request["family"], out)


if __name__ == "__main__":
    serve(answer)
