"""Backends: each a small class implementing harness.backend.Backend, named by a configs/*.yaml."""
