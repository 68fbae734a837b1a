"""A module the example project tests end to end as a module case (cases/module.py)."""
import torch
from torch import nn


class TemperatureSoftmax(nn.Module):
    """logits / temperature, then log_softmax: the temperature is a learned scalar."""

    def __init__(self, temperature: float = 2.0):
        super().__init__()
        self.temperature = nn.Parameter(torch.tensor(temperature))

    def forward(self, logits):
        return torch.log_softmax(logits / self.temperature, dim=-1)
