"""Backends: each a small class implementing harness.backend_interface.Backend, named by a configs/*.yaml."""
