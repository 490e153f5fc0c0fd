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


def _x3(device):
    return torch.randn(2, 3, 4, generator=torch.Generator().manual_seed(0)).to(device)


SOFTMAX_DIMS = {  # torch's kernels wrap dim (softmax's meta kernel does not check it)
    **{f"softmax, dim {n}": lambda d, n=n: torch.softmax(_x3(d), n) for n in (3, -4, 5)},
    **{f"log_softmax, dim {n}": lambda d, n=n: F.log_softmax(_x3(d), n) for n in (3, -4, 5)},
    "softmax of a 0-d tensor, dim 3": lambda d: torch.softmax(_x3(d).sum(), 3),
    "softmax of a 0-d tensor, dim -2": lambda d: torch.softmax(_x3(d).sum(), -2),
}


@pytest.mark.parametrize("name", list(SOFTMAX_DIMS))
def test_softmax_refuses_a_dim_out_of_range_as_eager_torch(name, dev):
    assert_same(SOFTMAX_DIMS[name], dev)


def test_softmax_dim_out_of_range_says_what_torch_says(dev):
    with pytest.raises(IndexError, match=r"^Dimension out of range \(expected to be in range "
                                         r"of \[-3, 2\], but got 3\)$"):
        torch.softmax(_x3(dev), 3)


def _loss(fn, dtype):
    def f(d):
        x = torch.randn(3, 4, generator=torch.Generator().manual_seed(0)).to(d)
        return fn(x, torch.tensor([1, 0, 3], device=d).to(dtype))

    return f


TARGETS = {  # nll_loss takes an int64 or a uint8 target; its meta kernel, int32 and int64
    f"{fn.__name__}, {dtype} target": _loss(fn, dtype)
    for fn in (F.cross_entropy, F.nll_loss)
    for dtype in (torch.int32, torch.int16, torch.float32, torch.float16, torch.bool)
}


@pytest.mark.parametrize("name", list(TARGETS))
def test_nll_loss_refuses_a_target_dtype_as_eager_torch(name, dev):
    want = outcome(TARGETS[name], "cpu")
    assert isinstance(want, tuple), want
    assert outcome(TARGETS[name], dev) == want


def test_nll_loss_of_an_int32_target_says_what_torch_says(dev):
    with pytest.raises(RuntimeError, match="^expected target dtype to be Long or Byte, but got "
                                           "Int$"):
        F.cross_entropy(torch.ones(3, 4, device=dev), torch.tensor([1, 0, 3], device=dev).int())


@pytest.mark.parametrize("fn", [F.cross_entropy, F.nll_loss])
def test_nll_loss_takes_a_uint8_target_as_eager_torch(fn, dev):
    """uint8 as torch's kernel reads it: the loss and gradient of the same int64 target."""
    def f(d, dtype):
        x = torch.randn(3, 4, generator=torch.Generator().manual_seed(0)).to(d).requires_grad_()
        loss = fn(x, torch.tensor([1, 0, 3], device=d).to(dtype), ignore_index=0,
                  weight=torch.tensor([1.0, 2.0, 0.5, 3.0], device=d))
        loss.backward()
        return torch.cat([loss.reshape(1), x.grad.flatten()]).cpu()

    got = f(dev, torch.uint8)
    assert torch.equal(got, f(dev, torch.int64))
    torch.testing.assert_close(got, f("cpu", torch.uint8))


def _float16(shape, seed):
    return (torch.randn(*shape, generator=torch.Generator().manual_seed(seed)) * 4).half()


@pytest.mark.parametrize("shape, dim", [((64, 33), -1), ((64, 33), 0), ((4, 5, 33), 1), ((7,), 0)])
def test_float16_log_softmax_and_gradients_round_as_eager_torch(shape, dim, dev):
    """float16 in float32, rounded once (along the last dim the sum and its log are rounded to
    float16 first, as torch's kernel keeps them); the backward ops in float32 too (softmax's
    sum of products is added in another order: near a cancellation, a few ulps apart)."""
    x, g = _float16(shape, 0), _float16(shape, 1)
    aten = torch.ops.aten
    outs = {}
    for device in ("cpu", dev):
        y = aten._log_softmax(x.to(device), dim, False)
        s = aten._softmax(x, dim, False).to(device)
        outs[str(device)] = [o.cpu() for o in (
            y, aten._log_softmax_backward_data(g.to(device), y, dim, torch.float16),
            aten._softmax_backward_data(g.to(device), s, dim, torch.float16))]
    (y, dy, ds), (want_y, want_dy, want_ds) = outs[str(dev)], outs["cpu"]
    assert torch.equal(y, want_y) and torch.equal(dy, want_dy)
    torch.testing.assert_close(ds, want_ds, rtol=0, atol=1e-5)
