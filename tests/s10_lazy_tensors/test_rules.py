"""Rules a training step needs, each checked against eager CPU torch with no CPU fallback:
`pow` (whose schema names its second operand `exponent`), and `scatter_add`, the transpose of
`gather` that a gathered loss's backward makes; `atan2`."""

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


def test_atan2_over_four_quadrants_zeros_and_infinities_runs_on_the_device(dev):
    """torch.atan2 is one `atan2` node; int operands compute in float32, as eager torch's."""
    inf = float("inf")
    y = torch.tensor([1.0, 1.0, -1.0, -1.0, 0.0, -0.0, 0.0, -0.0, inf, -inf, inf, 2.0])
    x = torch.tensor([1.0, -1.0, -1.0, 1.0, 0.0, 0.0, -0.0, -0.0, 1.0, -inf, inf, -inf])
    got = torch.atan2(y.to(dev), x.to(dev)).cpu()
    np.testing.assert_allclose(got.numpy(), torch.atan2(y, x).numpy(), rtol=1e-6)
    assert np.array_equal(np.signbit(got.numpy()), np.signbit(torch.atan2(y, x).numpy()))
    ints = torch.tensor([[-3, 0, 2], [1, 4, -2]])
    got = torch.atan2(ints.to(dev), ints.flip(1).to(dev)).cpu()
    assert got.dtype == torch.float32
    np.testing.assert_allclose(got.numpy(), torch.atan2(ints, ints.flip(1)).numpy(), rtol=1e-6)
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


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore_index", [-100, 2])
@pytest.mark.parametrize("batched", [True, False])
def test_nll_loss_is_one_node_each_way_and_matches_eager_torch(dev, reduction, weighted,
                                                               ignore_index, batched):
    """nll_loss_forward and nll_loss_backward are lowered natively, as torch_xla's are: values
    and gradients equal eager torch's, ignored targets and 0/0 means included."""
    g = torch.Generator().manual_seed(1)
    x = torch.randn(*((6, 5) if batched else (5,)), generator=g, requires_grad=True)
    t = torch.tensor([0, 2, 4, 2, 1, 3]) if batched else torch.tensor(2)
    w = torch.rand(5, generator=g) if weighted else None
    want = torch.nn.functional.nll_loss(x, t, w, reduction=reduction, ignore_index=ignore_index)
    want_grad, = torch.autograd.grad(want.sum(), x)
    xl = x.detach().to(dev).requires_grad_()
    got = torch.nn.functional.nll_loss(xl, t.to(dev), None if w is None else w.to(dev),
                                       reduction=reduction, ignore_index=ignore_index)
    text = torch_xla.get_tensors_text([got])
    assert text.count("aten::nll_loss_forward") == 1 and "aten::gather" not in text
    got_grad, = torch.autograd.grad(got.sum(), xl)
    assert "aten::nll_loss_backward" in torch_xla.get_tensors_text([got_grad])
    for a, b in [(got.detach().cpu(), want.detach()), (got_grad.cpu(), want_grad)]:
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-7, equal_nan=True)
    assert metrics.executed_fallback_ops() == []


@pytest.mark.parametrize("op", ["log_softmax", "softmax", "relu"])
def test_activation_backwards_are_one_node_and_match_eager_torch(dev, op):
    """The backward of log-softmax, softmax and ReLU (threshold_backward) have rules of their
    own, as in torch_xla, instead of PyTorch's decompositions."""
    g = torch.Generator().manual_seed(2)
    x = torch.randn(4, 6, generator=g, requires_grad=True)
    seed = torch.randn(4, 6, generator=g)
    f = {"log_softmax": lambda t: torch.log_softmax(t, dim=1),
         "softmax": lambda t: torch.softmax(t, dim=-1), "relu": torch.relu}[op]
    want, = torch.autograd.grad(f(x), x, seed)
    xl = x.detach().to(dev).requires_grad_()
    got, = torch.autograd.grad(f(xl), xl, seed.to(dev))
    name = {"log_softmax": "aten::_log_softmax_backward_data",
            "softmax": "aten::_softmax_backward_data", "relu": "aten::threshold_backward"}[op]
    assert name in torch_xla.get_tensors_text([got])
    np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-6, atol=1e-7)
    assert metrics.executed_fallback_ops() == []


