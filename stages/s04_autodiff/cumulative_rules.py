"""jvp rules of the running reductions and reduce_prod: the jvp of the program that computes
them with multiplications.

JAX: `_cumulative_jvp_rule` in jax/_src/lax/control_flow/loops.py and `_reduce_prod_jvp_rule`
in lax.py. A running product is an associative_scan of `mul`; its tangent is whatever jvp
makes of that scan, so no new derivative has to be written by hand (and a zero in the input
is no division by zero). None of them is linear: no transpose rules.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from stages.s02_tracing import lax
from stages.s02_tracing.lax.utils import const

from .ad import instantiate_zeros, primitive_jvps
from .custom_derivatives import custom_jvp


@custom_jvp
def logaddexp(a: Any, b: Any) -> Any:
    """log(exp(a) + exp(b)) without overflow: the larger plus log1p of the smaller's share
    (JAX: lax/other.py's logaddexp); for complex values the imaginary part is wrapped into
    [-pi, pi]."""
    amax = lax.max(a, b)
    if np.iscomplexobj(amax):
        out = lax.add(amax, lax.log1p(lax.exp(lax.sub(lax.add(a, b),
                                                        lax.mul(amax, const(amax, 2))))))
        return lax.complex(lax.real(out), _wrap_between(lax.imag(out), np.pi))
    delta = lax.sub(a, b)
    # inf - inf is NaN: two infinities of one sign (or a NaN) give a + b, not NaN
    return lax.select(lax.ne(delta, delta), lax.add(a, b),
                      lax.add(amax, lax.log1p(lax.exp(lax.neg(lax.abs(delta))))))


def _wrap_between(x: Any, a: float) -> Any:
    """x moved into [-a, a] by whole turns of 2a (JAX: other.py's _wrap_between)."""
    rem = lax.rem(lax.add(x, const(x, a)), const(x, 2 * a))
    rem = lax.select(lax.lt(rem, const(x, 0)), lax.add(rem, const(x, 2 * a)), rem)
    return lax.sub(rem, const(x, a))


def _replace_inf(x: Any) -> Any:
    # JAX compares with a scalar literal (lax._const), not a broadcast array of inf
    return lax.select(lax.eq(x, const(x, np.inf)), lax.full_like(x, 0), x)


@logaddexp.defjvp
def _logaddexp_jvp(primals: Any, tangents: Any) -> tuple[Any, Any]:
    # each input's share exp(x - out); an infinite output counts as 0, as JAX's rule has it
    (a, b), (ta, tb) = primals, tangents
    out = logaddexp(a, b)
    return out, lax.add(lax.mul(ta, lax.exp(lax.sub(_replace_inf(a), _replace_inf(out)))),
                        lax.mul(tb, lax.exp(lax.sub(_replace_inf(b), _replace_inf(out)))))


def _jvp_of(fun: Any, primals: Any, tangents: Any) -> tuple[Any, Any]:
    from .api import jvp  # the rules are registered before api imports them

    tangents = [instantiate_zeros(t) for t in tangents]
    return jvp(fun, tuple(primals), tuple(tangents))


def _cumulative_jvp(combine: Any, primals: Any, tangents: Any, *, axis: int, reverse: bool):
    scan = functools.partial(lax.associative_scan, combine, axis=axis, reverse=reverse)
    return _jvp_of(scan, primals, tangents)


for _p, _combine in ((lax.cumprod_p, lax.mul), (lax.cummax_p, lax.max), (lax.cummin_p, lax.min),
                     (lax.cumlogsumexp_p, logaddexp)):
    primitive_jvps[_p] = functools.partial(_cumulative_jvp, _combine)


def _prod_tree(x: Any) -> Any:
    """The product over axis 0, as a tree of multiplications: the first half times the second
    (padded with a 1 when odd), as JAX's `_reduce_tree` in `_reduce_jvp` (lax.py)."""
    while np.shape(x)[0] > 1:
        n = np.shape(x)[0]
        n1 = (n + 1) // 2
        x1 = lax.slice_in_dim(x, 0, n1, axis=0)
        x2 = lax.slice_in_dim(x, n1, None, axis=0)
        if n - n1 != n1:
            x2 = lax.pad(x2, const(x, 1), [(0, 1, 0)] + [(0, 0, 0)] * (np.ndim(x) - 1))
        x = lax.mul(x1, x2)
    return lax.squeeze(x, (0,))


def _reduce_prod_jvp(primals: Any, tangents: Any, *, axes: tuple[int, ...]):
    (operand,), (tangent,) = primals, tangents
    shape = np.shape(operand)
    kept = [d for d in range(len(shape)) if d not in axes]
    n = int(np.prod([shape[a] for a in axes]))
    # the reduced axes first, flattened into one, primal and tangent alike, before the jvp
    # (JAX: one reshape with `dimensions`, outside the jvp of the tree)
    new_shape = (n, *[shape[d] for d in kept])
    flat = [lax.reshape(v, new_shape, (*axes, *kept))
            for v in (operand, instantiate_zeros(tangent))]

    def prod(x: Any) -> Any:
        if n == 0:
            return lax.full([shape[d] for d in kept], 1, x.dtype)
        return _prod_tree(x)
    return _jvp_of(prod, flat[:1], flat[1:])


primitive_jvps[lax.reduce_prod_p] = _reduce_prod_jvp
