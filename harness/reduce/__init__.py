"""Reduction of a failing case to the smallest program that fails the same way (`python -m harness
reduce`): the command (command.py), the search (search.py), PyTorch programs (torch_graph.py) and
ONNX models (onnx_graph.py) as graphs to cut. A candidate is a case of the family that reruns
cut-down programs of its kind (Family.reruns)."""
from harness.errors import HarnessInputError


class NotReducible(Exception):
    """The program's graph holds something a candidate cannot be written with (a subgraph, say)."""


def candidate_family(kind: str) -> str:
    """The installed family that runs the cut-down programs of this kind (Family.reruns)."""
    from harness.families.loader import entry_point_families

    names = [name for name, family in entry_point_families().items() if family.reruns == kind]
    if len(names) != 1:
        raise HarnessInputError("the installed families", f"{len(names)} of them rerun cut-down {kind} programs "
                                f"({', '.join(names) or 'none'})", "install exactly one with Family.reruns="
                                f"{kind!r} (the built-in ones do)")
    return names[0]
