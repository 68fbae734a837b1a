"""torch-backend-e2e: an end-to-end test harness for PyTorch compiler backends.

The pytest process (the controller) imports only this package's light modules;
torch and the compilers are imported by worker processes (see harness.worker).
"""

__version__ = "0.7.0.dev0"   # CHANGELOG.md: the "Unreleased" section's version, until it is released
