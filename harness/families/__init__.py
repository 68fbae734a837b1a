"""The case families. The seam every family implements is harness.families.interface (re-exported
for other projects by harness.api); harness.families.loader loads them, the built-in ones in the
folders beside it through the same entry points as another package's.
"""
