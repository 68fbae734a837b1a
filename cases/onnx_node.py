"""ONNX's backend node tests as cases: one per test of the installed onnx package's generators.

The tests come from a manifest that a worker writes once per onnx installation (see
harness.families.onnx.params); ids read `onnx_node/<test name>`, e.g. `onnx_node/test_abs`.
They are collected for the backends whose config takes ONNX models (`programs:`).
"""
from harness.families.onnx.params import node_case_ids, node_cases

FAMILIES = ("onnx_node",)


def cases(options):
    return node_cases(options)


def case_ids(options):
    return node_case_ids(options)
