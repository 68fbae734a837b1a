"""Precisions as an axis of the run: every case of a family that can honour it at each floating
dtype `--dtypes` names (harness.precision.axis)."""
