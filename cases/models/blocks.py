"""Small nn.Modules in the shapes compiler teams test end to end; cases/module.py names their inputs.

Importable in a worker as `harness.cases.models.blocks:<Name>`, from the wheel as from a checkout. This
directory is not a case module itself: only cases/*.py are.
"""
import torch
import torch.nn.functional as F
from torch import nn


class MLP(nn.Module):
    def __init__(self, features: int = 16, hidden: int = 32):
        super().__init__()
        self.up, self.down = nn.Linear(features, hidden), nn.Linear(hidden, features)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


class SelfAttention(nn.Module):
    """Multi-head self-attention with a causal mask, through scaled_dot_product_attention."""

    def __init__(self, dim: int = 16, heads: int = 2):
        super().__init__()
        self.heads = heads
        self.qkv, self.out = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)

    def forward(self, x):
        batch, length, dim = x.shape
        q, k, v = self.qkv(x).view(batch, length, 3, self.heads, dim // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(batch, length, dim))


class ConvBNReLU(nn.Module):
    def __init__(self, channels: int = 3, out: int = 8):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(channels, out, 3, padding=1), nn.BatchNorm2d(out)
        assert self.bn.running_mean is not None and self.bn.running_var is not None   # tracked by default
        with torch.no_grad():   # running statistics that are not the identity, so eval mode tests them
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 2.0)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


class ResidualLayerNorm(nn.Module):
    def __init__(self, dim: int = 16):
        super().__init__()
        self.norm, self.proj = nn.LayerNorm(dim), nn.Linear(dim, dim)

    def forward(self, x):
        return x + self.proj(self.norm(x))


class EmbeddingMean(nn.Module):
    """Token ids in, the mean of their embeddings out: an integer input."""

    def __init__(self, vocabulary: int = 50, dim: int = 8):
        super().__init__()
        self.table = nn.Embedding(vocabulary, dim)

    def forward(self, ids):
        return self.table(ids).mean(dim=1)


class Statistics(nn.Module):
    """Several outputs in a dict: a tensor, a 0-d tensor, a boolean tensor and a list."""

    def forward(self, x):
        return {"mean": x.mean(), "max_per_row": x.amax(dim=1), "positive": x > 0,
                "parts": [x[:, :2].sum(dim=1), x.std(dim=0)]}


class NanSafeSoftmax(nn.Module):
    """Softmax over rows that may hold NaN and -inf: NaN become -inf first, a row of -inf becomes zeros."""

    def forward(self, x):
        x = torch.where(torch.isnan(x), float("-inf"), x)
        weights = torch.softmax(x, dim=-1)
        return torch.nan_to_num(weights, nan=0.0)


class GRUEncoder(nn.Module):
    """A one-layer GRU: the last hidden state and every step's output, as a tuple."""

    def __init__(self, features: int = 4, hidden: int = 6):
        super().__init__()
        self.gru = nn.GRU(features, hidden, batch_first=True)

    def forward(self, x):
        output, hidden = self.gru(x)
        return output, hidden
