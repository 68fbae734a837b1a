"""The registry, in the shape of torch-mlir's: a global list filled by a decorator."""
from typing import Callable

from .framework import Test

GLOBAL_TEST_REGISTRY = []
_SEEN_UNIQUE_NAMES = set()


def register_test_case(module_factory: Callable, timeout_seconds: int = 120):
    """Register the decorated `Name(module, tu)` as test `Name`; a second test of a name is an error."""

    def decorator(invoker):
        if invoker.__name__ in _SEEN_UNIQUE_NAMES:
            raise Exception(f"Duplicate test name: '{invoker.__name__}'")
        _SEEN_UNIQUE_NAMES.add(invoker.__name__)
        GLOBAL_TEST_REGISTRY.append(Test(unique_name=invoker.__name__, program_factory=module_factory,
                                         program_invoker=invoker, timeout_seconds=timeout_seconds))
        return invoker

    return decorator
