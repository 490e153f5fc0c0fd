"""bfloat16 on the lazy device against eager CPU torch in bfloat16: bit-exact transfers, torch's
promotion, and values computed as torch's CPU kernels compute them (in float32, rounded once);
where a kernel rounds differently in its vectorized body and its scalar tail, within one
bfloat16 ulp."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from stages.s02_tracing import dtypes
from stages.s10_lazy_tensors import torch_xla
from stages.s10_lazy_tensors.tensor import to_numpy_dtype
from stages.s10_lazy_tensors.tensor_util import numpy_to_tensor, tensor_to_numpy

from .eager_oracle import assert_same

BF16 = torch.bfloat16


def _data(*shape, seed=0, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g) * scale).to(BF16)


X, Y, W = _data(5, 7), _data(5, 7, seed=1), _data(7, 3, seed=2)


def _ulps(got: torch.Tensor, want: torch.Tensor) -> float:
    """The largest difference in units of bfloat16's last place at the eager value."""
    g, w = got.double(), want.double()
    ulp = torch.exp2(torch.floor(torch.log2(w.abs().clamp_min(2.0**-126))) - 7)
    return float(((g - w).abs() / ulp).max())


def test_torch_bfloat16_is_stage_2s_bfloat16():
    assert to_numpy_dtype(BF16) == dtypes.bfloat16


def test_host_bits_cross_to_numpy_and_back_unchanged():
    bits = torch.arange(-2**15, 2**15, dtype=torch.int32).to(torch.int16)
    t = bits.view(BF16)  # every bfloat16: NaNs, infinities, subnormals, -0.0
    array = tensor_to_numpy(t)
    assert array.dtype == dtypes.bfloat16
    assert torch.equal(numpy_to_tensor(array).view(torch.int16), bits)


def test_upload_and_download_are_bit_exact():
    dev = torch_xla.device()
    bits = torch.arange(-2**15, 2**15, dtype=torch.int32).to(torch.int16)
    got = bits.view(BF16).to(dev).cpu()
    assert got.dtype == BF16
    assert torch.equal(got.view(torch.int16), bits)
    x = _data(3, 4).t()  # a non-contiguous host tensor, a 0-d one
    assert torch.equal(x.to(dev).cpu(), x)
    assert torch.equal(torch.tensor(-0.1, dtype=BF16).to(dev).cpu(), torch.tensor(-0.1, dtype=BF16))


def test_a_read_item_and_print_show_the_same_number():
    dev = torch_xla.device()
    x = torch.tensor([1.5, -0.1, 3e38], dtype=BF16)
    assert x.to(dev)[1].item() == x[1].item()
    printed = " ".join(repr(x.to(dev)).split()).replace(", device='ltc:0'", "")
    assert printed == " ".join(repr(x).split())
    assert "bf16[3]" in torch_xla.get_tensors_text([x.to(dev) * 3])


@pytest.mark.parametrize("f", [
    lambda d: X.to(d) + X.half().to(d),  # float32
    lambda d: X.to(d) + torch.arange(7, device=d),  # bfloat16
    lambda d: X.to(d) * torch.arange(7, device=d).int(),
    lambda d: X.to(d) + 0.1,  # bfloat16: 0.1 read in float32, the sum rounded once
    lambda d: X.to(d) * 0.1,
    lambda d: X.to(d) / 3.3,
    lambda d: 0.3 - X.to(d),
    lambda d: X.to(d) + torch.tensor(0.1, device=d),  # a 0-d float32: bfloat16
    lambda d: X.to(d) + Y.float().to(d),  # float32
    lambda d: X.to(d) == 0.1,
    lambda d: (X.to(d) > 0).to(BF16),
    lambda d: X.float().to(d).mul(1.001).to(BF16),
    lambda d: (X.to(d) * 10).int(),
    lambda d: torch.where(X.to(d) > 0, X.to(d), 0.1),
    lambda d: X.to(d).clamp(-0.3, 0.7),
    lambda d: torch.full((3,), 0.1, dtype=BF16, device=d),
], ids=["bf16+f16", "bf16+int", "bf16*int32", "bf16+float", "bf16*float", "bf16/float",
        "float-bf16", "bf16+0d", "bf16+f32", "eq", "from-bool", "from-f32", "to-int", "where",
        "clamp", "full"])
def test_promotion_and_elementwise_are_eager_torchs_bits(f):
    assert_same(f, torch_xla.device())