def test_a_number_types_the_result_by_its_python_type_not_its_value(dev):
    """`1` and `1.0` are equal (and hash equal) in Python, but an int tensor plus 1.0 is a float
    tensor: the shape cache must tell them apart. Each pair runs int first, so a cache keyed on
    the value alone would hand the float op the int op's int64 output."""
    x = torch.arange(3)
    cases = [(op, n) for op in (torch.add, torch.mul, torch.sub) for n in (1, 1.0, 2, 2.0)]
    for op, number in [*cases, (torch.mul, True), (torch.mul, 1.0)]:
        got, want = op(x.to(dev), number), op(x, number)
        assert got.dtype == want.dtype, (op.__name__, number)
        np.testing.assert_array_equal(got.cpu().numpy(), want.numpy())


@pytest.mark.parametrize("dst_dtype, op, other", [
    (torch.int64, "add_", 1.5), (torch.int64, "mul_", torch.tensor([0.5, 1.0, 2.0])),
    (torch.bool, "mul_", 2), (torch.int32, "div_", 2)])
def test_an_in_place_op_refuses_a_result_it_cannot_cast_as_torch_does(dev, dst_dtype, op, other):
    x = torch.arange(3).to(dst_dtype)
    with pytest.raises(RuntimeError) as eager:
        getattr(x.clone(), op)(other)
    lazy_other = other.to(dev) if isinstance(other, torch.Tensor) else other
    with pytest.raises(RuntimeError, match="can't be cast") as lazy:
        getattr(x.to(dev), op)(lazy_other)
    assert str(lazy.value) == str(eager.value)


def test_an_in_place_op_whose_result_casts_writes_it(dev):
    x, i = torch.ones(3), torch.arange(3)
    got = x.to(dev)
    got.add_(i.to(dev)).mul_(2)  # float += int: the int result casts to float
    np.testing.assert_array_equal(got.cpu().numpy(), ((x + i) * 2).numpy())
    assert got.dtype == torch.float32


def test_a_zero_dimensional_tensor_goes_up_and_comes_back_zero_dimensional(dev):
    for x in (torch.tensor(3.0), torch.tensor(7), torch.tensor(True)):
        lazy = x.to(dev)
        assert lazy.shape == lazy.cpu().shape == x.shape == ()
        assert lazy.cpu().item() == x.item() and (lazy * 2).cpu().shape == ()


_GRID = {"f32": torch.tensor([[-1.5, 0.0, 2.0], [0.5, 3.0, -2.0]]),
         "i64": torch.tensor([[-3, 0, 2], [1, 4, -2]]),
         "bool": torch.tensor([[True, False, True], [False, False, True]])}
_OPS = [torch.add, torch.sub, torch.mul, torch.div, torch.maximum, torch.minimum, torch.eq,
        torch.lt, torch.pow, torch.atan2]


def _lazy_and_eager(fn, dev):
    """fn on eager tensors and on lazy ones: (value or error) each."""
    out = []
    for move in (lambda t: t, lambda t: t.to(dev) if isinstance(t, torch.Tensor) else t):
        try:
            r = fn(move)
            out.append(r.cpu() if isinstance(r, torch.Tensor) else r)
        except (RuntimeError, TypeError) as e:
            out.append(e)
    return out


@pytest.mark.parametrize("op", _OPS, ids=lambda op: op.__name__)
def test_binary_ops_promote_and_refuse_as_eager_torch_over_a_dtype_grid(dev, op):
    """Tensor with tensor and tensor with number, over float, int and bool: the result dtype
    and values, or the error and its message, equal eager torch's. (Not in the grid: a bool
    tensor to a bool power, where torch refuses or keeps bool and ours computes in int.)"""
    others = [*_GRID.items(), *(("number", n) for n in (2, 2.5, True, -1))]
    for (an, a), (bn, b) in [(x, y) for x in _GRID.items() for y in others]:
        if op is torch.pow and an == "bool":
            continue
        want, got = _lazy_and_eager(lambda m, a=a, b=b: op(m(a), m(b)), dev)
        case = f"{op.__name__}({an}, {bn if bn != 'number' else b!r})"
        if isinstance(want, Exception):
            assert type(got) is type(want) and str(got) == str(want), case
            continue
        assert not isinstance(got, Exception), f"{case}: {got}"
        assert got.dtype == want.dtype, case
        np.testing.assert_allclose(got.double().numpy(), want.double().numpy(), rtol=1e-6,
                                   err_msg=case)


