"""A module case: a module of this package, its input described as data."""
from harness.api import module_case

LOGITS = [{"shape": [3, 10], "values": "normal", "std": 4.0}]

CASES = [
    module_case("temperature_softmax", "e2e_example.models:TemperatureSoftmax", LOGITS, init={"temperature": 0.5}),
]
