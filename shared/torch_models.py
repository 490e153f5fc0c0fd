"""Small PyTorch models and one training loop, shared by stage 10's tests, page, demo and bench.

The MLP is the live anchor's (784-256-10, SGD lr 0.01, batch 64, 20 pre-generated batches,
`zero_grad()` to None); the CNN and the transformer block are small enough to train a few steps
in a test. `train(model, batches, device, ...)` runs the same loop on any device: on the lazy
device it ends each step with `sync()`, optionally with a stray `loss.item()` first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


def mlp(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))


def cnn(seed: int = 0) -> nn.Module:
    """Two convolutions (stride 1, then 2), ReLU, a 2x2 max pool, a linear head; 1x8x8 in."""
    torch.manual_seed(seed)
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(4, 4, 3, stride=2, padding=1), nn.ReLU(), nn.Flatten(),
                         nn.Linear(16, 10))


class Block(nn.Module):
    """Embedding, pre-norm self-attention (two heads) and a GELU MLP, then a vocabulary head."""

    def __init__(self, vocab: int = 50, dim: int = 16, heads: int = 2):
        super().__init__()
        self.emb, self.heads = nn.Embedding(vocab, dim), heads
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.ff = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.head = nn.Linear(dim, vocab)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.emb(idx)
        b, t, d = x.shape
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2)
                   for z in self.qkv(self.ln1(x)).split(d, dim=-1))
        att = torch.softmax(q @ k.transpose(-2, -1) / (d // self.heads) ** 0.5, dim=-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
        x = x + self.ff(self.ln2(x))
        return self.head(x)


def block(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return Block()


def batches(kind: str, steps: int, seed: int = 1) -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(seed)
    if kind == "mlp":
        return [(torch.randn(64, 784, generator=g), torch.randint(0, 10, (64,), generator=g))
                for _ in range(steps)]
    if kind == "cnn":
        return [(torch.randn(8, 1, 8, 8, generator=g), torch.randint(0, 10, (8,), generator=g))
                for _ in range(steps)]
    return [(torch.randint(0, 50, (4, 8), generator=g), torch.randint(0, 50, (32,), generator=g))
            for _ in range(steps)]


def loss_fn(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(out.reshape(-1, out.shape[-1]), y)


def train(model: nn.Module, data: Sequence[tuple[torch.Tensor, torch.Tensor]],
          device: Any = "cpu", lr: float = 0.01, sync: Callable[[], None] | None = None,
          stray_item: bool = False, on_ready: Callable[[], None] | None = None
          ) -> tuple[nn.Module, torch.Tensor]:
    """SGD over `data`; `sync()` ends each step (the lazy device's step barrier)."""
    model = model.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    if on_ready is not None:
        on_ready()  # e.g. clear the metrics once the model is on the device
    loss = torch.zeros(())
    for x, y in data:
        x, y = x.to(device), y.to(device)
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        if stray_item:
            loss.item()
        if sync is not None:
            sync()
    return model, loss
