"""Modules and model registries the built-in case modules name (`harness.cases.models.blocks:MLP`)."""
