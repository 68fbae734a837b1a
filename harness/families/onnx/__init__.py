"""The ONNX families, whose programs are ONNX models (program kind "onnx"), compared as ONNX's
backend runner does:
  onnx_node   ONNX's backend node tests: one case per test that the installed onnx package generates
  onnx_model  a user's own model and input files, from a cases file (harness.families.onnx.model_params)

Pure Python (the pytest process imports it, never onnx); the lister and the builder run in workers.
"""
from __future__ import annotations

from harness.families.interface import Family
from harness.families.onnx import model_params, params
from harness.families.onnx.iree_configs import add_commands

ONNX_NODE = Family(name=params.FAMILY, validate=params.validate, builder="harness.families.onnx.build:build_node",
                   derive_tags=params.derive_tags, subject=params.subject, markers=(params.FAMILY,), program="onnx",
                   discover=params.discover, commands=add_commands)
ONNX_MODEL = Family(name=model_params.FAMILY, validate=model_params.validate,
                    builder="harness.families.onnx.build:build_model", derive_tags=model_params.derive_tags,
                    subject=model_params.subject, markers=(model_params.FAMILY,), program="onnx",
                    path_params=model_params.PATH_PARAMS, reruns="onnx")   # and the reducer's candidates
FAMILIES = [ONNX_NODE, ONNX_MODEL]
