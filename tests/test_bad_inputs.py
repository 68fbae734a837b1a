"""Every bad input the "Bad input" table lists (docs/reference/bad-input.md), with the exact line it gives.

Each row writes files into a fresh tiny project (e2e_support.Project) and runs pytest on it in a
subprocess: the run must exit with status 4, print exactly the row's error line, no Python
traceback, no INTERNALERROR, and write no report. Harness errors print `ERROR: <line>`; an
argparse error prints `ERROR: usage: ...` and then `<prog>: error: <line>` (prog is `pytest`; under
`python -m pytest` it is `__main__.py`, or `python -m pytest` from pytest 9.2 on).

Rows marked xfail are harness bugs: the input gives a traceback or a wrong or vague message. They
assert only the shape (one `ERROR:` line that starts with the file or option, exit status 4,
no traceback); when one starts to pass, write its exact line into the row and the table.

tests/test_validation.py checks a few of these by fragment; this file pins every line.
The selected rows run two at a time (a fixture runs them all up front), not one by one.
"""
from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from e2e_support import Project, python_path_env
from extras import missing, needs

BACKWARD = "{input_shape: [1, 2, 4, 4], weight_shape: [2, 2, 3, 3]"  # a good cases-file entry, unclosed
ARGPARSE = "argparse"
INI = "[pytest]\ntestpaths = cases\ne2e_backends = eager\n"   # the project's pytest.ini, to add a key to
TAKEN_FAMILY = """\
from harness.api import Family, no_reductions
from harness.families.opinfo import params as opinfo_params
FAMILY = Family("opinfo", opinfo_params.validate, "x:y", no_reductions, opinfo_params.derive_tags)
"""
MODEL_ENTRY = "- {family: onnx_model, name: block, model: %s, inputs: [x.npy]}\n"


def relu_model() -> bytes:
    """A one-node ONNX model, Relu of a float32[2,3] input x (built when the row runs: it needs onnx)."""
    from onnx import TensorProto, helper

    x, y = (helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in "xy")
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu", [x], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8).SerializeToString()


def int_array_npy() -> bytes:
    import io

    import numpy as np

    buffer = io.BytesIO()
    np.save(buffer, np.zeros((2, 3), np.int64))
    return buffer.getvalue()


OPTIONED_FAMILY = """\
from harness.api import Family, Option
FAMILY = Family("mine", dict, "x:y", options=(Option("mine-size", "how big"),))
"""


@dataclasses.dataclass(frozen=True)
class Bad:
    id: str
    what: str                   # the table's description of the input
    files: dict                 # relative path -> text, or a function that returns the file's bytes
    args: tuple = ()
    line: str = ""              # the exact error line, after "ERROR: " (or "<prog>: error: ")
    kind: str = "harness"       # or ARGPARSE
    bug: str = ""               # a harness bug: the row is xfail, `line` is the expected start only
    absent: str = ""            # (bug rows) what the line must not say
    path: tuple = ()            # project directories put on the run's PYTHONPATH, ahead of site-packages
    needs: str = ""             # the extra the row needs (tests/extras.py): skipped without it


def _entry(extra: str = "", case: str = "conv_backward/2d/tiny") -> str:
    return f"- id: {case}\n  reason: x\n{extra}"


