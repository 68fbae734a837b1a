"""A PyTorch program as a graph to cut (the reducer's side: imports torch).

The program is exported once (torch.export, its dynamic shapes kept), and run once on its example
inputs through the FX interpreter, which keeps every intermediate value. A candidate is a set of
kept units (an op, or a getitem taking one result of a multi-result op: cutting it drops that
result); everything else it needs comes from outside:

* a value of a unit that was cut becomes a new input of the same shape and dtype, fed the value
  the whole program computed there (so a mismatch sees the numbers it saw in the program);
  a Python number (a size, an `item()`) becomes a literal;
* parameters, buffers and lifted constants stay constants of the module;
* the candidates are judged by the program's own rule: a golden with a ratio rule (a model's,
  RatioGolden) passes it on, so a cut program is judged by eager's own error on what is left;
* the outputs are the kept units whose results no kept unit reads, plus the program's own
  outputs that are kept (they keep their names).

Checks the exporter inserts (`_assert_scalar`, `_assert_tensor_metadata`, ...) are dropped up
front: they are not the program's ops, and the backends' own export puts them back.
"""
from __future__ import annotations

import operator
from pathlib import Path
from typing import Any

import torch
from torch.export.graph_signature import InputKind, OutputKind

from harness import graph_source
from harness.backend_interface import Program, export_program
from harness.families.interface import Built
from harness.program_kinds import TORCH
from harness.reduce import NotReducible, candidate_family

EXPORTER_CHECKS = {"_assert_scalar", "_assert_tensor_metadata", "_assert_async", "sym_constrain_range",
                   "sym_constrain_range_for_size"}
SHAPE_QUERIES = {"sym_size", "sym_numel", "sym_stride", "sym_storage_offset"}   # not ops of the program


def program_graph(built: Built, case_params: dict) -> "TorchGraph":
    """The seam's default for PyTorch programs (Family.graph): the exported graph of the built program."""
    return TorchGraph(built, case_params)


