"""The jvp rules of the inverse trigonometric primitives: atan2.

JAX: the `ad.defjvp(atan2_p, ...)` lines beside atan2_p in jax/_src/lax/lax.py. atan2 is not
linear in either operand, so it has no transpose rule.
"""

from __future__ import annotations

from stages.s02_tracing import lax
from stages.s02_tracing.lax import add, div, mul, neg

from .jvp_rules import defjvp


def _square(x):
    return lax.integer_pow(x, 2)  # JAX: lax.square (a primitive stage 2 does not add)


def _atan2_jvp_lhs(g, x, y):
    # d atan2(x, y) / dx = y / (x^2 + y^2)
    return mul(g, div(y, add(_square(x), _square(y))))


def _atan2_jvp_rhs(g, x, y):
    # d atan2(x, y) / dy = -x / (x^2 + y^2)
    return mul(g, div(neg(x), add(_square(x), _square(y))))


defjvp(lax.atan2_p, _atan2_jvp_lhs, _atan2_jvp_rhs)
