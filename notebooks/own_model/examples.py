"""Small PyTorch models of notebook 10, each built seeded by a function without arguments (a
spec such as ``own_model/examples.py:transformer_block`` names it): a transformer
block, an RNN whose loop stops on the data, the same RNN written for graphs, a small CNN.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "MaskedRNN",
    "PaddedRNN",
    "SelfAttention",
    "SmallCNN",
    "TransformerBlock",
    "masked_rnn",
    "padded_rnn",
    "small_cnn",
    "transformer_block",
]


class SelfAttention(nn.Module):
    """Multi-head self-attention (``scaled_dot_product_attention``)."""

    def __init__(self, d_model: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = (
            self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        )
        y = F.scaled_dot_product_attention(q, k, v)  # (batch, heads, sequence, d / heads)
        return self.out(y.transpose(1, 2).reshape(b, t, d))


class TransformerBlock(nn.Module):
    """``x + attention(norm(x))``, then ``x + mlp(norm(x))`` (a pre-norm encoder block)."""

    def __init__(self, d_model: int = 64, heads: int = 4, expansion: int = 4):
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.attn = SelfAttention(d_model, heads)
        self.norm2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, expansion * d_model),
            nn.GELU(),
            nn.Linear(expansion * d_model, d_model),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class PaddedRNN(nn.Module):
    """Reads ``(batch, time, features)`` until a step is all zeros (padding), classifies."""

    def __init__(self, features: int = 16, hidden: int = 32, classes: int = 4):
        super().__init__()
        self.cell = nn.GRUCell(features, hidden)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.new_zeros(x.shape[0], self.cell.hidden_size)
        for t in range(x.shape[1]):
            step = x[:, t]
            if not step.any():  # the rest is padding: stop reading (decided by the data)
                break
            h = self.cell(step, h)
        return self.head(h)


class MaskedRNN(PaddedRNN):
    """:class:`PaddedRNN` for graphs: a sequence keeps its state once padding starts."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.new_zeros(x.shape[0], self.cell.hidden_size)
        done = torch.zeros(x.shape[0], 1, dtype=torch.bool, device=x.device)
        for t in range(x.shape[1]):
            step = x[:, t]
            done = done | ~step.any(dim=1, keepdim=True)  # padding reached in this sequence
            h = torch.where(done, h, self.cell(step, h))
        return self.head(h)


class SmallCNN(nn.Module):
    """Two conv-BatchNorm-ReLU blocks, global average pooling, a linear layer."""

    def __init__(self, channels: int = 16, classes: int = 10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, channels, 3, padding=1, bias=False),
            nn.BatchNorm2d(channels),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(channels, 2 * channels, 3, padding=1, bias=False),
            nn.BatchNorm2d(2 * channels),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(2 * channels, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.flatten(self.features(x), 1))


def _seeded(model_class: type[nn.Module], **kwargs) -> nn.Module:
    with torch.random.fork_rng():
        torch.manual_seed(0)
        return model_class(**kwargs).eval()


def transformer_block() -> TransformerBlock:  # inputs (batch, sequence, 64)
    return _seeded(TransformerBlock)


def padded_rnn() -> PaddedRNN:  # inputs (batch, time, 16)
    return _seeded(PaddedRNN)


def masked_rnn() -> MaskedRNN:
    return _seeded(MaskedRNN)


def small_cnn() -> SmallCNN:  # inputs (batch, 3, height, width)
    return _seeded(SmallCNN)
