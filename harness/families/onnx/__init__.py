"""ONNX's backend node tests as the family `onnx_node`: one case per test that the installed onnx
package generates, its model an ONNX model (program kind "onnx"), compared as ONNX's runner does.

Pure Python (the pytest process imports it, never onnx); the lister and the builder run in workers.
"""
from __future__ import annotations

from harness.families.interface import Family
from harness.families.onnx import params

ONNX_NODE = Family(name=params.FAMILY, validate=params.validate, builder="harness.families.onnx.build:build_node",
                   derive_tags=params.derive_tags, subject=params.subject, markers=(params.FAMILY,), program="onnx",
                   discover=params.discover)
FAMILIES = [ONNX_NODE]
