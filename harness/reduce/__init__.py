"""Reduction of a failing case to the smallest program that fails the same way (`python -m harness
reduce`): the command (command.py), the search (search.py), PyTorch programs (torch_graph.py) and
ONNX models (onnx_graph.py) as graphs to cut. A PyTorch program's candidates are cases of the
`reduced` family (harness.families.reduced), an ONNX model's of `onnx_model`."""


class NotReducible(Exception):
    """The program's graph holds something a candidate cannot be written with (a subgraph, say)."""
