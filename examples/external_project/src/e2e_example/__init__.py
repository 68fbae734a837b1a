"""An example project's additions to torch-backend-e2e (see the project's README.md)."""
