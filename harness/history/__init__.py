"""The run history: every run's results in one embedded DuckDB file (store), the status of each
(case, backend) over it (status), and the views of both (harness.views.history_*).

`pytest --history=DB` and `python -m harness history ingest DB REPORT...` write it;
`python -m harness history show DB` reads it.
"""