@pytest.mark.parametrize("f", [
    torch.add, torch.sub, torch.mul, torch.div, lambda t, _: t.exp(), lambda t, _: t.tanh(),
    lambda t, _: t.sigmoid(), lambda t, _: t.sin(), lambda t, _: t.erf(),
    lambda t, _: t.abs().log(), lambda t, _: t.abs().sqrt(), lambda t, _: t.abs() ** 0.3,
    lambda t, _: t ** 3, lambda t, _: t ** -2, lambda t, y: t.abs() ** y,
    lambda t, _: t.relu(), lambda t, _: F.gelu(t), lambda t, _: F.gelu(t, approximate="tanh"),
    lambda t, _: F.silu(t), lambda t, _: F.softshrink(t, 0.3),
], ids=["add", "sub", "mul", "div", "exp", "tanh", "sigmoid", "sin", "erf", "log", "sqrt",
        "pow-0.3", "pow-3", "pow-neg-2", "pow-tensor", "relu", "gelu", "gelu-tanh", "silu",
        "softshrink"])
def test_elementwise_ops_round_once_as_torchs_kernels(f):
    assert_same(lambda d: f(X.to(d), Y.to(d)), torch_xla.device())


@pytest.mark.parametrize("f", [
    lambda d: _data(2000, scale=3).to(d).sum(),
    lambda d: _data(2000, scale=3).to(d).mean(),
    lambda d: X.to(d).sum(1), lambda d: X.to(d).sum(0), lambda d: X.to(d).mean(0),
    lambda d: torch.ones(1000, dtype=BF16, device=d).sum(),  # 1000, not bfloat16's 256
    lambda d: X.to(d).amax(1),
], ids=["sum", "mean", "sum-1", "sum-0", "mean-0", "ones", "amax"])
def test_sums_accumulate_in_float32_and_round_once(f):
    assert_same(f, torch_xla.device())


@pytest.mark.parametrize("f", [
    lambda d: X.to(d) @ W.to(d),
    lambda d: torch.addmm(W[0].to(d), X.to(d), W.to(d)),
    lambda d: torch.bmm(X.to(d)[None], W.to(d)[None]),
    lambda d: X.to(d).softmax(1), lambda d: X.to(d).log_softmax(1),
    lambda d: X.to(d).log_softmax(0), lambda d: F.layer_norm(X.to(d), (7,)),
    lambda d: F.cross_entropy(X.to(d), torch.arange(5, device=d)),
], ids=["mm", "addmm", "bmm", "softmax", "log_softmax", "log_softmax-0", "layer_norm",
        "cross_entropy"])
def test_matmul_and_softmax_are_eager_torchs_bits(f):
    assert_same(f, torch_xla.device())


@pytest.mark.parametrize("f", [
    lambda d: torch.add(X.to(d), Y.to(d), alpha=0.3),
    lambda d: X.to(d).abs().rsqrt(),
    lambda d: X.to(d).softmax(0),
], ids=["add-alpha", "rsqrt", "softmax-0"])
def test_kernels_that_round_their_tail_otherwise_are_within_an_ulp(f):
    """torch's vectorized body and its scalar tail round these differently (the tail in
    bfloat16 steps): ours rounds once, as the body does."""
    want, got = f("cpu"), f(torch_xla.device()).cpu()
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    assert _ulps(got, want) <= 1


def test_pow_refuses_an_exponent_bfloat16_cannot_hold():
    assert_same(lambda d: torch.ones(2, dtype=BF16, device=d) ** 1e39, torch_xla.device())


def test_a_bfloat16_training_step_matches_eager_torch():
    """Linear, relu, Linear, cross entropy, backward and an SGD step, all in bfloat16."""
    results = []
    for dev in ("cpu", torch_xla.device()):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                    torch.nn.Linear(16, 4)).to(BF16).to(dev)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        x, target = _data(6, 8, seed=3).to(dev), torch.tensor([0, 1, 2, 3, 0, 1]).to(dev)
        loss = F.cross_entropy(model(x), target)
        loss.backward()
        grads = [p.grad.cpu() for p in model.parameters()]
        opt.step()
        torch_xla.sync()
        results.append((loss.detach().cpu(), grads, [p.detach().cpu() for p in model.parameters()]))
    (want_loss, want_grads, want_params), (loss, grads, params) = results
    assert loss.dtype == BF16 and _ulps(loss, want_loss) <= 1
    for got, want in zip(grads + params, want_grads + want_params, strict=True):
        assert (got.dtype, got.shape) == (want.dtype, want.shape)
        assert _ulps(got, want) <= 2
