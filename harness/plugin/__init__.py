"""The pytest plugin, by concern as pytest splits its own: `options` (the command line and the
ini), `lifecycle` (the runner's life: families, settings, workers, the run order), `collection`
(case modules and discovered cases as items, each run in a worker), `reporting` (the records
and the report formats asked for), `update_expectations` (the expectation files a run proposes, or
rewrites) and `progress` (pytest's progress with the time left).

Loaded by the rootdir conftest.py, by `-p harness.plugin` and by the `pytest11` entry point of
the installed package; pytest loads the modules below through `pytest_plugins`, in an order where
none is imported by another before pytest imports it (lifecycle imports reporting): pytest rewrites
the asserts of a plugin module only when it imports the module itself, and warns otherwise. It
never imports torch: cases run in worker processes (harness.controller.pool, harness.worker).
"""
pytest_plugins = ["harness.plugin.options", "harness.plugin.collection", "harness.plugin.reporting",
                  "harness.plugin.lifecycle", "harness.plugin.progress"]
