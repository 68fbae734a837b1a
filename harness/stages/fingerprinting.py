"""Stage fingerprints: a short hash of what each stage of a backend produced (the exported program,
the imported and lowered IR, the compiled artifact), in a canonical form, so that two runs of the
same case on the same build give the same fingerprints and a compiler change shows at the first
stage whose output it changed.

`CaseContext.fingerprint(stage, output)` is the seam: a backend hands it the text or bytes a stage
already produced (or an FX graph, an ExportedProgram), never a second print made only to hash it.
Canonical forms: MLIR text without locations (`loc(...)` and `#loc` aliases, and the `Location:`
line of runtime-verification messages, which holds absolute paths); an FX graph as one line per
node with generated names numbered in order and each value's dtype and shape; an exported program
adds its signature and the bytes of its weights. Torch-free at import: the
controller imports this module through harness.backend_interface.
"""
from __future__ import annotations

import hashlib
import json
import re
import sys
from typing import Any, Iterable

DIGITS = 16   # hex digits kept of a sha256: 64 bits, enough to tell a suite's stages apart

_ASSERT_MESSAGE = re.compile(r"@assert_msg_\d+\b")
# A runtime-verification message's global: its text as hex bytes, then its length twice.
_MESSAGE_GLOBAL = re.compile(r'(@assert_msg(?:_\d+)?)\(dense<"0x([0-9A-Fa-f]*)"> : tensor<\d+xi8>\)(.*?)'
                             r' : !llvm\.array<\d+ x i8>')
_LOC_ALIAS = re.compile(r"^#loc\d*\s*=.*\n?", re.MULTILINE)


def digest(*parts: Any) -> str:
    """The fingerprint of a sequence of texts or buffers (bytes, a numpy array: read in place), each
    length-prefixed, so that the parts' boundaries count."""
    hasher = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else memoryview(part).cast("B")
        hasher.update(len(data).to_bytes(8, "little"))
        hasher.update(data)
    return hasher.hexdigest()[:DIGITS]


def canonical_mlir(text: str) -> str:
    """MLIR text without its locations: the `#loc` alias lines and every `loc(...)` (nested
    parentheses and quoted file names included). A print without debug info has none: then the
    text is returned as it is, after a scan (`@malloc(` is no location)."""
    starts = _location_starts(text)
    if not starts:
        return text
    if text.startswith("#loc") or "\n#loc" in text:
        return canonical_mlir(_LOC_ALIAS.sub("", text))
    kept, position = [], 0
    for start in starts:
        if start < position:   # inside a location already removed
            continue
        kept.append(text[position:start].rstrip(" "))
        position = _after_parenthesis(text, start + len("loc("))
    kept.append(text[position:])
    return "".join(kept)


def _location_starts(text: str) -> list[int]:
    """Where each `loc(` that is not the end of a longer name (`@malloc(`) starts: str.find, many
    times faster than a regular expression over a large module."""
    starts, index = [], text.find("loc(")
    while index >= 0:
        if index == 0 or not (text[index - 1].isalnum() or text[index - 1] in "_$.#"):
            starts.append(index)
        index = text.find("loc(", index + 1)
    return starts


def _after_parenthesis(text: str, index: int) -> int:
    """The index after the parenthesis that closes the one opened just before `index`."""
    depth, quoted = 1, False
    while index < len(text) and depth:
        char = text[index]
        if quoted:
            quoted = char != '"' or text[index - 1] == "\\"
        elif char == '"':
            quoted = True
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        index += 1
    return index


def fx_graph_text(graph: Any) -> str:
    """An FX graph as text: one line per node (its kind, target, arguments and the dtype and shape
    of its value), generated node names replaced by their position, so that a rename of the same
    program does not count."""
    nodes = [node for node in graph.nodes if not _dead_getitem(node)]
    numbers = {node: f"%{i}" for i, node in enumerate(nodes)}

    def show(value: Any) -> str:
        if _hashable(value) and value in numbers:
            return numbers[value]
        if isinstance(value, (list, tuple)):
            inner = ", ".join(show(v) for v in value)
            return f"[{inner}]" if isinstance(value, list) else f"({inner})"
        if isinstance(value, dict):
            return "{" + ", ".join(f"{k}: {show(v)}" for k, v in value.items()) + "}"
        return str(value)

    return "\n".join(f"{numbers[node]} {node.op} {_target(node)} {show(node.args)} {show(node.kwargs)} "
                     f"{_value_type(_value(node))}" for node in nodes)


