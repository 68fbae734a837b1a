"""A prefix of a case's exported program, for the cut of `python -m harness isolate` (imports
torch; written by harness.isolate.reference when asked for one): every node up to a boundary op,
in the graph's order, fed the program's own inputs, returning each floating value the rest of the
program reads (or the program returns). It is written as an op's folder is, so the isolating
family runs it as one more op: model.py (its weights as constants), inputs.pt (the program's
inputs) and references.pt (the boundary values at float64, and at the case's dtype: eager's).
"""
from __future__ import annotations

import operator
from pathlib import Path

import torch
from torch.export.graph_signature import InputKind

from harness import graph_source


def prefix_nodes(graph: torch.fx.Graph, boundary: str) -> list[torch.fx.Node]:
    """The nodes up to the boundary node, with the getitems that take the kept ops' results."""
    kept = []
    for node in graph.nodes:
        if node.op == "output":
            break
        kept.append(node)
        if node.name == boundary:
            break
    names = {n.name for n in kept}
    extra = [u for n in kept for u in n.users if u.target is operator.getitem and u.name not in names]
    return kept + extra


def write_prefix(runs, boundary: str, folder: Path) -> dict:
    """The prefix's folder; what the command reports of it. `runs`: harness.isolate.reference.ExportedRuns."""
    nodes = prefix_nodes(runs.graph_module.graph, boundary)
    kept = set(nodes)
    graph, env, inputs, constants = torch.fx.Graph(), {}, [], {}
    for node in nodes:
        if node.op == "placeholder":
            kind, value = runs.placeholders[node]
            if kind == InputKind.USER_INPUT:
                env[node] = graph.placeholder(node.name)
                inputs.append((node.name, value))
            else:
                constants[node.name] = value
                env[node] = graph.get_attr(node.name)
        elif node.op == "call_function":
            env[node] = graph.node_copy(node, lambda a: env[a])
    program_outputs = set(runs.graph_module.graph.output_node().all_input_nodes)
    crossing = [n for n in nodes if n.op == "call_function" and _floating(runs.at_dtype.get(n))
                and (n in program_outputs or any(u not in kept for u in n.users))]
    graph.output(tuple(env[n] for n in crossing))
    folder.mkdir(parents=True, exist_ok=True)
    graph_source.write_model(folder, graph, constants, inputs, f"the program up to {boundary}, as exported",
                             written_by="python -m harness isolate")
    torch.save([t for _, t in inputs], folder / "inputs.pt")
    names = [n.name for n in crossing]
    torch.save({"want": [runs.at_float64[n] for n in crossing], "eager": [runs.at_dtype[n] for n in crossing],
                "names": names}, folder / "references.pt")
    return {"folder": str(folder), "node": boundary, "outputs": names, "reductions": {}}


def _floating(value) -> bool:
    return isinstance(value, torch.Tensor) and value.is_floating_point()
