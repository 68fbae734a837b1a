"""The content-addressed stage cache (`--cache`, `python -m harness cache`): a stage's output
(an exported program, an IR, a compiled module) kept under a key made of everything that
determines it, so that a rerun redoes only the stages whose inputs changed.

entries.py holds the directory of entries (atomic writes, checksums, least-recently-used
eviction); keys.py makes the keys (the stage's input fingerprint, the versions and builds of the
packages that compute it, the backend's options, the harness's version). Pure Python: the
controller and the worker both use it."""