@pytest.mark.parametrize("pad, value", [((1, 1), 0.0), ((2, 0, 1, 3), 1.5), ((-1, 2), 0.0),
                                        ((1, -2, 0, 1), -3.0)])
def test_pad_is_one_node_with_its_gradient_as_in_eager_torch(dev, pad, value):
    """constant_pad_nd has a rule (torch_xla's too): PyTorch's decomposition writes the input
    into a slice of a new tensor, which a lazy tensor without functionalization cannot do."""
    x = torch.randn(2, 3, 4, generator=torch.Generator().manual_seed(0), requires_grad=True)
    (torch.nn.functional.pad(x, pad, value=value) ** 2).sum().backward()
    lazy = x.detach().to(dev).requires_grad_()
    out = torch.nn.functional.pad(lazy, pad, value=value)
    (out ** 2).sum().backward()
    np.testing.assert_allclose(out.detach().cpu().numpy(),
                               torch.nn.functional.pad(x, pad, value=value).detach().numpy())
    np.testing.assert_allclose(lazy.grad.cpu().numpy(), x.grad.numpy(), rtol=1e-6)
    assert metrics.executed_fallback_ops() == []


@pytest.mark.parametrize("size", [(4, 6), (5, 7), (3, 4)])
def test_max_pool_drops_rows_and_columns_past_the_last_window_as_torch_does(dev, size):
    x = torch.randn(2, 3, *size, generator=torch.Generator().manual_seed(1), requires_grad=True)
    want = torch.nn.functional.max_pool2d(x, 2)
    want.sum().backward()
    lazy = x.detach().to(dev).requires_grad_()
    got = torch.nn.functional.max_pool2d(lazy, 2)
    got.sum().backward()
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.detach().cpu().numpy(), want.detach().numpy())
    np.testing.assert_array_equal(lazy.grad.cpu().numpy(), x.grad.numpy())
    assert metrics.executed_fallback_ops() == []


def test_a_decomposition_that_writes_through_a_view_runs_on_the_cpu_instead(dev):
    """PyTorch decomposes diagonal_scatter into a clone and a copy into its diagonal, a view.
    Below autograd torch records no `_base`, so the write would be lost: our kernels remember
    the views a decomposition makes, refuse the write, and the op runs on the CPU."""
    x = torch.randn(3, 4, generator=torch.Generator().manual_seed(2))
    src = torch.full((3,), 9.0)
    got = torch.diagonal_scatter(x.to(dev), src.to(dev)).cpu()
    np.testing.assert_array_equal(got.numpy(), torch.diagonal_scatter(x, src).numpy())
    assert "aten::diagonal_scatter" in metrics.executed_fallback_ops()


def test_to_device_copies_the_host_tensor_as_torch_does(dev):
    """The CPU client may alias a host array it is handed (JAX's CPU device_put does); torch's
    `.to(device)` never shares memory with the host tensor, so the upload copies."""
    host = torch.arange(6.0).reshape(2, 3)
    lazy, lazy_int = host.to(dev), host.long().to(dev)
    host.add_(100)
    np.testing.assert_array_equal(lazy.cpu().numpy(), np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(lazy_int.cpu().numpy(), np.arange(6).reshape(2, 3))


@pytest.mark.parametrize("op", [torch.add, torch.sub], ids=lambda op: op.__name__)
def test_alpha_is_refused_as_eager_torch_refuses_it(dev, op):
    """torch's alpha_check: a float alpha for an integral result, a bool alpha for a non-bool
    one; the error and its message, or the value, equal eager torch's."""
    for (an, a), alpha in [(x, al) for x in _GRID.items() for al in (2, 2.5, True)]:
        for b in (a, 3):
            want, got = _lazy_and_eager(lambda m, a=a, b=b, al=alpha: op(m(a), m(b), alpha=al),
                                        dev)
            case = f"{op.__name__}({an}, {b if isinstance(b, int) else an}, alpha={alpha!r})"
            if isinstance(want, Exception):
                assert type(got) is type(want) and str(got) == str(want), case
            else:
                assert not isinstance(got, Exception), f"{case}: {got}"
                assert got.dtype == want.dtype, case
                np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=case)


