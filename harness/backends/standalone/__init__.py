"""The backend half of a repro bundle's repro.py, one real Python file per backend.

A backend's `standalone(program)` (harness.backend_interface) names one of these files and the JSON-able
constants it needs; the worker copies the file into the bundle as backend_repro.py and writes the
constants into repro.json. Each file defines

    compile_and_run(model, example_inputs, dynamic_shapes, input_sets, constants) -> [outputs per input set]

with torch and the backend's own package only: nothing here imports the harness, and the harness
never imports these modules (they run in the bundle, outside it).
"""