def _dead_getitem(node: Any) -> bool:
    """An unused `getitem` of a multi-result op: torch.export.load adds one for every result (an
    unused gradient too), an export leaves them out; either way it computes nothing."""
    return node.op == "call_function" and getattr(node.target, "__name__", "") == "getitem" and not node.users


def _value(node: Any) -> Any:
    """A node's value as traced; none for the output node, whose values are its arguments' (a
    program torch.export.load gave back records them there, one just exported does not)."""
    return None if node.op == "output" else node.meta.get("val", node.meta.get("example_value"))


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _target(node: Any) -> str:
    if node.op == "placeholder":
        return "input"   # its name is generated from the argument's; its position says which
    if isinstance(node.target, str) or hasattr(node.target, "name"):   # an attribute path, an OpOverload
        return str(node.target)
    return getattr(node.target, "__qualname__", str(node.target))   # a Python function (operator.getitem)


def _value_type(value: Any) -> str:
    """A node's value as dtype and shape (a fake tensor's), recursively for tuples of them."""
    if isinstance(value, (list, tuple)):
        return "(" + ", ".join(_value_type(v) for v in value) + ")"
    if hasattr(value, "dtype") and hasattr(value, "shape"):
        return f"{value.dtype}{list(value.shape)}"
    return type(value).__name__ if value is not None else ""


def exported_program_text(exported: Any) -> Iterable[str | bytes]:
    """The parts of an ExportedProgram's fingerprint: its graph, its signature (which inputs are
    weights, which buffers persist, which outputs mutate a buffer), its shape constraints and its
    weights' bytes."""
    yield fx_graph_text(exported.graph)
    yield "\n".join(f"{spec.kind.name} {spec.target} {spec.persistent}"   # a buffer's persistence: an importer
                     for spec in exported.graph_signature.input_specs)       # reads it (None: not a buffer)
    yield "\n".join(f"{spec.kind.name} {spec.target}" for spec in exported.graph_signature.output_specs)
    yield str(sorted((str(k), str(v)) for k, v in exported.range_constraints.items()))
    for name, value in sorted({**exported.state_dict, **exported.constants}.items()):
        yield name
        if hasattr(value, "untyped_storage"):   # a tensor
            yield f"{value.dtype}{list(value.shape)}"
            yield tensor_bytes(value)
        else:
            yield type(value).__name__


def tensor_bytes(tensor: Any) -> Any:
    """A tensor's values as a numpy array of bytes (no copy of a contiguous CPU tensor)."""
    torch = sys.modules["torch"]   # loaded: a tensor exists (this module must not import it)
    return tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy()


def _runtime_messages_canonical(text: str) -> str:
    """Runtime-verification messages without their locations, and numbered again in the order they
    appear: MLIR names them `@assert_msg_N`, N counting every message the worker made before, so
    the same case's LLVM text would differ with the cases that ran before it in its worker."""
    if "@assert_msg" not in text:
        return text
    numbers: dict[str, str] = {}
    text = _MESSAGE_GLOBAL.sub(_message_without_location, text)
    return _ASSERT_MESSAGE.sub(lambda m: numbers.setdefault(m.group(0), f"@assert_msg_#{len(numbers)}"), text)


def _message_without_location(match: re.Match) -> str:
    """A runtime-verification message's global, its text shown without its `Location:` line: the
    location names the files of the checkout and the venv that traced the program (absolute
    paths), so one build would fingerprint differently in two folders, or from a stage cache
    entry another folder wrote. Kept as a string so that its op and check still count."""
    message = bytes.fromhex(match.group(2)).decode(errors="replace").split("\nLocation: ")[0]
    return f"{match.group(1)}({json.dumps(message)}){match.group(3)}"


def fingerprint_of(output: Any) -> str:
    """The fingerprint of a stage's output: MLIR or other text, bytes (a serialised model, a
    compiled artifact), an ExportedProgram, or an FX GraphModule or Graph."""
    if isinstance(output, str):
        return digest(_runtime_messages_canonical(canonical_mlir(output)))
    if isinstance(output, (bytes, bytearray, memoryview)):
        return digest(output)
    if hasattr(output, "graph_signature"):
        return digest(*exported_program_text(output))
    graph = getattr(output, "graph", output)
    if hasattr(graph, "nodes"):
        return digest(fx_graph_text(graph))
    raise TypeError(f"no fingerprint for a {type(output).__name__}: give its text or bytes")
