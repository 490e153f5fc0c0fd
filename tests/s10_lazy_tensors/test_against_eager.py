"""Common ops on lazy tensors against the same ops in eager CPU torch: values, dtypes and shapes
forward, and gradients backward. Whatever path an op takes (a rule, a decomposition, the CPU),
the answer must be eager torch's."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from stages.s10_lazy_tensors import torch_xla

_g = torch.Generator().manual_seed(0)
X = torch.randn(2, 3, 4, generator=_g)
W = torch.randn(4, 5, generator=_g)
IDX = torch.tensor([[0, 2], [1, 1]])
MASK = torch.randn(2, 3, 4, generator=_g) > 0

FORWARD = {  # f(x, w, idx, mask)
    "slice": lambda x, w, i, m: x[:, 1:, ::2],
    "negative index": lambda x, w, i, m: x[-1],
    "transpose": lambda x, w, i, m: x.transpose(0, 2),
    "permute": lambda x, w, i, m: x.permute(2, 0, 1).contiguous(),
    "reshape": lambda x, w, i, m: x.reshape(6, 4),
    "cat": lambda x, w, i, m: torch.cat([x, x * 2], dim=1),
    "stack": lambda x, w, i, m: torch.stack([x, x], dim=-1),
    "batched matmul": lambda x, w, i, m: x @ w,
    "bmm": lambda x, w, i, m: torch.bmm(x, x.transpose(1, 2)),
    "softmax": lambda x, w, i, m: torch.softmax(x, 0),
    "log_softmax": lambda x, w, i, m: F.log_softmax(x, 1),
    "sum keepdim": lambda x, w, i, m: x.sum((0, 2), keepdim=True),
    "mean": lambda x, w, i, m: x.mean(-1),
    "max along a dim": lambda x, w, i, m: x.max(1).values,
    "argmax": lambda x, w, i, m: x.argmax(2),
    "argmax of all": lambda x, w, i, m: x.argmax(),
    "prod of all": lambda x, w, i, m: x.prod(),
    "all": lambda x, w, i, m: x.all(),
    "var": lambda x, w, i, m: x.var(1),
    "masked_fill": lambda x, w, i, m: x.masked_fill(m, -1.0),
    "where with a number": lambda x, w, i, m: torch.where(m, x, 0.0),
    "clamp": lambda x, w, i, m: x.clamp(-0.5, 0.5),
    "expand": lambda x, w, i, m: x[:, :1].expand(2, 3, 4) + 1,
    "gather": lambda x, w, i, m: torch.gather(x[0], 1, i),
    "index_select": lambda x, w, i, m: torch.index_select(x, 1, i[0]),
    "embedding": lambda x, w, i, m: F.embedding(i, w),
    "advanced index": lambda x, w, i, m: x[:, i[0]],
    "layer_norm": lambda x, w, i, m: F.layer_norm(x, (4,)),
    "gelu": lambda x, w, i, m: F.gelu(x),
    "linear": lambda x, w, i, m: F.linear(x, w.t()),
    "cumsum": lambda x, w, i, m: x.cumsum(1),
    "tril": lambda x, w, i, m: torch.tril(x[0]),
    "split": lambda x, w, i, m: torch.split(x, 2, dim=2)[1],
    "repeat": lambda x, w, i, m: x.repeat(1, 2, 1),
    "integer arithmetic": lambda x, w, i, m: (i * 3 + 1) // 2,
    "integer true division": lambda x, w, i, m: i / 2,
    "float to long": lambda x, w, i, m: (x * 10).long(),
    "bool sum": lambda x, w, i, m: m.sum(),
    "zeros_like": lambda x, w, i, m: torch.zeros_like(x) + 1,
    "full": lambda x, w, i, m: torch.full((2, 2), 3.5, device=x.device),
    "topk": lambda x, w, i, m: x.topk(2, dim=2).values,
    "max_pool2d, floor mode": lambda x, w, i, m: F.max_pool2d(x.unsqueeze(0), 2),
    "pad": lambda x, w, i, m: F.pad(x, (1, 1)),
    "diagonal_scatter": lambda x, w, i, m: torch.diagonal_scatter(x[0], x[1, :3, 0]),
    "a 0-d tensor": lambda x, w, i, m: x.sum() * torch.tensor(2.0, device=x.device),
    "slice from before the start": lambda x, w, i, m: x[:, -10:],
    "stepped slice from before the start": lambda x, w, i, m: x[-10:1, -10::3],
    "empty stepped slice": lambda x, w, i, m: x[:, 3:1:2],
    "gather of bools": lambda x, w, i, m: torch.gather(m[0], 1, i),
    "scatter a number, index smaller than self": lambda x, w, i, m: x[0].scatter(1, i, 5.0),
    "scatter a number along dim 0": lambda x, w, i, m: x[0].scatter(0, i, 5.0),
    "softmax of a 0-d tensor": lambda x, w, i, m: torch.softmax(x.sum(), 0),
    "log_softmax of a 0-d tensor": lambda x, w, i, m: F.log_softmax(x.sum(), -1),
    "max_pool2d, unbatched": lambda x, w, i, m: F.max_pool2d(x, 2),
    "vector @ matrix": lambda x, w, i, m: x[0, 0] @ w,
    "linear of a vector": lambda x, w, i, m: F.linear(x[0, 0], w.t()),
    "addmm, beta 0 ignores self": lambda x, w, i, m: torch.addmm(
        torch.full((2, 5), float("nan"), device=x.device), x[0, :2], w, beta=0),
    "addmm, beta and alpha": lambda x, w, i, m: torch.addmm(x[1, :2, :1], x[0, :2], w,
                                                            beta=0.5, alpha=2),
    "addmv, beta 0 ignores self": lambda x, w, i, m: torch.addmv(
        torch.full((3,), float("nan"), device=x.device), x[0], w[:, 0], beta=0),
    "baddbmm, beta 0 ignores self": lambda x, w, i, m: torch.baddbmm(
        torch.full((2, 3, 3), float("nan"), device=x.device), x, x.transpose(1, 2), beta=0),
}

GRADIENT = {  # a scalar loss of (x, w)
    "slice": lambda x, w: x[:, 1:, ::2].sum(),
    "transposed matmul": lambda x, w: (x.transpose(1, 2).reshape(-1, 3) @ w[:3]).sum(),
    "softmax": lambda x, w: (torch.softmax(x, -1) * torch.arange(4.0, device=x.device)).sum(),
    "layer_norm": lambda x, w: (F.layer_norm(x, (4,)) * w[:, 0]).sum(),
    "tanh, mse": lambda x, w: F.mse_loss(torch.tanh(x @ w), torch.ones(2, 3, 5, device=x.device)),
    "max": lambda x, w: x.max(-1).values.sum(),
    "where": lambda x, w: torch.where(x > 0, x, x * 0.1).sum(),
    "cat": lambda x, w: torch.cat([x, x * 2], 1).pow(2).mean(),
    "broadcast product": lambda x, w: (x[:, :1] * x).sum(),
    "rsqrt of a variance": lambda x, w: (x.pow(2).mean(-1) + 1e-5).rsqrt().sum(),
    "cross_entropy": lambda x, w: F.cross_entropy(
        x.reshape(6, 4), torch.tensor([0, 1, 2, 3, 0, 1], device=x.device)),
    "embedding": lambda x, w: F.embedding(torch.tensor([0, 2, 2], device=x.device), w).pow(2)
    .sum(),
    "conv2d": lambda x, w: F.conv2d(x.unsqueeze(0), torch.ones(2, 2, 2, 2, device=x.device))
    .sum(),
    "pad": lambda x, w: F.pad(x, (1, 2)).pow(2).sum(),
    "max_pool2d": lambda x, w: F.max_pool2d(x.unsqueeze(0), 2).sum(),
    "clamp": lambda x, w: x.clamp(-0.5, 0.5).pow(2).sum(),
    "bce with logits": lambda x, w: F.binary_cross_entropy_with_logits(x, (x > 0).float()),
    "silu": lambda x, w: F.silu(x @ w).sum(),
    "norm": lambda x, w: x.norm(dim=-1).sum(),
    "gather": lambda x, w: torch.gather(
        x, 2, torch.zeros(2, 3, 1, dtype=torch.long, device=x.device)).sum(),
    "softmax of a 0-d tensor": lambda x, w: torch.softmax(x.sum(), 0) + F.log_softmax(x.sum(), 0),
    "max_pool2d, unbatched": lambda x, w: F.max_pool2d(x, 2).pow(2).sum(),
    "vector @ matrix": lambda x, w: (x[0, 0] @ w).pow(2).sum(),
    "linear of a vector": lambda x, w: F.linear(x[1, 2], w.t()).pow(2).sum(),
    "embedding, scaled by frequency": lambda x, w: F.embedding(
        torch.tensor([0, 2, 2, 3, 2], device=x.device), w, scale_grad_by_freq=True).pow(2).sum(),
    "embedding, scaled by frequency, padded": lambda x, w: F.embedding(
        torch.tensor([[0, 2], [2, 1]], device=x.device), w, padding_idx=0,
        scale_grad_by_freq=True).pow(2).sum(),
}


@pytest.fixture
def dev():
    return torch_xla.device()


@pytest.mark.parametrize("name", list(FORWARD))
def test_forward_matches_eager_torch(dev, name):
    f = FORWARD[name]
    want = f(X, W, IDX, MASK)
    got = f(X.to(dev), W.to(dev), IDX.to(dev), MASK.to(dev)).cpu()
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", list(GRADIENT))
def test_gradients_match_eager_torch(dev, name):
    f = GRADIENT[name]
    x, w = X.clone().requires_grad_(), W.clone().requires_grad_()
    f(x, w).backward()
    xl, wl = X.to(dev).requires_grad_(), W.to(dev).requires_grad_()
    f(xl, wl).backward()
    for lazy, eager in ((xl, x), (wl, w)):
        if eager.grad is None:
            assert lazy.grad is None
        else:
            torch.testing.assert_close(lazy.grad.cpu(), eager.grad, rtol=1e-4, atol=1e-5)