def test_float16_sums_accumulate_in_float32_as_torch_does(dev):
    """torch's CPU kernel sums float16 in float32 and rounds once: 10000 times 0.1 is 1000.0
    there, where a float16 accumulator stalls near 996 (a mean divides the rounded sum)."""
    x = torch.full((10000,), 0.1, dtype=torch.float16)
    y = torch.randn(64, 300, generator=torch.Generator().manual_seed(3)).half()
    for f in (torch.sum, torch.mean, lambda t: t.sum(1), lambda t: t.mean(0, keepdim=True)):
        for t in (x, y) if f in (torch.sum, torch.mean) else (y,):
            got, want = f(t.to(dev)).cpu(), f(t)
            assert (got.dtype, got.shape) == (want.dtype, want.shape)
            torch.testing.assert_close(got, want, rtol=1e-3, atol=0)


def _in_place_views(m, shared=False, view_first=False):
    y = m(torch.arange(12.0).reshape(3, 4)) * 2
    alias = y.detach() if shared else None
    row = y[1] if view_first else None
    y.unsqueeze_(0)
    y.squeeze_(0)
    y.t_()
    y.unsqueeze_(1)
    return y + 1, row, alias


def test_an_in_place_view_op_gives_a_lazy_tensor_its_new_shape(dev):
    """squeeze_, unsqueeze_ and t_ (torch's matmul squeezes a fresh product in place) change
    the tensor's IR value and the sizes PyTorch sees, as they change its sizes in eager torch;
    a view taken before still reads the same values."""
    (want, want_row, _), (got, got_row, _) = (_in_place_views(m, view_first=True)
                                              for m in (lambda t: t, lambda t: t.to(dev)))
    assert (got.shape, got.dtype) == (want.shape, want.dtype)
    np.testing.assert_array_equal(got.cpu().numpy(), want.numpy())
    np.testing.assert_array_equal(got_row.cpu().numpy(), want_row.numpy())
    assert metrics.executed_fallback_ops() == []


def test_an_in_place_view_op_on_a_shared_lazy_tensor_is_refused(dev):
    """A tensor sharing the storage (here a detach) shares the XLATensorData: it would keep
    its old sizes over data of the new shape, so the op is refused rather than wrong."""
    with pytest.raises(NotImplementedError, match="another tensor shares"):
        _in_place_views(lambda t: t.to(dev), shared=True)


@pytest.mark.parametrize("make", [
    lambda p: torch.optim.Adam(p, lr=0.1, amsgrad=True),
    lambda p: torch.optim.AdamW(p, lr=0.1, amsgrad=True),
    lambda p: torch.optim.Adamax(p, lr=0.1)], ids=["Adam amsgrad", "AdamW amsgrad", "Adamax"])
def test_optimizers_on_the_foreach_path_match_eager_torch(dev, make):
    """Their foreach path calls `_foreach_maximum_`, whose single-tensor op has no in-place
    form in aten: it runs out of place and is copied back."""
    w0 = torch.randn(3, 4, generator=torch.Generator().manual_seed(4))
    finals = []
    for device in ("cpu", dev):
        w = w0.clone().to(device).requires_grad_()
        opt = make([w])
        for step in range(3):
            opt.zero_grad()
            ((w - step) ** 2).sum().backward()
            opt.step()
        finals.append(w.detach().cpu())
    torch.testing.assert_close(finals[1], finals[0], rtol=1e-5, atol=1e-6)


def test_addmm_with_a_factor_of_zero_matches_eager_torch_whichever_factor_it_is(dev):
    """beta=0 drops `self`, as torch does (a NaN there stays out); alpha=0 drops the product.
    A node with one factor a parameter and the other an operand would hash the same for either
    factor, so such an addmm takes torch's decomposition: the second call is a graph of its own."""
    g = torch.Generator().manual_seed(5)
    s, a, b = torch.randn(3, 3, generator=g), torch.randn(3, 2, generator=g), \
        torch.randn(2, 3, generator=g)
    nan = torch.full((3, 3), float("nan"))
    for kwargs, self in [({"beta": 0}, nan), ({"alpha": 0}, s), ({"beta": 0, "alpha": 2}, nan),
                         ({"beta": 2, "alpha": 0}, s), ({}, s)]:
        want = torch.addmm(self, a, b, **kwargs)
        got = torch.addmm(self.to(dev), a.to(dev), b.to(dev), **kwargs).cpu()
        assert (got.dtype, got.shape) == (want.dtype, want.shape)
        torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6, msg=str(kwargs))
