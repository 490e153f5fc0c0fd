"""Lowering rules of activations whose float16 and bfloat16 kernels compute in float32 and round
once: GELU (exact and tanh) and softshrink, whose `lambd` is read in float32 too.

torch_xla: torch_xla/csrc/ops/ops.cpp (`Gelu`), ops/ops_lower_fn.cpp (`Softshrink::Lower`) and
elementwise.cpp's builders (`BuildGelu`, `BuildSoftshrink`). PyTorch's
CPU kernels (GeluKernel, SoftShrink) convert a float16 or bfloat16 vector to float32, compute,
and convert back; torch's decompositions of them would round each step to float16 instead,
and subtract softshrink's 0.3 as float16's 0.2998.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from stages.s02_tracing import lax
from stages.s02_tracing.core import get_aval

from .lowering import CHECKS, bcast, cast, opmath, register

aten = torch.ops.aten


def _number(v: Any, shape: tuple, dtype: Any) -> Any:
    """A parameter (a plain number) or a scalar operand, as `dtype` broadcast to `shape`."""
    return bcast(cast(v, dtype), shape) if hasattr(v, "aval") else lax.full(shape, v, dtype)


@register(aten.gelu.default)
def _gelu(self, approximate="none", *, out, **_):
    dtype = opmath(out[0].dtype)
    x = cast(self, dtype)

    def c(v: float) -> Any:
        return lax.full(get_aval(x).shape, v, dtype)
    if approximate == "tanh":
        inner = lax.mul(c(math.sqrt(2 / math.pi)),
                        lax.add(x, lax.mul(c(0.044715), lax.mul(x, lax.mul(x, x)))))
        y = lax.mul(lax.mul(c(0.5), x), lax.add(c(1.0), lax.tanh(inner)))
    else:
        y = lax.mul(lax.mul(c(0.5), x), lax.add(c(1.0), lax.erf(lax.mul(x, c(2 ** -0.5)))))
    return [cast(y, out[0].dtype)]


@register(aten.softshrink.default)
def _softshrink(self, lambd=0.5, *, out, **_):
    """0 where |x| <= lambd, else x moved lambd toward 0 (a NaN stays NaN)."""
    shape, dtype = out[0].shape, opmath(out[0].dtype)
    x, lam = cast(self, dtype), _number(lambd, out[0].shape, dtype)
    moved = lax.select_n(lax.gt(x, lax.full(shape, 0, dtype)), lax.add(x, lam), lax.sub(x, lam))
    inside = lax.le(lax.abs(x), lam)
    return [cast(lax.select_n(inside, moved, lax.full(shape, 0, dtype)), out[0].dtype)]


def _check_softshrink(self: Any, lambd: Any = 0.5) -> None:
    """A lambd outside [0, the dtype's max], or an integer self: the CPU kernel's refusal, word
    for word (the meta kernel's spells the dtype and the bound otherwise)."""
    if not self.dtype.is_floating_point or not 0 <= lambd <= torch.finfo(self.dtype).max:
        aten.softshrink.default(torch.ones(1, dtype=self.dtype), lambd)


CHECKS[aten.softshrink.default] = _check_softshrink


def _pointwise(fn: Any) -> Any:
    """A rule computing fn of its tensor operands in the output's math type, rounded once."""
    def rule(*, out, **operands):
        dtype = opmath(out[0].dtype)
        args = [bcast(cast(v, dtype), out[0].shape) for v in operands.values()]
        return [cast(fn(*args), out[0].dtype)]
    return rule


def _one(x: Any) -> Any:
    return lax.full(get_aval(x).shape, 1, get_aval(x).dtype)


def _sigmoid(x: Any) -> Any:
    """1 / (1 + exp(-x)), as torch's kernels write it."""
    return lax.div(_one(x), lax.add(_one(x), lax.exp(lax.neg(x))))


def _tanh_softplus(x: Any) -> Any:
    return lax.tanh(lax.log1p(lax.exp(x)))


# sigmoid_backward(grad, y), tanh_backward(grad, y), silu_backward(grad, x), mish_backward
register(aten.sigmoid_backward.default)(_pointwise(
    lambda g, y: lax.mul(lax.mul(g, lax.sub(_one(y), y)), y)))
register(aten.tanh_backward.default)(_pointwise(
    lambda g, y: lax.mul(g, lax.sub(_one(y), lax.mul(y, y)))))
register(aten.silu.default)(_pointwise(lambda x: lax.div(x, lax.add(_one(x),
                                                                     lax.exp(lax.neg(x))))))
register(aten.silu_backward.default)(_pointwise(lambda g, x: lax.mul(
    lax.mul(g, _sigmoid(x)), lax.add(_one(x), lax.mul(x, lax.sub(_one(x), _sigmoid(x)))))))
register(aten.mish.default)(_pointwise(lambda x: lax.mul(x, _tanh_softplus(x))))
register(aten.mish_backward.default)(_pointwise(lambda g, x: lax.mul(g, lax.add(
    _tanh_softplus(x), lax.mul(lax.mul(x, _sigmoid(x)), lax.sub(
        _one(x), lax.mul(_tanh_softplus(x), _tanh_softplus(x))))))))
