"""Worker-side half of the ONNX node-test manifest: the installed onnx's test generators, run once.

`python -m harness.families.onnx.lister DIR KEY` writes every test that
`onnx.backend.test.case.node.collect_testcases` generates as ONNX's own test layout,
DIR/KEY/<test>/model.onnx and test_data_set_<i>/{input,output}_<j>.pb (a tensor, sequence or
optional proto, as the model's graph types it), then the manifest DIR/KEY.json that collection
reads (harness.families.onnx.params). Written to a temporary name and renamed: a lister that dies
half-way leaves no manifest.
"""
from __future__ import annotations

import json
import shutil
import sys
import warnings
from pathlib import Path
from typing import Any

import onnx
from onnx import TensorProto, numpy_helper

from harness.families.onnx.params import MANIFEST_FORMAT

DEFAULT_DOMAINS = ("", "ai.onnx")


def serialized(value, type_proto: onnx.TypeProto) -> bytes:
    """One input or output as the proto its graph type calls for."""
    if type_proto.HasField("sequence_type"):
        return numpy_helper.from_list(value).SerializeToString()
    if type_proto.HasField("optional_type"):
        return numpy_helper.from_optional(value).SerializeToString()
    if isinstance(value, TensorProto):   # float8, int4 and the like: numpy cannot hold them
        return value.SerializeToString()
    return numpy_helper.from_array(value).SerializeToString()


def op_of(case, single_node_ops: dict[str, tuple[str, str]]) -> tuple[str, str]:
    """(domain, op type) the test is about: its one node's, or for a function's expanded body
    (`test_x_expanded`, `test_x_expanded_ver18`) the op of the test it expands."""
    base = case.name.split("_expanded")[0]
    if base != case.name and base in single_node_ops:
        return single_node_ops[base]
    node = case.model.graph.node[0]
    return node.domain, node.op_type


def opset_of(model: onnx.ModelProto, domain: str) -> int:
    versions = [o.version for o in model.opset_import if o.domain == domain or
                (domain in DEFAULT_DOMAINS and o.domain in DEFAULT_DOMAINS)]
    return max(versions or [0])


def write_test(directory: Path, case) -> None:
    directory.mkdir(parents=True)
    (directory / "model.onnx").write_bytes(case.model.SerializeToString())
    graph = case.model.graph
    for index, (inputs, outputs) in enumerate(case.data_sets):
        data = directory / f"test_data_set_{index}"
        data.mkdir()
        for j, value in enumerate(inputs):
            (data / f"input_{j}.pb").write_bytes(serialized(value, graph.input[j].type))
        for j, value in enumerate(outputs):
            (data / f"output_{j}.pb").write_bytes(serialized(value, graph.output[j].type))


def main(directory: str, key: str) -> None:
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():   # the generators' own numpy warnings (a reduction over an empty axis)
        warnings.simplefilter("ignore")
        cases: list[Any] = collect_testcases(None)   # node tests: their model and data sets are always set
    root = Path(directory) / key
    staging = Path(directory) / f"{key}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    single = {c.name: (c.model.graph.node[0].domain, c.model.graph.node[0].op_type)
              for c in cases if len(c.model.graph.node) == 1}
    tests = {}
    for case in cases:
        write_test(staging / case.name, case)
        domain, op_type = op_of(case, single)
        tests[case.name] = {
            "op_type": op_type, "domain": domain, "opset": opset_of(case.model, domain),
            "expanded": "_expanded" in case.name, "rtol": case.rtol, "atol": case.atol,
            "data_sets": len(case.data_sets), "nodes": len(case.model.graph.node),
        }
    shutil.rmtree(root, ignore_errors=True)
    staging.rename(root)
    manifest = {"format": MANIFEST_FORMAT, "onnx": onnx.__version__, "tests": tests}
    partial = Path(directory) / f"{key}.json.partial"
    partial.write_text(json.dumps(manifest, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    partial.rename(Path(directory) / f"{key}.json")


if __name__ == "__main__":
    main(*sys.argv[1:3])
