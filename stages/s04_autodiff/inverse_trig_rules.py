"""The jvp rules of the inverse trigonometric primitives, atan2, and of square, which they use.

JAX: the `ad.defjvp(atan2_p, ...)` and `ad.defjvp2(square_p, ...)` lines in jax/_src/lax/lax.py.
Neither is linear in its operands, so neither has a transpose rule.
"""

from __future__ import annotations

from stages.s02_tracing import lax
from stages.s02_tracing.lax import add, div, mul, neg
from stages.s02_tracing.lax.utils import const

from .jvp_rules import defjvp, defjvp2

defjvp2(lax.square_p, lambda g, ans, x: mul(g, mul(const(x, 2), x)))


def _atan2_jvp_lhs(g, x, y):
    # d atan2(x, y) / dx = y / (x^2 + y^2)
    return mul(g, div(y, add(lax.square(x), lax.square(y))))


def _atan2_jvp_rhs(g, x, y):
    # d atan2(x, y) / dy = -x / (x^2 + y^2)
    return mul(g, div(neg(x), add(lax.square(x), lax.square(y))))


defjvp(lax.atan2_p, _atan2_jvp_lhs, _atan2_jvp_rhs)