class TorchGraph:
    program_file = "model.py"   # what a report links to

    def __init__(self, built: Built, case_params: dict):
        self.family = candidate_family(TORCH)   # the candidates'
        program = built.program
        assert isinstance(program, Program), "the torch reducer is chosen for a PyTorch program"
        self.params = case_params
        self.tolerance = built.tolerance
        rule = getattr(built.golden, "rule", None)   # RatioGolden's (multiplier, floor): a model's rule
        self.ratio = list(rule) if rule else None
        try:
            exported = export_program(program)
        except Exception:  # noqa: BLE001 - a data-dependent program: TorchDynamo traces what non-strict cannot
            exported = export_program(program, strict=True)
        self.graph = exported.graph_module.graph
        self.dynamic = _dynamic_dims(program.dynamic_shapes)
        self.constants: dict[torch.fx.Node, torch.Tensor] = {}
        self.user_inputs: list[torch.fx.Node] = []
        arguments = []
        state = {**exported.state_dict, **exported.constants}
        for node, spec in zip(self.graph.find_nodes(op="placeholder"), exported.graph_signature.input_specs):
            if spec.kind == InputKind.USER_INPUT:
                self.user_inputs.append(node)
                arguments.append(program.example_inputs[len(self.user_inputs) - 1])
            elif isinstance(state.get(spec.target), torch.Tensor):
                self.constants[node] = state[spec.target]
                arguments.append(state[spec.target])
            else:
                raise NotReducible(f"its exported graph takes {spec.kind.name.lower()} {spec.target!r}, "
                                   "which is not a tensor")
        self.values = _intermediate_values(exported.graph_module, arguments)
        results = self.graph.output_node().args[0]
        kinds = [spec.kind for spec in exported.graph_signature.output_specs]
        names = list(program.output_names) or [f"output{i}" for i in range(kinds.count(OutputKind.USER_OUTPUT))]
        user_results = [r for r, k in zip(results, kinds) if k == OutputKind.USER_OUTPUT]
        self.output_names = {r: n for r, n in zip(user_results, names) if isinstance(r, torch.fx.Node)}
        self.units = self._units()

    # ---- the units and what they are

    def _units(self) -> list[torch.fx.Node]:
        units = []
        for node in self.graph.nodes:
            if node.op == "get_attr":
                raise NotReducible(f"its graph holds a subgraph ({node.target}: a higher-order op), which a "
                                   "candidate cannot be written with")
            if node.op == "call_function" and _name(node) not in EXPORTER_CHECKS:
                units.append(node)   # a getitem too: cutting it drops that result of a multi-result op
        return units

    def op_names(self, kept: frozenset[int]) -> list[str]:
        """The names of the kept units that are ops of the program ("aten.mul.Tensor")."""
        return [_op_name(self.units[i]) for i in sorted(kept) if _is_op(self.units[i])]

    def describe(self, kept: frozenset[int]) -> str:
        ops = self.op_names(kept)
        return f"{len(ops)} op{'s' if len(ops) != 1 else ''}"

    # ---- a candidate

    def write(self, kept: frozenset[int], folder: Path) -> dict | None:
        """Write the candidate's module, inputs and constants into `folder`; return its params in
        the candidates' family, or None when it has no tensor output (nothing would be compiled)."""
        graph, inputs, constants, outputs = self._candidate(kept)
        if not outputs:
            return None
        folder.mkdir(parents=True, exist_ok=True)
        graph_source.write_model(folder, graph, constants, inputs, self._header(kept))
        tensors = [value for _, value in inputs]
        torch.save(tensors, folder / "inputs.pt")
        user = [node.name for node in self.user_inputs]
        dynamic = {str(i): self.dynamic[user.index(name)] for i, (name, _) in enumerate(inputs)
                   if name in user and self.dynamic.get(user.index(name))}
        return {"module": str(folder / "model.py"), "inputs": str(folder / "inputs.pt"),
                "dtype": self.params["dtype"], "output_names": outputs, "dynamic": dynamic,
                "tolerance": dict(zip(("rtol", "atol"), self.tolerance)) if self.tolerance else None,
                "ratio": self.ratio}   # the candidates are judged by the original family's rule

    def _header(self, kept: frozenset[int]) -> str:
        ops = self.op_names(kept)
        return f"{len(ops)} of the {len(self.op_names(frozenset(range(len(self.units)))))} ops: {', '.join(ops)}"

    def _candidate(self, kept: frozenset[int]):
        """(graph, [(input name, value)], {attribute: tensor}, [output names]) of the kept units."""
        kept_nodes = {self.units[i] for i in kept}   # a getitem of a cut op goes too: its value is an input
        kept_nodes -= {n for n in kept_nodes if n.target is operator.getitem and n.args[0] not in kept_nodes}
        kept_nodes = self._without_dead_numbers(kept_nodes)
        graph, env = torch.fx.Graph(), {}
        inputs, constants = [], {}
        for node in self.user_inputs:   # the program's own inputs first, in their order
            if any(u in kept_nodes for u in node.users):
                env[node] = graph.placeholder(node.name)
                inputs.append((node.name, self.values[node]))
        cut = [n for n in self.graph.nodes if n not in kept_nodes and n not in env
               and any(u in kept_nodes for u in n.users)]
        for node in cut:
            value = self.values[node]
            if node in self.constants:
                constants[node.name] = value
                env[node] = graph.get_attr(node.name)
            elif isinstance(value, torch.Tensor):
                env[node] = graph.placeholder(node.name)
                inputs.append((node.name, value))
            else:   # a size or a scalar the program computed: a literal now
                env[node] = graph_source.literal(value)
        for node in self.graph.nodes:
            if node in kept_nodes:
                env[node] = graph.node_copy(node, lambda arg: env[arg])
        outputs = self._outputs(kept_nodes)
        graph.output(tuple(env[node] for node in outputs))
        names = [self.output_names.get(node, node.name) for node in outputs]
        return graph, inputs, constants, names

    def _without_dead_numbers(self, nodes: set) -> set:
        """Drop kept nodes whose only result is a number nobody kept reads (a size, a comparison)."""
        changed = True
        while changed:
            dead = {n for n in nodes if not isinstance(self.values.get(n), torch.Tensor)
                    and not any(u in nodes for u in n.users) and not _returns_tensors(self.values.get(n))}
            nodes, changed = nodes - dead, bool(dead)
        return nodes

    def _outputs(self, nodes: set) -> list[torch.fx.Node]:
        """The program's own outputs that are kept, in their order, then the tensor results no kept node reads."""
        own = [n for n in self.output_names if n in nodes]
        return own + [n for n in self.graph.nodes if n in nodes and n not in self.output_names
                      and isinstance(self.values.get(n), torch.Tensor) and not any(u in nodes for u in n.users)]


def _intermediate_values(graph_module: torch.fx.GraphModule, arguments: list) -> dict:
    """Every node's value on the example inputs (tensors cloned: a later in-place op must not change them)."""
    values = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, node):
            result = super().run_node(node)
            values[node] = result.clone() if isinstance(result, torch.Tensor) else result
            return result

    with torch.no_grad():
        Recorder(graph_module).run(*arguments)
    return values


def _dynamic_dims(dynamic_shapes: Any) -> dict[int, list[int]]:
    """Input position -> its dynamic dims, from a Program's dynamic_shapes (one {dim: Dim} or None per input)."""
    if not dynamic_shapes:
        return {}
    return {i: sorted(int(d) for d in dims) for i, dims in enumerate(dynamic_shapes) if dims}


def _returns_tensors(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in value)


def _name(node: torch.fx.Node) -> str:
    """An op's name without its namespace and overload: "mul" of aten.mul.Tensor."""
    target = node.target
    return target._opname if isinstance(target, torch._ops.OpOverload) else getattr(target, "__name__", "")


def _is_op(node: torch.fx.Node) -> bool:
    return isinstance(node.target, torch._ops.OpOverload) and _name(node) not in SHAPE_QUERIES


def _op_name(node: torch.fx.Node) -> str:
    return str(node.target).removeprefix("torch.ops.")   # "aten.convolution.default"
