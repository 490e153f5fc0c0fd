"""Neural-network ops against eager torch: embedding next to inf and NaN weights and
gradients, and float16 activations and their gradients, which torch's CPU kernels compute in
float32 and round once (softshrink's 0.3 read in float32, sigmoid an ulp closer)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from stages.s10_lazy_tensors import torch_xla
from tests.s10_lazy_tensors.eager_oracle import assert_same, outcome

INF, NAN = float("inf"), float("nan")


@pytest.fixture
def dev():
    return torch_xla.device()


def _weights(device, dtype=torch.float32):
    return torch.tensor([[INF, 2.0], [1.0, 3.0], [NAN, -INF], [4.0, 5.0]], device=device).to(dtype)


def _ids(device):
    return torch.tensor([[1, 3], [3, 1], [0, 1]], device=device)


def _embedding_grad(dtype=torch.float32, **kwargs):
    def f(d):
        w = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]], device=d)
        w = w.to(dtype).requires_grad_()
        g = torch.tensor([[[INF, 1.0], [2.0, 3.0]], [[4.0, 5.0], [NAN, 7.0]],
                          [[8.0, -INF], [9.0, 10.0]]], device=d).to(dtype)
        F.embedding(_ids(d), w, **kwargs).backward(g)
        return w.grad

    return f


EMBEDDING = {  # eager reads rows: 0 * inf (a one-hot matmul) would be NaN in the others
    "rows beside inf and NaN": lambda d: F.embedding(_ids(d), _weights(d)),
    "float16 rows": lambda d: F.embedding(_ids(d), _weights(d, torch.float16)),
    "padding_idx": lambda d: F.embedding(_ids(d), _weights(d), padding_idx=1),
    "a 0-d index": lambda d: F.embedding(torch.tensor(3, device=d), _weights(d)),
    "backward, inf and NaN gradients": _embedding_grad(),
    "backward, float16": _embedding_grad(torch.float16),
    "backward, padding_idx": _embedding_grad(padding_idx=3),
    "backward, negative padding_idx": _embedding_grad(padding_idx=-1),
    "backward, scaled by frequency": _embedding_grad(scale_grad_by_freq=True),
}


@pytest.mark.parametrize("name", list(EMBEDDING))
def test_embedding_reads_rows_as_eager_torch(name, dev):
    assert_same(EMBEDDING[name], dev)


def _f16(device):  # float16's 0.3 is 0.30004883, above a float32 0.3
    return torch.tensor([0.3, -0.3, 0.30005, 0.5, -0.5001, 1e-4, 0.29, 65504.0, -INF, INF, NAN],
                        device=device).half()


SHRINK = {
    "softshrink 0.3": lambda d: F.softshrink(_f16(d), 0.3),
    "softshrink -0.3 (refused)": lambda d: F.softshrink(_f16(d), -0.3),
    "softshrink 1e5 (refused)": lambda d: F.softshrink(_f16(d), 1e5),
    "softshrink of int64 (refused)": lambda d: F.softshrink(torch.ones(3, device=d).long(), 0.3),
    "softshrink -0.3, float32 (refused)": lambda d: F.softshrink(_f16(d).float(), -0.3),
}


@pytest.mark.parametrize("name", list(SHRINK))
def test_softshrink_reads_lambd_as_eager_torch(name, dev):
    assert_same(SHRINK[name], dev)


_X = [-8.0, -3.2, -1.1, -0.01, 0.0, 0.37, 1.7, 4.5, 9.0, -20.0, 20.0, 65504.0, -65504.0]


def _close(f, dev):
    """Eager's float16 values within an ulp (XLA's float32 exp and tanh are not torch's, so
    rounding to float16 may differ there), inf and NaN where eager has them, its dtype and
    shape; an ulp off in float16 before 1 - sigmoid is several after."""
    want, got = outcome(f, "cpu"), outcome(f, dev)
    assert isinstance(got, torch.Tensor), got
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    torch.testing.assert_close(got, want, equal_nan=True, rtol=2**-10, atol=2**-24)


def _values(fn):
    return lambda d: fn(torch.tensor(_X, device=d).half())


def _grads(fn):
    def f(d):
        x = torch.tensor(_X, device=d).half().requires_grad_()
        fn(x).backward(torch.full_like(x, 0.7))
        return x.grad

    return f


FLOAT16 = {  # torch's float16 kernels: float32 math, rounded once
    "gelu": _values(F.gelu),
    "gelu tanh": _values(lambda x: F.gelu(x, approximate="tanh")),
    "sigmoid's gradient": _grads(torch.sigmoid),
    "silu's gradient": _grads(F.silu),
    "mish's gradient": _grads(F.mish),
}


@pytest.mark.parametrize("name", list(FLOAT16))
def test_float16_activations_round_once_as_eager_torch(name, dev):
    _close(FLOAT16[name], dev)
