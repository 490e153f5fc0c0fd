"""Lowering rules of the reductions: a `stablehlo.reduce` whose region combines two elements.

JAX: jax/_src/lax/lax.py (`_unary_reduce_lower` for reduce_sum/max/min/or/and/xor,
`_compute_argminmax` lowered with `lower_fun` and inline=False for argmax/argmin) and
lax/control_flow/loops.py (cumsum: `cumred_reduce_window_impl`, a reduce_window over a window
as long as the axis, also emitted as its own function). argmax reduces two arrays at once, the
values and their indices, so its region takes two accumulators and two elements and returns two
results.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from stages.s02_tracing import lax

from . import hlo, ir, mlir
from .elementwise_complex import minmax_hlo
from .mlir import LoweringRuleContext, aval_to_ir_type, register_lowering


def get_sum_identity(dtype: np.dtype) -> np.ndarray:
    return np.array(0, dtype)


def _is_inexact(dtype: np.dtype) -> bool:
    # floats and complex numbers; bfloat16 too, whose numpy kind is "V"
    return mlir.compare_type(dtype) == "FLOAT"


def get_max_identity(dtype: np.dtype) -> np.ndarray:
    if dtype.kind == "b":
        return np.array(False)
    return np.array(-np.inf if _is_inexact(dtype) else np.iinfo(dtype).min, dtype)


def get_min_identity(dtype: np.dtype) -> np.ndarray:
    if dtype.kind == "b":
        return np.array(True)
    return np.array(np.inf if _is_inexact(dtype) else np.iinfo(dtype).max, dtype)


def scalar_type(aval: Any) -> str:
    return aval_to_ir_type(aval.update(shape=()))


# --8<-- [start:unary_reduce]
def unary_reduce_lower(reducer: Any, identity: Any, ctx: LoweringRuleContext, x: ir.Value, *,
                       axes: Sequence[int], **params: Any) -> list[ir.Value]:
    """`stablehlo.reduce(x init: identity)` whose region applies `reducer` to two scalars
    (`reducer` names an op, "add", or builds the combination itself)."""
    # JAX: lax._unary_reduce_lower (while's batched predicate uses it too)
    (aval_out,) = ctx.avals_out
    init = mlir.ir_constant(identity(aval_out.dtype))
    op = hlo.reduce([x], [init], axes, [aval_to_ir_type(aval_out)], [scalar_type(aval_out)])
    with ir.InsertionPoint(op.regions[0].block):
        acc, elem = op.regions[0].block.arguments
        combine = reducer if callable(reducer) else partial(hlo.elementwise, reducer)
        hlo.return_([combine(acc, elem)])
    return [op.result]
# --8<-- [end:unary_reduce]


def reduce_rule(reducer: str, identity: Any):
    def rule(ctx: LoweringRuleContext, x: ir.Value, **params: Any) -> list[ir.Value]:
        scalar = ctx.avals_out[0].update(shape=())
        if reducer in ("maximum", "minimum") and scalar.dtype.kind == "c":
            direction = "GT" if reducer == "maximum" else "LT"
            combine = partial(minmax_hlo, reducer, direction, aval=scalar)
            return unary_reduce_lower(lambda a, b: combine(a, b), identity, ctx, x, **params)
        return unary_reduce_lower(reducer, identity, ctx, x, **params)
    rule.__name__ = f"_reduce_{reducer}_lowering"
    return rule


def _argminmax_lowering(direction: str, identity: Any):
    """argmax/argmin: reduce (value, index) pairs; a NaN wins, ties go to the lower index."""

    def rule(ctx: LoweringRuleContext, x: ir.Value, *, axes: Sequence[int], index_dtype: Any
             ) -> list[ir.Value]:
        (aval,), (aval_out,) = ctx.avals_in, ctx.avals_out
        (axis,) = axes
        # JAX traces its value comparator (lax.gt or lax.lt) here, whose dtype rule refuses
        # complex values: a TypeError when lowered, not when traced
        scalar = aval.update(shape=())
        (lax.gt_p if direction == "GT" else lax.lt_p).abstract_eval(scalar, scalar)
        index_aval = aval.update(dtype=np.dtype(index_dtype))
        indices = hlo.iota(axis, aval_to_ir_type(index_aval))
        inits = [mlir.ir_constant(identity(aval.dtype)),
                 mlir.ir_constant(np.array(0, index_dtype))]
        op = hlo.reduce([x, indices], inits, axes,
                        [aval_to_ir_type(aval_out.update(dtype=aval.dtype)),
                         aval_to_ir_type(aval_out)],
                        [scalar_type(aval), scalar_type(index_aval)])
        with ir.InsertionPoint(op.regions[0].block):
            op_val, op_index, acc_val, acc_index = op.regions[0].block.arguments
            dt, idt = aval.dtype, index_aval.dtype
            pick_val = hlo.elementwise(
                "or", mlir.compare_hlo(op_val, acc_val, direction, dt),
                mlir.compare_hlo(op_val, op_val, "NE", dt))  # x != x: a NaN
            pick_index = hlo.elementwise("or", pick_val, hlo.elementwise(
                "and", mlir.compare_hlo(op_val, acc_val, "EQ", dt),
                mlir.compare_hlo(op_index, acc_index, "LT", idt)))
            hlo.return_([hlo.select(pick_val, op_val, acc_val),
                         hlo.select(pick_index, op_index, acc_index)])
        return [op.results[1]]
    rule.__name__ = "_argmax_lowering" if direction == "GT" else "_argmin_lowering"
    return rule


def reduce_window_scan(reducer: str | Callable[..., ir.Value], init: Callable[[Any], ir.Value],
                       ctx: LoweringRuleContext, x: ir.Value, axis: int, reverse: bool
                       ) -> list[ir.Value]:
    """A running reduction as a reduce_window: each output reduces a window as long as the
    axis, padded with n-1 identities (`init` of the scalar aval) before it (after, if reverse).
    `reducer` names an op, or combines two scalars itself."""
    # JAX: control_flow/loops.py's cumred_reduce_window_impl
    (aval,) = ctx.avals_in
    n = aval.shape[axis]
    if n == 0:
        return [x]
    padding = [(0, 0)] * aval.ndim
    padding[axis] = (0, n - 1) if reverse else (n - 1, 0)
    window = [n if d == axis else 1 for d in range(aval.ndim)]
    op = hlo.reduce_window(x, init(aval.update(shape=())), window, [1] * aval.ndim, padding,
                           scalar_type(aval))
    with ir.InsertionPoint(op.regions[0].block):
        combine = reducer if callable(reducer) else partial(hlo.elementwise, reducer)
        hlo.return_([combine(*op.regions[0].block.arguments)])
    return [op.result]


def _cumsum_lowering(ctx: LoweringRuleContext, x: ir.Value, *, axis: int, reverse: bool
                     ) -> list[ir.Value]:
    # JAX broadcasts the scalar 0 to rank 0 (a no-op), so its init is a full_like
    return reduce_window_scan("add", lambda scalar: mlir.full_like_aval(0, scalar), ctx, x,
                              axis, reverse)


register_lowering(lax.reduce_sum_p, reduce_rule("add", get_sum_identity))
register_lowering(lax.reduce_max_p, reduce_rule("maximum", get_max_identity))
register_lowering(lax.reduce_min_p, reduce_rule("minimum", get_min_identity))
register_lowering(lax.reduce_or_p, reduce_rule("or", get_sum_identity))  # False, 0
register_lowering(lax.reduce_and_p, reduce_rule("and", lambda dtype: np.array(-1).astype(dtype)))
register_lowering(lax.reduce_xor_p, reduce_rule("xor", get_sum_identity))
register_lowering(lax.argmax_p, _argminmax_lowering("GT", get_max_identity), inline=False)
register_lowering(lax.argmin_p, _argminmax_lowering("LT", get_min_identity), inline=False)
register_lowering(lax.cumsum_p, _cumsum_lowering, inline=False)
