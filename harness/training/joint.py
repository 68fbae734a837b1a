"""A training step's joint graph: one exported program whose outputs are the loss, then the gradient
of each trained parameter, then (with SGD) the updated parameters (worker side).

torch.export captures the loss; the joint decomposition of torch.export.experimental's
_export_forward_backward traces its backward into the same graph (core ATen, with the backward ops
PyTorch keeps whole: `convolution_backward`, the attention and weight-norm backward). SGD's updates
are appended to its graph as further outputs. Whatever the export cannot do is a JointGraphError,
one line with the reason (the export phase's failure).
"""
from __future__ import annotations

import contextlib
import copy
import warnings
from typing import Any, Iterator

import torch
from torch._decomp import core_aten_decompositions
from torch.export.exported_program import _decompose_exported_program
from torch.export.graph_signature import (
    ExportGraphSignature,
    InputKind,
    InputSpec,
    OutputKind,
    OutputSpec,
    TensorArgument,
)
from torch.utils import _pytree as pytree

from harness.backend_interface import signature_shapes

MUTATIONS = (OutputKind.BUFFER_MUTATION, OutputKind.USER_INPUT_MUTATION, OutputKind.PARAMETER_MUTATION)


class JointGraphError(RuntimeError):
    """The step's joint graph cannot be exported: the reason, in one line."""


# Ops the joint graph keeps whole, forward and backward alike. PyTorch 2.13's decomposition of the
# CPU flash attention returns the attention weights where the fused op returns its logsumexp, which
# the fused backward (kept whole) reads: _export_forward_backward's attention gradients are wrong
# (docs/reference/case-params.md#training-steps). Kept whole, the pair is autograd's own.
KEPT_WHOLE = (torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default,)


def joint_graph(step: Any, example_inputs: tuple, dynamic_shapes: Any, strict: bool) -> Any:
    """The ExportedProgram of `step` (a harness.training.step.TrainStep), its outputs in the step's
    order (harness.training.params), checked against the step run by autograd."""
    shapes = signature_shapes(step.loss.forward, dynamic_shapes)
    exported = torch.export.export(step.loss, tuple(example_inputs), strict=strict, dynamic_shapes=shapes)
    table = core_aten_decompositions()
    for op in KEPT_WHOLE:
        table.pop(op, None)
    try:
        with warnings.catch_warnings(), forward_provenance():
            warnings.simplefilter("ignore", FutureWarning)   # a pytree deprecation inside torch, once per step
            joint = _decompose_exported_program(without_aliases(exported), cia_to_decomp={}, python_decomp_table=table,
                                                joint_loss_index=0, decompose_custom_triton_ops=False)
    except Exception as e:  # noqa: BLE001 - PyTorch's joint tracing raises assertion and runtime errors alike
        raise JointGraphError(f"the joint forward-and-backward graph does not export: {first_line(e)}") from None
    joint = in_step_order(joint, step)
    names = [step.prefix + name for name in step.trained_names()]
    program = returning_all(with_updates(joint, step, names) if step.optimizer else joint)
    check_against_autograd(program, step, example_inputs)
    return program


@contextlib.contextmanager
def forward_provenance() -> Iterator[None]:
    """Every node of the joint graph traced inside keeps the `nn_module_stack` and `stack_trace` of
    the forward code it comes from, backward nodes those of the forward op they differentiate (with
    `partitioner_tag: is_backward`): what isolate names a culprit by.

    AOTAutograd traces the joint graph with that metadata (its backward nodes get the forward's as
    `fwd_nn_module_stack`), then aot_export_module traces the result again as plain code, which
    drops it. Here the first trace's nodes take their forward stack as their own, and the second
    trace runs the first through an FX interpreter with node metadata preserved, which copies it.
    Without PyTorch's hook (another version), the graph is the same, without module paths."""
    capture: Any = None
    with contextlib.suppress(ImportError):
        from torch._functorch._aot_autograd import graph_capture as capture
    copy_to_backward = getattr(capture, "copy_fwd_metadata_to_bw_nodes", None)
    if copy_to_backward is None:
        yield
        return

    def copied(graph_module: torch.fx.GraphModule) -> None:
        copy_to_backward(graph_module)
        for node in graph_module.graph.nodes:
            if node.meta.get("fwd_nn_module_stack") and not node.meta.get("nn_module_stack"):
                node.meta["nn_module_stack"] = node.meta["fwd_nn_module_stack"]
        graph_module.forward = torch.fx.Interpreter(graph_module).run

    capture.copy_fwd_metadata_to_bw_nodes = copied
    try:
        with torch.fx.traceback.preserve_node_meta():
            yield
    finally:
        capture.copy_fwd_metadata_to_bw_nodes = copy_to_backward


def without_aliases(exported: Any) -> Any:
    """The forward program with each parameter its graph never reads made a buffer: a tied weight's
    other names (BART's shared embedding, a language model's head), which the joint graph would
    find without a gradient (pytorch issue 101192). The name the graph reads gets the gradient."""
    signature = exported.graph_signature
    placeholders = exported.graph.find_nodes(op="placeholder")
    unread = {spec.target: node for spec, node in zip(signature.input_specs, placeholders)
              if spec.kind is InputKind.PARAMETER and not node.users}
    if not unread:
        return exported
    specs = [InputSpec(InputKind.BUFFER, spec.arg, spec.target, persistent=True) if spec.target in unread else spec
             for spec in signature.input_specs]
    for node in unread.values():   # a buffer needs no gradient (a non-strict export traced it as a parameter's)
        value = node.meta["val"]
        with value.fake_mode:
            node.meta["val"] = value.detach()
    state = {name: value.detach() if name in unread else value for name, value in exported.state_dict.items()}
    return exported._update(exported.graph_module, ExportGraphSignature(specs, signature.output_specs),
                            state_dict=state)


