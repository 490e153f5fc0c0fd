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

from .ad import instantiate_zeros, primitive_jvps
from .custom_derivatives import custom_jvp


@custom_jvp
def logaddexp(a: Any, b: Any) -> Any:
    """log(exp(a) + exp(b)) without overflow: the larger plus log1p of the smaller's share
    (JAX: lax/other.py's logaddexp, real floats)."""
    amax = lax.max(a, b)
    delta = lax.sub(a, b)
    # inf - inf is NaN: two infinities of one sign (or a NaN) give a + b, not NaN
    return lax.select(lax.ne(delta, delta), lax.add(a, b),
                      lax.add(amax, lax.log1p(lax.exp(lax.neg(lax.abs(delta))))))


def _replace_inf(x: Any) -> Any:
    return lax.select(lax.eq(x, lax.full_like(x, np.inf)), lax.full_like(x, 0), x)


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
    """The product over axis 0, as a tree of pairwise multiplications."""
    while np.shape(x)[0] > 1:
        n = np.shape(x)[0]
        if n % 2:  # an odd row out: pair it with ones
            ones = lax.full((1, *np.shape(x)[1:]), 1, x.dtype)
            x = lax.concatenate([x, ones], 0)
        x = lax.mul(lax.slice_in_dim(x, 0, None, stride=2, axis=0),
                    lax.slice_in_dim(x, 1, None, stride=2, axis=0))
    return lax.reshape(x, np.shape(x)[1:])


def _reduce_prod_jvp(primals: Any, tangents: Any, *, axes: tuple[int, ...]):
    (operand,) = primals
    shape = np.shape(operand)
    kept = [d for d in range(len(shape)) if d not in axes]

    def prod(x: Any) -> Any:
        # the reduced axes first, flattened into one: a product over axis 0
        x = lax.transpose(x, (*axes, *kept))
        n = int(np.prod([shape[a] for a in axes]))
        x = lax.reshape(x, (n, *[shape[d] for d in kept]))
        if n == 0:
            return lax.full([shape[d] for d in kept], 1, x.dtype)
        return _prod_tree(x)
    return _jvp_of(prod, primals, tangents)


primitive_jvps[lax.reduce_prod_p] = _reduce_prod_jvp
