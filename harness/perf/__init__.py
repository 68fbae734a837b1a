"""Performance figures: how fast a backend's compiled code runs against eager, and whether a
difference between two lowerings or two runs is real. `stats` is the arithmetic (pure Python: the
worker and the controller both use it); `rounds` merges a case timed in several workers; `compare`
is `python -m harness perf compare`.
"""
