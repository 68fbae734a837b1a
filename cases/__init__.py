"""The harness's built-in cases, shipped in the wheel as the package `harness.cases`: from any
project, `pytest --pyargs harness.cases --backend=NAME` runs them (`-m conv_backward` picks a
family). Each module is a case module (harness.project_files.registry), read by path, not imported by name.
"""
