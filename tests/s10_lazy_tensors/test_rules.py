"""Rules a training step needs, each checked against eager CPU torch with no CPU fallback:
`pow` (whose schema names its second operand `exponent`), and `scatter_add`, the transpose of
`gather` that a gathered loss's backward makes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from stages.s10_lazy_tensors import metrics, torch_xla


@pytest.fixture
def dev():
    return torch_xla.device()


def test_pow_by_a_number_and_by_a_tensor(dev):
    x = torch.tensor([0.5, 1.5, 2.0, 3.0])
    e = torch.tensor([2.0, 0.5, 3.0, -1.0])
    lazy = [(x.to(dev) ** 3).cpu(), torch.pow(x.to(dev), e.to(dev)).cpu(),
            torch.rsqrt(x.to(dev)).pow(2.5).cpu()]
    for got, want in zip(lazy, [x ** 3, torch.pow(x, e), torch.rsqrt(x).pow(2.5)], strict=True):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    assert metrics.executed_fallback_ops() == []


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scatter_add_sums_repeated_indices(dev, dim):
    g = torch.Generator().manual_seed(0)
    self = torch.randn(4, 5, generator=g)
    src = torch.randn(3, 5, generator=g) if dim == 0 else torch.randn(4, 6, generator=g)
    size = (3, 5) if dim == 0 else (4, 3)  # the index may be smaller than src and self
    index = torch.randint(0, self.shape[dim], size, generator=g)
    want = self.scatter_add(dim, index, src)
    got = self.to(dev).scatter_add(dim, index.to(dev), src.to(dev)).cpu()
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
    assert metrics.executed_fallback_ops() == []


def test_the_backward_of_a_gathered_loss_stays_on_the_device(dev):
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(2, 3, 7, generator=g)
    targets = torch.randint(0, 7, (2, 3), generator=g)

    def grad_of(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        x = x.detach().requires_grad_()
        loss = -torch.log_softmax(x, -1).gather(-1, y.unsqueeze(-1)).mean()
        loss.backward()
        return x.grad
    got = grad_of(logits.to(dev), targets.to(dev)).cpu()
    np.testing.assert_allclose(got.numpy(), grad_of(logits, targets).numpy(), rtol=1e-5,
                               atol=1e-7)
    assert metrics.executed_fallback_ops() == []