def in_step_order(joint: Any, step: Any) -> Any:
    """The gradients in the step's order, each named by its parameter's first name (a strict export
    orders parameters its own way; a tied weight's gradient may come under another of its names)."""
    first_names = {id(p): name for name, p in step.loss.named_parameters()}
    canonical = {name: first_names[id(p)] for name, p in step.loss.named_parameters(remove_duplicate=False)}
    wanted = [step.prefix + name for name in step.trained_names()]
    graph_module = copy.deepcopy(joint.graph_module)
    output = graph_module.graph.output_node()
    pairs = list(zip(output.args[0], joint.graph_signature.output_specs))
    gradients = {canonical[spec.target]: (node, spec) for node, spec in pairs
                 if spec.kind is OutputKind.GRADIENT_TO_PARAMETER}
    if sorted(gradients) != sorted(wanted):
        missing = sorted(set(wanted) - set(gradients)) or sorted(set(gradients) - set(wanted))
        raise JointGraphError(f"the joint graph's gradients ({len(gradients)}) are not the step's ({len(wanted)}): "
                              f"{missing[0]} differs")
    others = [(node, spec) for node, spec in pairs if spec.kind is not OutputKind.GRADIENT_TO_PARAMETER]
    ordered = others + [(gradients[name][0], OutputSpec(OutputKind.GRADIENT_TO_PARAMETER, gradients[name][1].arg,
                                                        name)) for name in wanted]
    output.args = (tuple(node for node, _ in ordered),)
    graph_module.recompile()
    return joint._update(graph_module, ExportGraphSignature(joint.graph_signature.input_specs,
                                                            [spec for _, spec in ordered]))


def check_against_autograd(program: Any, step: Any, inputs: tuple) -> None:
    """JointGraphError when the program, run by PyTorch, is far from the step run by autograd: a joint
    graph PyTorch got wrong would fail every backend that compiles it. Far: an RMS error over 10% of
    the output's RMS plus 0.1% of the largest output's (a gradient that is 0 but for rounding, a
    convolution's bias before batch norm, has no scale of its own)."""
    with torch.no_grad():
        got = program.module()(*(t.clone() for t in inputs))
    want = step(*(t.clone() for t in inputs))
    largest = max(_rms(w.double()) for w in want)
    wrong = [name for name, g, w in zip(step.output_names(), got, want)
             if _rms((g - w).double()) > 0.1 * _rms(w.double()) + 1e-3 * largest]
    if wrong:
        raise JointGraphError(f"the joint graph PyTorch exports computes {len(wrong)} output(s) far from autograd's, "
                              f"run by PyTorch itself: {', '.join(wrong[:3])}")


def _rms(tensor: torch.Tensor) -> float:
    return float(tensor.square().mean().sqrt()) if tensor.numel() else 0.0


def with_updates(joint: Any, step: Any, names: list[str]) -> Any:
    """The joint graph with SGD's update of each trained parameter appended to its outputs, after
    the gradients: `aten.sub(parameter, gradient, alpha=lr)`."""
    graph_module = copy.deepcopy(joint.graph_module)
    graph, signature = graph_module.graph, joint.graph_signature
    placeholders = {spec.target: node for spec, node in zip(signature.input_specs, graph.find_nodes(op="placeholder"))}
    output = graph.output_node()
    results = list(output.args[0])
    gradients = [node for node, spec in zip(results, signature.output_specs)
                 if spec.kind is OutputKind.GRADIENT_TO_PARAMETER]
    updates = []
    with graph.inserting_before(output):
        for name, gradient in zip(names, gradients):
            parameter = placeholders[name]
            update = graph.call_function(torch.ops.aten.sub.Tensor, (parameter, gradient), {"alpha": step.lr})
            update.meta["val"] = parameter.meta["val"]   # a parameter's shape and dtype
            updates.append(update)
    output.args = (tuple(results + updates),)
    graph_module.recompile()
    # Plain user outputs, all of them (the verifier wants a program's user outputs last and together):
    # with updates, the program is a whole step, no longer a joint graph to decompose as one.
    specs = [spec if spec.kind in MUTATIONS else OutputSpec(OutputKind.USER_OUTPUT, spec.arg, None)
             for spec in signature.output_specs]
    specs += [OutputSpec(OutputKind.USER_OUTPUT, TensorArgument(name=update.name), None) for update in updates]
    try:
        return joint._update(graph_module, ExportGraphSignature(signature.input_specs, specs))
    except Exception as e:  # noqa: BLE001 - as above
        raise JointGraphError(f"the joint graph with SGD's updates does not verify: {first_line(e)}") from None


def returning_all(exported: Any) -> Any:
    """The program as returning one flat tuple of its outputs (what its `.module()` and
    run_decompositions unflatten them by): the joint graph's own call signature says the loss alone."""
    count = sum(spec.kind not in MUTATIONS for spec in exported.graph_signature.output_specs)
    exported.module_call_graph[0].signature.out_spec = pytree.tree_structure(tuple(range(count)))
    return exported


def backward_ops(program: Any) -> list[str]:
    """The backward ops the joint graph keeps whole (`convolution_backward`, ...), each once."""
    names = {node.target._opname for node in program.graph.nodes if isinstance(node.target, torch._ops.OpOverload)}
    return sorted(name for name in names if name.endswith("_backward"))


def first_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return f"{type(error).__name__}: {lines[0] if lines else ''}"