BAD = [
    # ---------------------------------------------------------------- expectation files
    Bad("xfail-malformed-yaml", "malformed YAML in an expectation file",
        {"xfail/eager.yaml": "- id: conv_backward/2d/tiny\n  reason: [x\n"}, (),
        "xfail/eager.yaml:3: malformed YAML (expected ',' or ']', but got '<stream end>'); fix the syntax"),
    Bad("xfail-tab", "a tab in the indentation",
        {"xfail/eager.yaml": "- id: conv_backward/2d/tiny\n\treason: x\n"}, (),
        "xfail/eager.yaml:2: malformed YAML (found character '\\t' that cannot start any token); fix the syntax"),
    Bad("xfail-not-a-list", "an expectation file that is not a list",
        {"xfail/eager.yaml": "id: conv_backward/2d/tiny\nreason: x\n"}, (),
        "xfail/eager.yaml: an expectation file must be a YAML list of entries; start each entry with '- id: ...'"),
    Bad("xfail-entry-not-a-mapping", "an entry that is not a mapping",
        {"xfail/eager.yaml": "- conv_backward/2d/tiny\n"}, (),
        "xfail/eager.yaml: entry 'conv_backward/2d/tiny' is not a mapping; write '- id: ...\\n  reason: ...'"),
    Bad("xfail-unknown-key", "an unknown key in an entry",
        {"xfail/eager.yaml": _entry("  reasn: y\n")}, (),
        "xfail/eager.yaml:1: unknown key 'reasn'; allowed keys are id, issue, nondeterministic, phase, reason, "
        "signature, timeout, when"),
    Bad("xfail-nondeterministic-not-a-flag", "`nondeterministic: sometimes`",
        {"xfail/eager.yaml": _entry("  nondeterministic: sometimes\n")}, (),
        "xfail/eager.yaml:1: nondeterministic must be true or false, not 'sometimes'"),
    Bad("crash-set-nondeterministic", "`nondeterministic: true` in a crash-set entry",
        {"crash_sets/eager.yaml": _entry("  nondeterministic: true\n")}, (),
        "crash_sets/eager.yaml:1: a crash-set entry cannot be nondeterministic (its case is not run); "
        "move the entry to the xfail file"),
    Bad("config-extras-not-a-list", "`extras: onnx` in a config (not a list)",
        {"configs/broken.yaml": "name: broken\nclass: a:B\nextras: onnx\n"}, ("--backend=broken",),
        "configs/broken.yaml: extras must be a list of the harness's extras, not 'onnx'; write e.g. "
        "extras: [onnx], or install: followed by a command"),
    Bad("xfail-missing-reason", "an entry without a reason",
        {"xfail/eager.yaml": "- id: conv_backward/2d/tiny\n"}, (),
        "xfail/eager.yaml:1: missing required key 'reason'"),
    Bad("xfail-empty-reason", "an empty reason",
        {"xfail/eager.yaml": "- id: conv_backward/2d/tiny\n  reason: ''\n"}, (),
        "xfail/eager.yaml:1: 'reason' must be a non-empty string"),
    Bad("xfail-id-not-a-string", "an id that is not a string",
        {"xfail/eager.yaml": "- id: 7\n  reason: x\n"}, (),
        "xfail/eager.yaml:1: 'id' must be a non-empty string"),
    Bad("xfail-signature-not-a-string", "a signature that is not a string",
        {"xfail/eager.yaml": _entry("  signature: [a]\n")}, (),
        "xfail/eager.yaml:1: 'signature' must be a non-empty string"),
    Bad("xfail-dead-id", "a dead id (matches no case)",
        {"xfail/eager.yaml": _entry(case="conv_backward/2d/gone")}, (),
        "xfail/eager.yaml:1: id 'conv_backward/2d/gone' matches no case; delete the entry or fix the id "
        "(list ids with --collect-only -q)"),
    Bad("crash-set-dead-glob", "a glob that matches no case",
        {"crash_sets/eager.yaml": _entry(case="conv_backward/2d/nope*")}, (),
        "crash_sets/eager.yaml:1: id 'conv_backward/2d/nope*' matches no case; delete the entry or fix the id "
        "(list ids with --collect-only -q)"),
    Bad("case-in-both-files", "conflicting entries: a case in the xfail file and the crash set",
        {"xfail/eager.yaml": _entry(), "crash_sets/eager.yaml": _entry(case="conv_backward/*")}, (),
        "xfail/eager.yaml:1: case 'conv_backward/2d/tiny' is also in the crash set at crash_sets/eager.yaml:1; "
        "keep it in one of the two files"),
    Bad("bad-when-version", "a bad version specifier in `when`",
        {"xfail/eager.yaml": _entry("  when: {torch: '>>2'}\n")}, (),
        "xfail/eager.yaml:1: bad version condition torch: '>>2'; write a PEP 440 specifier such as '>=2.13,<2.14'"),
    Bad("unknown-when-condition", "an unknown name in `when`",
        {"xfail/eager.yaml": _entry("  when: {tensorflow: '>=2'}\n")}, (),
        "xfail/eager.yaml:1: unknown condition 'tensorflow'; use one of iree-base-compiler, iree-base-runtime, numpy, "
        "onnx, onnxruntime, onnxscript, python, torch, torch-mlir"),
    Bad("when-not-a-mapping", "`when` that is not a mapping",
        {"xfail/eager.yaml": _entry("  when: torch>=2\n")}, (),
        "xfail/eager.yaml:1: 'when' must be a mapping such as {torch: '>=2.13'}"),
    Bad("unknown-phase", "an unknown phase",
        {"xfail/eager.yaml": _entry("  phase: link\n")}, (),
        "xfail/eager.yaml:1: unknown phase 'link'; use one of setup, export, decompose, import, lower, compile, run, "
        "compare, time"),
    Bad("bad-entry-timeout", "a negative timeout in an entry",
        {"xfail/eager.yaml": _entry("  timeout: -5\n")}, (),
        "xfail/eager.yaml:1: timeout must be a positive, finite number of seconds, not -5"),
    # ---------------------------------------------------------------- backend configs
    Bad("config-malformed-yaml", "malformed YAML in a backend config",
        {"configs/broken.yaml": "name: broken\nclass: [a\n"}, (),
        "configs/broken.yaml:3: malformed YAML (expected ',' or ']', but got '<stream end>'); fix the syntax"),
    Bad("config-unknown-key", "an unknown key in a config",
        {"configs/broken.yaml": "name: broken\nclass: fake_backends:FaultyBackend\ntimout: 5\n"}, (),
        "configs/broken.yaml:3: unknown key 'timout'; did you mean 'timeout'? allowed keys are class, description, "
        "extends, extras, install, lowering, memory_limit_mb, name, options, programs, requires, timeout, tolerances"),
    Bad("config-class-does-not-import", "a class that does not import",
        {"configs/broken.yaml": "name: broken\nclass: not_a_module:Backend\n"}, ("--backend=broken",),
        "configs/broken.yaml:2: class not_a_module:Backend does not import (ModuleNotFoundError: No module named "
        "'not_a_module'); fix the class, or install the package that has it"),
    Bad("config-unknown-option", "an option the class does not declare",
        {"configs/broken.yaml": "name: broken\nextends: inductor\noptions:\n  cache_dir: null\n  compile_thread: 2\n"},
        ("--backend=broken",),
        "configs/broken.yaml:5: unknown option 'compile_thread' of harness.backends.inductor:InductorBackend; "
        "did you mean 'compile_threads'? it takes cache_dir, compile_threads"),
    Bad("config-not-a-mapping", "a config that is not a mapping",
        {"configs/broken.yaml": "- name: broken\n"}, (),
        "configs/broken.yaml: a backend config must be a mapping; see configs/eager.yaml"),
    Bad("config-missing-name", "a config without a name",
        {"configs/broken.yaml": "class: fake_backends:FaultyBackend\n"}, (),
        "configs/broken.yaml:1: missing required key 'name'"),
    Bad("config-missing-class", "a config without a class",
        {"configs/broken.yaml": "name: broken\n"}, (),
        "configs/broken.yaml: missing required key 'class'; name the backend class as module:Class, "
        "or extend a config that does"),
    Bad("config-bad-class", "a class not written module:Class",
        {"configs/broken.yaml": "name: broken\nclass: fake_backends.FaultyBackend\n"}, (),
        "configs/broken.yaml: class 'fake_backends.FaultyBackend' is not of the form 'module:Class'"),
    Bad("config-name-differs", "a name that differs from the file name",
        {"configs/broken.yaml": "name: brokn\nclass: fake_backends:FaultyBackend\n"}, (),
        "configs/broken.yaml: name 'brokn' differs from the file name; rename the file to brokn.yaml or fix the name"),
    Bad("config-bad-timeout", "a zero timeout in a config",
        {"configs/broken.yaml": "name: broken\nclass: a:B\ntimeout: 0\n"}, (),
        "configs/broken.yaml: timeout must be a positive, finite number of seconds, not 0"),
    Bad("config-tolerance-dtype", "a tolerance for an unknown dtype",
        {"configs/broken.yaml": "name: broken\nclass: a:B\ntolerances: {int8: {rtol: 1, atol: 1}}\n"}, (),
        "configs/broken.yaml:3: tolerance for unknown dtype 'int8'; use one of float32, float64, float16, bfloat16"),
    Bad("config-tolerance-missing-atol", "a tolerance without atol",
        {"configs/broken.yaml": "name: broken\nclass: a:B\ntolerances: {float32: {rtol: 1}}\n"}, (),
        "configs/broken.yaml:3: missing required key 'atol'"),
    Bad("config-tolerance-negative", "a negative tolerance",
        {"configs/broken.yaml": "name: broken\nclass: a:B\ntolerances: {float32: {rtol: -1, atol: 0}}\n"}, (),
        "configs/broken.yaml: tolerances.float32.rtol must be a non-negative, finite number, not -1"),
    Bad("config-extends-unknown", "`extends` naming an unknown backend",
        {"configs/broken.yaml": "name: broken\nextends: nothere\n"}, (),
        "configs/broken.yaml: extends unknown backend 'nothere'; use one of broken, eager, inductor, iree-llvm-cpu, "
        "linalg-on-tensors, linalg-on-tensors-direct, onnx-linalg-on-tensors, onnxruntime, stablehlo, tosa"),
    Bad("config-extends-cycle", "configs that extend each other",
        {"configs/a.yaml": "name: a\nextends: b\n", "configs/b.yaml": "name: b\nextends: a\n"}, (),
        "configs/b.yaml: extends 'a', which extends it back; break the cycle"),
    Bad("config-programs-unknown-kind", "a program kind no front-end builds",
        {"configs/broken.yaml": "name: broken\nclass: a:B\nprograms: {tflite: its converter}\n"}, (),
        "configs/broken.yaml: programs names unknown kind 'tflite'; use torch, onnx, train_step"),
    Bad("config-options-not-a-mapping", "options that are not a mapping",
        {"configs/broken.yaml": "name: broken\nclass: a:B\noptions: [1]\n"}, (),
        "configs/broken.yaml: 'options' must be a mapping"),
    Bad("config-defined-twice", "a backend defined in two configs directories",
        {"more/eager.yaml": "name: eager\nclass: a:B\n"}, ("--configs-dir=more",),
        "more/eager.yaml: backend 'eager' is already defined in configs/eager.yaml; rename one of them"),
    # ---------------------------------------------------------------- backends
    Bad("unknown-backend", "an unknown backend", {}, ("--backend=eager,nope",),
        "--backend=nope: unknown backend (known: eager, inductor, iree-llvm-cpu, linalg-on-tensors, "
        "linalg-on-tensors-direct, onnx-linalg-on-tensors, onnxruntime, stablehlo, tosa); add configs/<name>.yaml "
        "or pass --configs-dir=DIR"),
    Bad("missing-optional-package", "a backend whose `requires` is not installed",
        {"configs/needy.yaml": "name: needy\nclass: a:B\nrequires: [not-a-real-dist]\n"
                               "install: pip install not-a-real-dist\n"}, ("--backend=needy",),
        "--backend=needy: needs the package 'not-a-real-dist', which is not installed; "
        "install it with: pip install not-a-real-dist"),
    # ---------------------------------------------------------------- --cases-file
    Bad("cases-file-missing", "a missing `--cases-file`", {}, ("--cases-file=nope.yaml",),
        "nope.yaml: cannot read: No such file or directory"),
    Bad("cases-file-directory", "a directory as `--cases-file`", {"adir/x": ""}, ("--cases-file=adir",),
        "adir: cannot read: Is a directory"),
    Bad("cases-file-not-a-list", "a cases file that is not a list",
        {"extra.yaml": "input_shape: [1, 2, 4, 4]\nweight_shape: [2, 2, 3, 3]\n"}, ("--cases-file=extra.yaml",),
        "extra.yaml: a cases file must be a non-empty list of parameter sets"),
    Bad("cases-file-empty", "an empty cases file", {"extra.yaml": ""}, ("--cases-file=extra.yaml",),
        "extra.yaml: a cases file must be a non-empty list of parameter sets"),
    Bad("cases-file-negative-stride", "a negative stride",
        {"extra.yaml": f"- {BACKWARD}, stride: -1}}\n"}, ("--cases-file=extra.yaml",),
        "extra.yaml:1: stride [-1, -1] has a value below 1: every stride value must be >= 1."),
    Bad("cases-file-groups", "groups that do not divide the channels",
        {"extra.yaml": f"- {BACKWARD}}}\n- {{input_shape: [1, 3, 4, 4], weight_shape: [2, 1, 3, 3], groups: 2}}\n"},
        ("--cases-file=extra.yaml",),
        "extra.yaml:2: groups=2 does not divide the 3 input channels of input_shape [1, 3, 4, 4]: "
        "pick groups that divides C_in."),
    Bad("cases-file-unknown-family", "an unknown family",
        {"extra.yaml": f"- {BACKWARD}, family: conv_sideways}}\n"}, ("--cases-file=extra.yaml",),
        "extra.yaml:1: unknown family 'conv_sideways'; use one of conv_backward, conv_forward, isolated, "
        "isolated_onnx, model, module, onnx_model, onnx_node, opinfo, opinfo_grad, reduced, torch_mlir"),
    Bad("cases-file-module-path", "a module case whose `module` is not `package.module:attr`",
        {"extra.yaml": "- {family: module, module: models.Net, inputs: [{shape: [2]}]}\n"},
        ("--cases-file=extra.yaml",),
        "extra.yaml:1: module must be 'package.module:attr' (an nn.Module class or a function that returns one), "
        "not 'models.Net'"),
    Bad("cases-file-module-input-dtype", "a module case input of an unknown dtype",
        {"extra.yaml": "- {family: module, module: 'models:Net', inputs: [{shape: [2], dtype: float8}]}\n"},
        ("--cases-file=extra.yaml",),
        "extra.yaml:1: inputs[0]: dtype 'float8' is not one of float32, float64, float16, bfloat16, int64, int32, "
        "int16, int8, uint8, bool"),
    Bad("torch-mlir-suite-elsewhere", "`--torch-mlir-suite` naming a directory without the suite",
        {}, ("--torch-mlir-suite=nowhere",),
        "--torch-mlir-suite=nowhere: holds no torch_mlir_e2e_test package (registry.py and test_suite/); pass the "
        "directory that holds it: projects/pt1/python in a torch-mlir checkout"),
    # The row needs `multiprocess` to be absent, and the venv may have it (the torch-mlir-suite
    # extra installs it). So the project shadows it: `absent/` comes first on the run's PYTHONPATH,
    # ahead of site-packages, and its `multiprocess` raises exactly what Python raises for a package
    # that is not installed (the same message, `name` set), whether or not the real one is there.
    Bad("torch-mlir-suite-needs-multiprocess", "a torch-mlir suite whose framework.py needs `multiprocess`",
        {"suite/torch_mlir_e2e_test/__init__.py": "", "suite/torch_mlir_e2e_test/test_suite/__init__.py": "",
         "suite/torch_mlir_e2e_test/registry.py": "from .framework import Test  # noqa\n",
         "suite/torch_mlir_e2e_test/framework.py": "import multiprocess  # noqa\n",
         "absent/multiprocess/__init__.py":
             "raise ModuleNotFoundError(\"No module named 'multiprocess'\", name=\"multiprocess\")\n"},
        ("--torch-mlir-suite=suite",),
        "torch-mlir suite: listing the tests of torch-mlir's e2e suite in suite failed: ModuleNotFoundError: No "
        "module named 'multiprocess'; pip install multiprocess (torch-mlir's framework.py imports it)",
        path=("absent",)),
    Bad("families-missing-module", "an `e2e_families` entry whose module does not exist",
        {"pytest.ini": f"{INI}e2e_families = nothere.families:FAMILIES\n"}, (),
        "e2e_families entry 'nothere.families:FAMILIES': loading it failed (ModuleNotFoundError: No module named "
        "'nothere'); fix the entry or the module"),
    Bad("families-no-colon", "an `e2e_families` entry that names no object",
        {"pytest.ini": f"{INI}e2e_families = families/mine.py\n"}, (),
        "e2e_families entry 'families/mine.py': not an object path; write it as package.module:NAME or "
        "path/to/file.py:NAME"),
    Bad("families-not-a-family", "an `e2e_families` entry naming something that is not a Family",
        {"pytest.ini": f"{INI}e2e_families = mine.py:FAMILIES\n", "mine.py": "FAMILIES = 3\n"}, (),
        "e2e_families entry 'mine.py:FAMILIES': it is int 3, not a harness.families.interface.Family or a "
        "non-empty list of them; fix the entry or the module"),
    Bad("families-name-taken", "an `e2e_families` family named like a built-in one",
        {"pytest.ini": f"{INI}e2e_families = mine.py:FAMILY\n", "mine.py": TAKEN_FAMILY}, (),
        "e2e_families entry 'mine.py:FAMILY': family 'opinfo' is already registered (built in, or by another "
        "package); rename the family"),
    Bad("families-ini-with-options", "an `e2e_families` family that declares options",
        {"pytest.ini": f"{INI}e2e_families = mine.py:FAMILY\n", "mine.py": OPTIONED_FAMILY}, (),
        "e2e_families entry 'mine.py:FAMILY': family 'mine' declares options, which pytest must know before it "
        "reads the ini; register the family through an entry point"),
    Bad("ini-opinfo-samples", "ini `e2e_opinfo_samples` that is not first, all or a number",
        {"pytest.ini": f"{INI}e2e_opinfo_samples = 0\n"}, (),
        "e2e_opinfo_samples = 0: use first, all, or a positive number"),
    Bad("cases-file-opinfo-unknown-op", "an OpInfo op the installed torch does not have",
        {"extra.yaml": "- {family: opinfo, op: absx, sample_index: 0}\n"}, ("--cases-file=extra.yaml",),
        "extra.yaml:1: torch 2.13.0+cpu has no OpInfo 'absx'; did you mean abs?"),
    Bad("cases-file-onnx-node-unknown-test", "an ONNX node test the installed onnx does not have",
        {"extra.yaml": "- {family: onnx_node, test: test_absx}\n"}, ("--cases-file=extra.yaml",),
        "extra.yaml:1: onnx 1.23.2 has no node test 'test_absx' (did you mean test_abs, test_asin, test_acos?); "
        "the names are those of onnx.backend.test.case.node.collect_testcases", needs="onnx"),
    Bad("cases-file-onnx-model-missing", "an `onnx_model` entry whose model file does not exist",
        {"extra.yaml": MODEL_ENTRY % "nothere.onnx", "x.npy": int_array_npy}, ("--cases-file=extra.yaml",),
        "extra.yaml:1: model nothere.onnx does not exist: give the path of the .onnx file, relative to the cases file"),
    Bad("cases-file-onnx-model-not-onnx", "an `onnx_model` entry whose model file is not ONNX",
        {"extra.yaml": MODEL_ENTRY % "notes.onnx", "notes.onnx": "these are notes\n", "x.npy": int_array_npy},
        ("--cases-file=extra.yaml",),
        "extra.yaml:1: notes.onnx is not an ONNX model (DecodeError: Error parsing message with type "
        "'onnx.ModelProto': Wire format was corrupt)", needs="onnx"),
    Bad("cases-file-onnx-model-input-mismatch", "`onnx_model` input files that do not match the model's inputs",
        {"extra.yaml": MODEL_ENTRY % "relu.onnx", "relu.onnx": relu_model, "x.npy": int_array_npy},
        ("--cases-file=extra.yaml",),
        "extra.yaml:1: x.npy does not fit input 'x' (float[2,3]) of relu.onnx: its dtype is int64, not float32; "
        "give a file of that dtype and shape", needs="onnx"),
    Bad("cases-file-opinfo-changed-sample", "an OpInfo sample whose fingerprint has changed",
        {"extra.yaml": "- {family: opinfo, op: abs, sample_index: 0, fingerprint: 'float32[1] #0'}\n"},
        ("--cases-file=extra.yaml",),
        "extra.yaml:1: OpInfo 'abs' sample 0 at float32 has changed: torch 2.13.0+cpu gives fingerprint "
        "'float32[20, 20] #57690efdbed7', not 'float32[1] #0'"),
    Bad("opinfo-samples", "`--opinfo-samples` that is not first, all or a number", {}, ("--opinfo-samples=some",),
        "--opinfo-samples=some: use first, all, or a positive number"),
    Bad("durations-missing", "a `--durations-from` file that does not exist", {}, ("--durations-from=nope.json",),
        "--durations-from=nope.json: cannot read it (No such file or directory); pass a JSON report or a "
        "durations file"),
    Bad("durations-not-durations", "a `--durations-from` file that is neither a report nor durations",
        {"durations.json": "[1, 2]\n"}, ("--durations-from=durations.json",),
        "--durations-from=durations.json: neither a JSON report nor a durations file; pass a --report-json file "
        "or what python -m harness durations writes"),
    Bad("dtypes", "`--dtypes` with an unknown dtype", {}, ("--dtypes=float8",),
        "--dtypes=float8: float8 is not a floating dtype: use some of float32, float64, float16, bfloat16"),
    Bad("cases-file-unknown-key", "an unknown parameter",
        {"extra.yaml": f"- {BACKWARD}, strides: 2}}\n"}, ("--cases-file=extra.yaml",),
        "extra.yaml:1: unknown key 'strides'; allowed keys are bias, dilation, dtype, "
        "dynamic_dims, groups, input_shape, output_mask, output_padding, padding, stride, transposed, "
        "unsized_grad_bias, weight_shape"),
    Bad("cases-file-missing-key", "a missing weight_shape",
        {"extra.yaml": "- {input_shape: [1, 2, 4, 4]}\n"}, ("--cases-file=extra.yaml",),
        "extra.yaml:1: weight_shape is missing: give it as a list of positive ints (PyTorch weight layout)."),
    Bad("cases-file-dtype", "an unsupported dtype",
        {"extra.yaml": f"- {BACKWARD}, dtype: int8}}\n"}, ("--cases-file=extra.yaml",),
        "extra.yaml:1: dtype 'int8' is not supported: use one of ['float32', 'float64', 'float16', 'bfloat16']."),
    Bad("cases-file-kernel-too-big", "a kernel larger than the input",
        {"extra.yaml": "- {input_shape: [1, 2, 4, 4], weight_shape: [2, 2, 9, 9]}\n"}, ("--cases-file=extra.yaml",),
        "extra.yaml:1: input_shape [1, 2, 4, 4] with kernel [9, 9], stride [1, 1], padding [0, 0], dilation [1, 1] "
        "gives output spatial size [-4, -4]: the dilated kernel does not fit in the padded input, so change them "
        "so every output size is >= 1."),
    Bad("cases-file-timeout", "a zero timeout",
        {"extra.yaml": f"- {BACKWARD}, timeout: 0}}\n"}, ("--cases-file=extra.yaml",),
        "extra.yaml:1: case conv_backward/cases_file/extra_0: timeout must be a positive, finite number of "
        "seconds, not 0"),
    Bad("cases-file-malformed-yaml", "malformed YAML",
        {"extra.yaml": "- {input_shape: [1, 2\n"}, ("--cases-file=extra.yaml",),
        "extra.yaml:2: malformed YAML (expected ',' or ']', but got '<stream end>'); fix the syntax"),
    Bad("cases-file-malformed-json", "malformed JSON", {"extra.json": "[{"}, ("--cases-file=extra.json",),
        "extra.json: cannot read JSON (Expecting property name enclosed in double quotes: line 1 column 3 (char 2))"),
    Bad("cases-file-duplicate-names", "the same name in two cases files",
        {"a.yaml": f"- {BACKWARD}, name: same}}\n", "b.yaml": f"- {BACKWARD}, name: same}}\n"},
        ("--cases-file=a.yaml", "--cases-file=b.yaml"),
        "conv_backward/cases_file/same: two cases share this id; rename one (ids must be unique)"),
    # ---------------------------------------------------------------- case modules
    Bad("case-module-bad-case", "a case module declaring a bad case",
        {"cases/broken.py": "from harness.families.conv import conv_forward_case\n"
                            "CASES = [conv_forward_case('x', input_shape=[1, 2, 4, 4], weight_shape=[2, 2, 9, 9])]\n"},
        (), "cases/broken.py: conv_forward/2d/x: input_shape [1, 2, 4, 4] with kernel [9, 9], stride [1, 1], "
            "padding [0, 0], dilation [1, 1] gives output spatial size [-4, -4]: the dilated kernel does not fit "
            "in the padded input, so change them so every output size is >= 1."),
    Bad("case-module-without-cases", "a case module without CASES", {"cases/broken.py": "X = 1\n"}, (),
        "cases/broken.py: a case module must define CASES, a list of harness.api.Case, or a function "
        "cases(options) that returns one"),
    # ---------------------------------------------------------------- report and artifact paths
    Bad("report-json-missing-dir", "`--report-json` in a missing directory", {},
        ("--report-json=no/such/report.json",),
        "--report-json=no/such/report.json: cannot write there; create the directory or pick another path"),
    Bad("report-json-under-a-file", "`--report-json` under a file", {"afile": "x\n"},
        ("--report-json=afile/report.json",),
        "--report-json=afile/report.json: cannot write there; create the directory or pick another path"),
    Bad("report-json-is-a-directory", "`--report-json` naming a directory", {"adir/x": ""},
        ("--report-json=adir",),
        "--report-json=adir: cannot write there; create the directory or pick another path"),
    Bad("report-md-missing-dir", "`--report-md` (or `--report-html`) in a missing directory", {},
        ("--report-md=no/such/report.md",),
        "--report-md=no/such/report.md: cannot write there; create the directory or pick another path"),
    Bad("artifacts-dir-under-a-file", "`--artifacts-dir` that cannot be created", {"afile": "x\n"},
        ("--artifacts-dir=afile/bundles",),
        "--artifacts-dir=afile/bundles: cannot create it (Not a directory); pick another directory"),
    Bad("artifacts-dir-is-a-file", "`--artifacts-dir` naming a file", {"afile": "x\n"},
        ("--artifacts-dir=afile",),
        "--artifacts-dir=afile: cannot create it (File exists); pick another directory"),
    # ---------------------------------------------------------------- option values
    Bad("case-timeout-zero", "`--case-timeout=0`", {}, ("--case-timeout=0",),
        "--case-timeout=0: must be a positive, finite number of seconds"),
    Bad("case-timeout-nan", "`--case-timeout=nan`", {}, ("--case-timeout=nan",),
        "--case-timeout=nan: must be a positive, finite number of seconds"),
    Bad("case-timeout-inf", "`--case-timeout=inf`", {}, ("--case-timeout=inf",),
        "--case-timeout=inf: must be a positive, finite number of seconds"),
    Bad("case-timeout-text", "`--case-timeout=abc`", {}, ("--case-timeout=abc",),
        "argument --case-timeout: invalid float value: 'abc'", ARGPARSE),
    Bad("artifacts-bogus", "`--artifacts=bogus`", {}, ("--artifacts=bogus",),
        "argument --artifacts: invalid choice: 'bogus' (choose from 'unexpected', 'all')", ARGPARSE),
    Bad("memory-limit-zero", "`--memory-limit=0`", {}, ("--memory-limit=0",),
        "--memory-limit=0: must be a positive, finite number"),
    Bad("rerun-failures-negative", "`--rerun-failures=-1`", {}, ("--rerun-failures=-1",),
        "--rerun-failures=-1: must be 0 or more reruns"),
    Bad("history-not-a-database", "`--history=FILE` where FILE is not a history database",
        {"history.db": "not a database at all\n"}, ("--history=history.db",),
        "--history: history.db: is not a history database (not a DuckDB file); move it away, or pass another "
        "path, and record the runs again"),
    Bad("recycle-after-zero", "`--recycle-after=0`", {}, ("--recycle-after=0",),
        "--recycle-after=0: must be a positive, finite number"),
    Bad("recycle-after-fraction", "`--recycle-after=1.5`", {}, ("--recycle-after=1.5",),
        "argument --recycle-after: invalid int value: '1.5'", ARGPARSE),
    Bad("recycle-rss-negative", "`--recycle-rss=-3`", {}, ("--recycle-rss=-3",),
        "--recycle-rss=-3: must be a positive, finite number"),
    Bad("perf-threads-zero", "`--perf-threads=0`", {}, ("--perf", "--perf-threads=0"),
        "--perf-threads=0: must be a positive, finite number"),
    Bad("perf-budget-negative", "`--perf-budget=-1`", {}, ("--perf", "--perf-budget=-1"),
        "--perf-budget=-1: must be a positive, finite number of seconds"),
    Bad("perf-target-above-one", "`--perf-target=5` (a fraction is meant: 0.05)", {}, ("--perf", "--perf-target=5"),
        "--perf-target=5: must be a fraction between 0 and 1, e.g. 0.05"),
    Bad("assume-version-without-version", "`--assume-version=torch-mlir` (no version)", {},
        ("--assume-version=torch-mlir",),
        "--assume-version=torch-mlir: not NAME=VERSION with a PEP 440 version; "
        "write e.g. --assume-version=torch-mlir=20261001"),
    Bad("assume-version-unknown-name", "`--assume-version=tensorflow=2` (a name no condition knows)", {},
        ("--assume-version=tensorflow=2",),
        "--assume-version=tensorflow=2: unknown name 'tensorflow'; use one of iree-base-compiler, "
        "iree-base-runtime, numpy, onnx, onnxruntime, onnxscript, python, torch, torch-mlir"),
    Bad("misspelt-option", "a misspelt option", {}, ("--bakend=eager",),
        "unrecognized arguments: --bakend=eager", ARGPARSE),
    # ------------------------------------------- found by this table, fixed (each was a traceback or a wrong line)
    Bad("case-module-syntax-error", "a case module with a syntax error", {"cases/broken.py": "CASES = [\n"}, (),
        "cases/broken.py:1: syntax error ('[' was never closed); fix the module"),
    Bad("case-module-import-error", "a case module importing a missing module",
        {"cases/broken.py": "import not_a_module\nCASES = []\n"}, (),
        "cases/broken.py: importing it failed (ModuleNotFoundError: No module named 'not_a_module'); "
        "fix the module or move it out of the cases directory"),
    Bad("case-module-family-not-installed", "a case module whose cases name a family no entry point declares "
        "(an editable install older than the family: it was an INTERNALERROR)",
        {"cases/ghost.py": "from harness.case_data import Case\nCASES = [Case('ghost/a', 'ghost', {})]\n"}, (),
        "cases/ghost.py: its cases are of family 'ghost', which no installed entry point declares (an install "
        "older than the family?); pip install -e . again in the checkout, or install the package that declares "
        "the family"),
    Bad("cases-file-report-without-params", "a JSON report whose results lack `params`, as `--cases-file`",
        {"old.json": json.dumps({"results": [{"case": "conv_backward/2d/x"}]})}, ("--cases-file=old.json",),
        "old.json: a report's results must each have 'case' and 'params'; pass a report written by --report-json"),
    Bad("cases-file-entry-not-a-mapping", "a cases-file entry that is not a mapping",
        {"extra.yaml": "- 3\n"}, ("--cases-file=extra.yaml",),
        "extra.yaml entry 1: each entry must be a mapping of parameters"),
    Bad("config-requires-a-string", "`requires: torch` (a string, not a list)",
        {"configs/broken.yaml": "name: broken\nclass: a:B\nrequires: torch\n"}, ("--backend=broken",),
        "configs/broken.yaml: requires must be a list of distribution names, not 'torch'; "
        "write requires: [torch, torch-mlir], or {distribution: module} where the import name differs"),
    Bad("config-memory-limit", "a negative `memory_limit_mb`",
        {"configs/broken.yaml": "name: broken\nclass: a:B\nmemory_limit_mb: -1\n"}, (),
        "configs/broken.yaml: memory_limit_mb must be a positive, finite number of MiB, not -1"),
    Bad("backend-empty", "`--backend=,` (no backend)", {}, ("--backend=,",),
        "--backend: no backend named; give one or more names, e.g. --backend=linalg-on-tensors"),
    Bad("configs-dir-missing", "a `--configs-dir` that does not exist", {}, ("--configs-dir=nope",),
        "--configs-dir=nope: no such directory"),
    Bad("xfail-dir-missing", "a mistyped `--xfail-dir`", {}, ("--xfail-dir=xfial",),
        "--xfail-dir=xfial: no such directory"),
    Bad("crash-sets-dir-missing", "a mistyped `--crash-sets-dir`", {}, ("--crash-sets-dir=nope",),
        "--crash-sets-dir=nope: no such directory"),
]


