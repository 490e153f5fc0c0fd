"""What a CPU fallback writes: an `out=` argument (or two), resized if the kernel resizes it, and
the tensor it returns is that argument, as in eager torch; index_fill's 0-d value is cast."""

from __future__ import annotations

import pytest
import torch

from stages.s10_lazy_tensors import metrics, torch_xla

M = torch.tensor([[3.0, 1.0], [0.0, 5.0]])
V = torch.tensor([3.0, 1.0, 2.0])


def _mm(d):
    out = torch.empty(2, 2, device=d)
    return [torch.mm(M.to(d), M.to(d), out=out) is out, out]


def _sort(d):
    values, indices = torch.empty(3, device=d), torch.empty(3, dtype=torch.long, device=d)
    got = torch.sort(V.to(d), out=(values, indices))
    return [got[0] is values and got[1] is indices, values, indices]


def _nonzero(d):  # the kernel resizes its out from (0, 2) to (3, 2)
    out = torch.empty(0, 2, dtype=torch.long, device=d)
    torch.nonzero(M.to(d), out=out)
    return [tuple(out.shape), out]


def _topk(d):
    values, indices = torch.empty(2, device=d), torch.empty(2, dtype=torch.long, device=d)
    torch.topk(V.to(d), 2, out=(values, indices))
    return [values, indices]


def _index_fill(d):  # a long 0-d value into a float tensor, in both spellings
    x, i, v = torch.zeros(3).to(d), torch.tensor([1]).to(d), torch.tensor(2).to(d)
    return [x.index_fill(0, i, v), x.clone().index_fill_(0, i, v)]


CASES = {"mm": _mm, "sort": _sort, "nonzero": _nonzero, "topk": _topk, "index_fill": _index_fill}


@pytest.mark.parametrize("name", list(CASES))
def test_what_an_op_writes_is_eager_torchs(name):
    eager, ours = CASES[name]("cpu"), CASES[name](torch_xla.device())
    for e, o in zip(eager, ours, strict=True):
        if isinstance(e, torch.Tensor):
            assert o.device.type != "cpu"
            torch.testing.assert_close(o.cpu(), e, rtol=0, atol=0)
        else:
            assert o == e


def test_an_out_op_on_the_cpu_is_counted_as_a_fallback():
    _mm(torch_xla.device())
    assert "aten::mm.out" in metrics.counter_names()
