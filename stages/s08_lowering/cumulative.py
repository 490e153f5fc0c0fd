"""Lowering rules of the running reductions beside cumsum, and of reduce_prod.

JAX: jax/_src/lax/control_flow/loops.py (`cumred_reduce_window_impl`, registered for every
`cum*_p` off TPU), lax/windowed_reductions.py (the reduce_window each one binds) and lax.py
(`_unary_reduce_lower` for reduce_prod). Each is cumsum's reduce_window with another combiner
and identity: max and min with JAX's reduce_window_max/min rule (a broadcast identity), prod and
logaddexp with the generic reduce_window (a bare constant; logaddexp's body lowered from lax).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from stages.s02_tracing import lax
from stages.s04_autodiff.cumulative_rules import logaddexp

from . import ir, mlir
from .elementwise_complex import minmax_hlo
from .mlir import LoweringRuleContext, register_lowering
from .reductions import get_max_identity, get_min_identity, reduce_rule, reduce_window_scan


def _get_one(dtype: np.dtype) -> np.ndarray:
    return np.array(1, dtype)


def _cum_prod_lowering(ctx: LoweringRuleContext, x: ir.Value, *, axis: int, reverse: bool
                       ) -> list[ir.Value]:
    # JAX's _reduce_window_prod binds the generic reduce_window: its init is a bare constant
    return reduce_window_scan("multiply", lambda scalar: mlir.ir_constant(_get_one(scalar.dtype)),
                              ctx, x, axis, reverse)


def _cum_minmax_lowering(op: str, direction: str, identity: Any):
    """cummax/cummin: JAX's reduce_window_max/min rule, whose init is a full_like (a broadcast
    to rank 0) and whose combiner orders complex numbers as max and min do."""
    def rule(ctx: LoweringRuleContext, x: ir.Value, *, axis: int, reverse: bool
             ) -> list[ir.Value]:
        scalar = ctx.avals_in[0].update(shape=())
        return reduce_window_scan(
            lambda a, b: minmax_hlo(op, direction, a, b, scalar),
            lambda s: mlir.full_like_aval(identity(s.dtype), s), ctx, x, axis, reverse)
    rule.__name__ = f"_cum_{op}_lowering"
    return rule


def _cumlogsumexp_lowering(ctx: LoweringRuleContext, x: ir.Value, *, axis: int, reverse: bool
                           ) -> list[ir.Value]:
    """A reduce_window whose body is logaddexp lowered from lax, its init a bare -inf (JAX's
    _reduce_window_logaddexp, the generic reduce_window over a traced reducer)."""
    scalar = ctx.avals_in[0].update(shape=())
    body = ctx.replace(primitive=None, avals_in=[scalar, scalar], avals_out=[scalar])
    combine = mlir.lower_fun(logaddexp, multiple_results=False)
    return reduce_window_scan(
        lambda a, b: combine(body, a, b)[0],
        lambda s: mlir.ir_constant(np.array(-np.inf, s.dtype)), ctx, x, axis, reverse)


register_lowering(lax.cumprod_p, _cum_prod_lowering, inline=False)
register_lowering(lax.cummax_p, _cum_minmax_lowering("maximum", "GT", get_max_identity),
                  inline=False)
register_lowering(lax.cummin_p, _cum_minmax_lowering("minimum", "LT", get_min_identity),
                  inline=False)
register_lowering(lax.cumlogsumexp_p, _cumlogsumexp_lowering, inline=False)
register_lowering(lax.reduce_prod_p, reduce_rule("multiply", _get_one))