def run_bad(bad: Bad, root: Path) -> tuple[int, str, bool]:
    """(exit status, stdout + stderr, whether a report was written) of pytest on a project with the row's files."""
    root.mkdir(parents=True)
    project = Project(root)
    for relpath, text in bad.files.items():
        path = root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        if callable(text):
            path.write_bytes(text())
        else:
            path.write_text(text)
    reported = any(a.startswith("--report-json") for a in bad.args)
    args = bad.args if reported else ("--report-json=report.json", *bad.args)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*(str(root / d) for d in bad.path), python_path_env()]))
    for name in ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "PYTEST_CURRENT_TEST"):
        env.pop(name, None)
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "harness.plugin", "-p", "no:cacheprovider", *args],
                          cwd=project.path, env=env, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    return done.returncode, done.stdout + "\n" + done.stderr, (root / "report.json").exists()


class _RunOnDemand(dict):
    """Each row run when its test asks for it."""

    def __init__(self, base: Path):
        super().__init__()
        self.base, self.rows = base, {bad.id: bad for bad in BAD}

    def __missing__(self, key: str) -> tuple[int, str, bool]:
        self[key] = run_bad(self.rows[key], self.base / key)
        return self[key]


@pytest.fixture(scope="module")
def bad_runs(request, tmp_path_factory) -> dict[str, tuple[int, str, bool]]:
    """Runs of the rows selected in this session: under pytest-xdist each worker runs the rows it
    is given (every worker holds every item, so running them all ahead ran each row once per
    worker); in one process, all of them ahead, two at a time."""
    base = tmp_path_factory.mktemp("bad_inputs")
    if hasattr(request.config, "workerinput"):
        return _RunOnDemand(base)
    rows = [item.callspec.params["bad"] for item in request.session.items
            if getattr(item, "originalname", None) == "test_bad_input_gives_its_exact_line"
            and item.path == request.path]
    selected = [bad for bad in rows if not (bad.needs and missing([bad.needs]))]   # the others skip
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = {bad.id: pool.submit(run_bad, bad, base / bad.id) for bad in selected}
        return {key: future.result() for key, future in futures.items()}


