"""Edge cases against eager CPU torch: 0-d operands, empty inputs, narrow integer dtypes and
numbers outside their range, float16 gradients, and dtypes the device does not hold."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from stages.s10_lazy_tensors import torch_xla


@pytest.fixture
def dev():
    return torch_xla.device()


def _lazy(x, dev):
    return x.to(dev) if isinstance(x, torch.Tensor) else x


def _assert_same(got, want, **tolerance):
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _assert_same(g, w, **tolerance)
        return
    got = got.cpu()
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    torch.testing.assert_close(got, want, equal_nan=True, **tolerance)


def _check(f, *inputs, dev):
    """f on the CPU inputs (eager) and on the same inputs moved to the lazy device."""
    _assert_same(f(*[_lazy(x, dev) for x in inputs]), f(*inputs))


H = torch.tensor([0.1, 0.2, 0.3], dtype=torch.float16)
U8 = torch.tensor([1, 200, 255], dtype=torch.uint8)
I8 = torch.tensor([-128, -5, 0, 5, 127], dtype=torch.int8)
COMPARE_0D = {  # f(tensor, 0-d tensor); a 0-d tensor as an argument is moved to the device too
    "float16 == 0-d float32 on the CPU": (lambda a, s: a == torch.tensor(0.1), H, None),
    "float16 == 0-d float32": (lambda a, s: a == s, H, torch.tensor(0.1)),
    "float16 < 0-d float32 sum": (lambda a, s: a < s.sum(), H, torch.tensor([0.1, 0.1])),
    "uint8 > 0-d int8 on the CPU": (
        lambda a, s: a > torch.tensor(-1, dtype=torch.int8), U8, None),
    "uint8 > 0-d int8": (lambda a, s: a > s, U8, torch.tensor(-1, dtype=torch.int8)),
    "uint8 == 0-d int64 out of range": (lambda a, s: a == s, U8, torch.tensor(456)),
}


@pytest.mark.parametrize("name", list(COMPARE_0D))
def test_comparison_with_a_0d_tensor_computes_in_torchs_result_type(dev, name):
    f, a, s = COMPARE_0D[name]
    _check(f, a, s, dev=dev)


S = torch.tensor(2.5)
REDUCE_0D = {
    "sum(0)": lambda s: s.sum(0),
    "sum(-1, keepdim)": lambda s: s.sum(-1, keepdim=True),
    "sum([0])": lambda s: s.sum([0]),
    "mean(0)": lambda s: s.mean(0),
    "amax(0)": lambda s: s.amax(0),
    "any(0)": lambda s: (s > 1).any(0),
    "all(-1)": lambda s: (s > 1).all(-1),
    "logsumexp(0)": lambda s: s.logsumexp(0),
    "count_nonzero(0)": lambda s: torch.count_nonzero(s, 0),
    "aminmax(dim=0)": lambda s: tuple(torch.aminmax(s, dim=0)),
    "nansum(0)": lambda s: s.nansum(0),
    "nanmean(0)": lambda s: s.nanmean(0),
    "norm(dim=0)": lambda s: s.norm(dim=0),
}


@pytest.mark.parametrize("name", list(REDUCE_0D))
def test_reducing_a_0d_tensor_over_its_dim_0(dev, name):
    _check(REDUCE_0D[name], S, dev=dev)


ZERO = torch.tensor(0)
INDEX_0D = {
    "gather": lambda s, i: torch.gather(s, 0, i),
    "gather, dim -1": lambda s, i: torch.gather(s, -1, i),
    "scatter a number": lambda s, i: s.scatter(0, i, 7.0),
    "scatter_add": lambda s, i: s.scatter_add(0, i, s * 2),
}


@pytest.mark.parametrize("name", list(INDEX_0D))
def test_gather_and_scatter_on_a_0d_tensor(dev, name):
    _check(INDEX_0D[name], S, ZERO, dev=dev)


@pytest.mark.parametrize("op", ["cummax", "cummin"])
def test_cummax_and_cummin_gradients_of_a_0d_tensor(dev, op):
    grads = []
    for device in ("cpu", dev):
        s = S.to(device, copy=True).requires_grad_()
        (getattr(s, op)(0).values * 3).backward()
        grads.append(s.grad.cpu())
    _assert_same(grads[1], grads[0])


E = torch.empty(0, 4)
EMPTY = {
    "cat": lambda e: torch.cat([e, e]),
    "cat, dim 1": lambda e: torch.cat([e, e], 1),
    "stack": lambda e: torch.stack([e, e]),
    "stack, dim -1": lambda e: torch.stack([e, e], -1),
    "cat of 1-d empties": lambda e: torch.cat([e.flatten(), e.flatten()]),
    "cat of int empties": lambda e: torch.cat([e.long(), e.long()]),
}


@pytest.mark.parametrize("name", list(EMPTY))
def test_cat_and_stack_of_only_empty_tensors(dev, name):
    _check(EMPTY[name], E, dev=dev)


def test_layer_norm_of_float16_forward_and_backward(dev):
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(0)).half()
    w = torch.linspace(0.5, 1.5, 8).half()
    results = []
    for device in ("cpu", dev):
        xd, wd = (t.to(device, copy=True).requires_grad_() for t in (x, w))
        y = F.layer_norm(xd, (8,), wd)
        (y.float() * torch.arange(8.0, device=device)).sum().backward()
        results.append((y.detach().cpu(), xd.grad.cpu(), wd.grad.cpu()))
    _assert_same(results[1], results[0], rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("dtype, value", [("uint8", v) for v in (256, 300, -1, 1000)] +
                         [("int8", v) for v in (256, 300, -129, -300)])
def test_a_number_outside_the_dtype_wraps_as_in_torch(dev, dtype, value):
    """torch casts the number to the tensor's dtype, for comparisons too: uint8 < 256 is
    uint8 < 0, all False; uint8 + 300 adds 44."""
    x = {"uint8": U8, "int8": I8}[dtype]
    ops = [torch.add, torch.sub, torch.mul, torch.eq, torch.ne, torch.lt, torch.le, torch.gt,
           torch.ge]
    lazy = [op(x.to(dev), value) for op in ops]
    for op, got in zip(ops, lazy, strict=True):
        want = op(x, value)
        assert (got.dtype, got.shape) == (want.dtype, want.shape), op.__name__
    # one graph for all nine results
    got = torch.stack([t.long() for t in lazy]).cpu()
    assert got.tolist() == [op(x, value).long().tolist() for op in ops]


def test_scalar_tensor_defaults_to_the_default_dtype(dev):
    for kwargs in ({}, {"dtype": torch.int64}, {"dtype": torch.float16}):
        got = torch.scalar_tensor(3, device=dev, **kwargs)
        _assert_same(got, torch.scalar_tensor(3, **kwargs))


def test_int16_tensors_compute_as_in_torch(dev):
    x = torch.tensor([1, -2, 300, -32768], dtype=torch.int16)
    _check(lambda a: (a * 2 + 1, a.sum(), a > 0, a.float() / 3), x, dev=dev)
    _check(lambda a: (a * 1000).to(torch.int16), torch.tensor([7.5, -20.0]), dev=dev)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.uint16, torch.float8_e4m3fn], ids=str)
def test_an_unsupported_dtype_is_refused_by_name(dev, dtype):
    with pytest.raises(TypeError, match=rf"{dtype}.*torch\.float32"):
        torch.ones(3).to(dtype).to(dev)
    with pytest.raises(TypeError, match=rf"{dtype}.*torch\.float32"):
        torch.ones(3).to(dev).to(dtype)


def test_sgn_gradient_through_autograds_zero_tensor(dev):
    grads = []
    for device in ("cpu", dev):
        a = torch.tensor([1.0, -2.0, 0.5]).to(device).requires_grad_()
        (a.sgn() * a).sum().backward()
        grads.append(a.grad.cpu())
    _assert_same(grads[1], grads[0])


@pytest.mark.parametrize("dtype, value", [("uint8", -3), ("uint8", 300), ("int8", -129),
                                          ("int16", 40000)])
def test_true_division_by_a_number_outside_a_narrow_dtype_divides_by_that_number(dev, dtype,
                                                                                  value):
    """torch casts the number to the op's dtype, a float for a true division: uint8 / -3 is
    divided by -3.0, not by -3 wrapped into uint8 (253); uint8 + 300 still adds 44."""
    x = {"uint8": U8, "int8": I8, "int16": I8.short()}[dtype]
    _check(lambda a: (a / value, torch.true_divide(a, value), value / (a + 1), a + value,
                      a < value), x, dev=dev)


SCATTERS = {  # f(self, src): an int self written with a float or bool src keeps its dtype
    "select_scatter": lambda x, s: torch.select_scatter(x, s[:, 0], 1, -1),
    "select_scatter, dim 0": lambda x, s: torch.select_scatter(x, s[0], 0, 1),
    "slice_scatter, stepped": lambda x, s: torch.slice_scatter(x, s[:, :, :2], 2, 1, None, 2),
    "slice_scatter, from before the start": lambda x, s: torch.slice_scatter(x, s[:, :2], 1, -9, 2),
    "slice_scatter, all of it": lambda x, s: torch.slice_scatter(x, s, 0),
}


@pytest.mark.parametrize("name", list(SCATTERS))
@pytest.mark.parametrize("dtype", [torch.int64, torch.float32, torch.uint8], ids=str)
@pytest.mark.parametrize("src_dtype", [torch.float32, torch.bool], ids=str)
def test_select_and_slice_scatter_keep_selfs_dtype(dev, name, dtype, src_dtype):
    x = torch.arange(24).reshape(2, 3, 4).to(dtype)
    src = (torch.arange(24.0).reshape(2, 3, 4) * 0.7).to(src_dtype)  # no float < 0 to uint8
    _check(SCATTERS[name], x, src, dev=dev)


@pytest.mark.parametrize("f", [
    lambda x: torch.select_scatter(x, torch.zeros(4, device=x.device), 1, 0),
    lambda x: torch.select_scatter(x, torch.zeros(2, 4, device=x.device), 1, 3),
    lambda x: torch.slice_scatter(x, torch.zeros(2, 3, 3, device=x.device), 2, 0, 4, 2),
    lambda x: torch.slice_scatter(x, torch.zeros(2, 3, 2, device=x.device), 2, 0, 4, 0)])
def test_select_and_slice_scatter_refuse_what_torch_refuses(dev, f):
    x = torch.zeros(2, 3, 4)
    with pytest.raises((RuntimeError, IndexError)) as eager:
        f(x)
    with pytest.raises(type(eager.value)) as lazy:
        f(x.to(dev))
    assert str(lazy.value) == str(eager.value)


def test_abs_of_an_unsigned_tensor_is_itself(dev):
    _check(lambda a: (a.abs(), torch.abs(a) + 1), U8, dev=dev)


def test_float16_mean_divides_in_float32_and_rounds_once(dev):
    """torch's CPU mean of float16 divides the float32 sum, then rounds: 100 times 1000.0 has a
    mean of 1000.0, though its sum is inf in float16; equal, not close, on random rows."""
    y = torch.randn(64, 33, generator=torch.Generator().manual_seed(0)).half()
    for f, x in [(torch.mean, torch.full((100,), 1000.0).half()), (lambda t: t.mean(1), y),
                 (lambda t: t.mean((0, 1), keepdim=True), y)]:
        got, want = f(x.to(dev)).cpu(), f(x)
        assert (got.dtype, got.shape) == (want.dtype, want.shape)
        assert torch.equal(got, want)


def test_float16_softmax_computes_in_float32_and_rounds_once(dev):
    x = (torch.randn(64, 50, generator=torch.Generator().manual_seed(0)) * 4).half()
    got, want = torch.softmax(x.to(dev), -1).cpu(), torch.softmax(x, -1)
    assert got.dtype == want.dtype and torch.equal(got, want)


MATMULS = {  # f(long matrix, float matrix): torch refuses two dtypes, and bools
    "mm": lambda a, b: a @ b,
    "mm, float first": lambda a, b: b.t() @ a.t(),
    "vector @ matrix": lambda a, b: a[0] @ b,
    "bmm": lambda a, b: torch.bmm(a[None], b[None]),
    "addmm": lambda a, b: torch.addmm(torch.ones(2, 2, device=a.device), a, b.long()),
    "float16 @ float32": lambda a, b: a.half() @ b,
    "linear": lambda a, b: F.linear(b.t(), a),
    "bool @ bool": lambda a, b: (a > 0) @ (b > 0),
}


@pytest.mark.parametrize("name", list(MATMULS))
def test_matrix_products_refuse_what_torch_refuses(dev, name):
    a, b = torch.ones(2, 3, dtype=torch.long), torch.ones(3, 2)
    with pytest.raises((RuntimeError, NotImplementedError)) as eager:
        MATMULS[name](a, b)
    with pytest.raises(type(eager.value)) as lazy:
        MATMULS[name](a.to(dev), b.to(dev))
    assert str(lazy.value) == str(eager.value)
