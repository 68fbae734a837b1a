"""A module case: a module of this package, its input described as data."""
from harness.api import family

MODULE = family("module")   # the built-in family; its params are documented in the harness's reference
LOGITS = [{"shape": [3, 10], "values": "normal", "std": 4.0}]

CASES = [
    MODULE.case("temperature_softmax", {"module": "e2e_example.models:TemperatureSoftmax", "inputs": LOGITS,
                                        "init": {"temperature": 0.5}}),
]