def error_line(bad: Bad, output: str) -> str:
    """The row's one error line, without "ERROR: " or "<prog>: error: "."""
    errors = [line for line in output.splitlines() if line.startswith("ERROR: ")]
    assert len(errors) == 1, output[-3000:]
    if bad.kind == ARGPARSE:
        assert errors[0].startswith("ERROR: usage: "), errors[0]
        found = [m.group(1) for m in (re.match(r"^(?:pytest|__main__\.py|python -m pytest): error: (.*)$", line)
                                      for line in output.splitlines()) if m]
        assert len(found) == 1, output[-3000:]
        return found[0]
    return errors[0].removeprefix("ERROR: ")


def _rows() -> list:
    return [pytest.param(bad, id=bad.id,
                         marks=([pytest.mark.xfail(strict=True, reason=f"harness bug: {bad.bug}")] if bad.bug else [])
                         + ([needs(bad.needs)] if bad.needs else []))
            for bad in BAD]


@pytest.mark.e2e
@pytest.mark.parametrize("bad", _rows())
def test_bad_input_gives_its_exact_line(bad_runs, bad):
    ret, output, wrote_report = bad_runs[bad.id]
    assert "Traceback" not in output and "INTERNALERROR" not in output, output[-3000:]
    assert ret == 4, f"exit status {ret}\n{output[-3000:]}"
    line = error_line(bad, output)
    if bad.bug:
        assert line.startswith(bad.line), line
        assert not bad.absent or bad.absent not in line, line
    else:
        assert line == bad.line
    assert not wrote_report


def test_every_row_has_a_distinct_id_and_description():
    assert len({b.id for b in BAD}) == len(BAD)
    assert all(b.what and b.line for b in BAD)


def test_the_docs_table_shows_every_line():
    section = (Path(__file__).resolve().parents[1] / "docs" / "reference" / "bad-input.md").read_text()
    for bad in BAD:
        if not bad.bug:
            prefix = "pytest: error: " if bad.kind == ARGPARSE else "ERROR: "
            assert f"| `{prefix}{bad.line}` |" in section, bad.id
