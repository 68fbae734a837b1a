"""Reduction of a failing case to the smallest program that fails the same way (`python -m harness
reduce`): the command (command.py), the search (search.py), PyTorch programs (torch_graph.py) and
ONNX models (onnx_graph.py) as graphs to cut. A candidate is a case of the family that reruns
cut-down programs of its kind (Family.reruns)."""
from harness.families.loader import serving_family


class NotReducible(Exception):
    """The program's graph holds something a candidate cannot be written with (a subgraph, say)."""


def candidate_family(kind: str) -> str:
    """The installed family that runs the cut-down programs of this kind (Family.reruns)."""
    return serving_family("reruns", kind).name
