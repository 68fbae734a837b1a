"""Reduction of a failing case to the smallest program that fails the same way (`python -m harness
reduce`): the command (command.py), the search (search.py), PyTorch programs as graphs to cut
(torch_graph.py); the programs it writes are cases of the `reduced` family (harness.families.reduced)."""
