"""Lowering rules of the running reductions beside cumsum, and of reduce_prod.

JAX: jax/_src/lax/control_flow/loops.py (`cumred_reduce_window_impl`, registered for every
`cum*_p` off TPU) and lax.py (`_unary_reduce_lower` for reduce_prod). cumprod, cummax and cummin
are cumsum's reduce_window with another combiner and identity; cumlogsumexp is lowered from its
associative_scan, written with lax (`lower_fun`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from stages.s02_tracing import lax
from stages.s04_autodiff.cumulative_rules import logaddexp

from . import ir, mlir
from .mlir import LoweringRuleContext, register_lowering
from .reductions import get_max_identity, get_min_identity, reduce_rule, reduce_window_scan


def _get_one(dtype: np.dtype) -> np.ndarray:
    return np.array(1, dtype)


def _cumulative_lowering(reducer: str, identity: Any):
    def rule(ctx: LoweringRuleContext, x: ir.Value, *, axis: int, reverse: bool
             ) -> list[ir.Value]:
        return reduce_window_scan(
            reducer, lambda scalar: mlir.ir_constant(identity(scalar.dtype)), ctx, x, axis,
            reverse)
    rule.__name__ = f"_cum_{reducer}_lowering"
    return rule


def _cumlogsumexp(x: Any, *, axis: int, reverse: bool) -> Any:
    return lax.associative_scan(logaddexp, x, axis=axis, reverse=reverse)


register_lowering(lax.cumprod_p, _cumulative_lowering("multiply", _get_one), inline=False)
register_lowering(lax.cummax_p, _cumulative_lowering("maximum", get_max_identity), inline=False)
register_lowering(lax.cummin_p, _cumulative_lowering("minimum", get_min_identity), inline=False)
register_lowering(lax.cumlogsumexp_p, mlir.lower_fun(_cumlogsumexp, multiple_results=False))
register_lowering(lax.reduce_prod_p, reduce_rule("multiply", _get_one))
