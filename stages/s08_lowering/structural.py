"""Lowering rules of the primitives that move elements: shapes, slices, pad, iota, dot_general.

JAX: jax/_src/lax/lax.py (`_broadcast_in_dim_lower`, `_reshape_lower`, `_squeeze_lower`,
`_transpose_lower`, `_concatenate_lower`, `_split_lower`, `_tile_lower`, `_empty2_lower`,
`_pad_lower`, `_iota_lower`, `_dot_general_lower`)
and lax/slicing.py (`_slice_lower`, `_dynamic_slice_lower`, `_dynamic_update_slice_lower`).
The params map onto the op's attributes one for one. dynamic_slice needs no code for its
out-of-range starts: StableHLO's dynamic_slice clamps them, which is the semantics lax promises.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from stages.s02_tracing import lax

from . import hlo, ir, mlir
from .mlir import LoweringRuleContext, aval_to_ir_type, register_lowering


def _out_type(ctx: LoweringRuleContext) -> str:
    return aval_to_ir_type(ctx.avals_out[0])


def _broadcast_in_dim_lowering(ctx: LoweringRuleContext, x: ir.Value, *,
                               broadcast_dimensions: Any, **params: Any) -> list[ir.Value]:
    return [mlir.broadcast_in_dim(x, ctx.avals_out[0], broadcast_dimensions)]


def _reshape_lowering(ctx: LoweringRuleContext, x: ir.Value, *, dimensions: Any = None,
                      **params: Any) -> list[ir.Value]:
    if dimensions is not None:  # reshape(x, sizes, dimensions) transposes first
        in_aval = ctx.avals_in[0]
        shape = tuple(in_aval.shape[d] for d in dimensions)
        x = hlo.transpose(x, dimensions, aval_to_ir_type(in_aval.update(shape=shape)))
    return [hlo.reshape(x, _out_type(ctx))]


def _squeeze_lowering(ctx: LoweringRuleContext, x: ir.Value, **params: Any) -> list[ir.Value]:
    return [hlo.reshape(x, _out_type(ctx))]  # the dimensions are implied by the output aval


def _transpose_lowering(ctx: LoweringRuleContext, x: ir.Value, *, permutation: Any
                        ) -> list[ir.Value]:
    return [hlo.transpose(x, permutation, _out_type(ctx))]


def _rev_lowering(ctx: LoweringRuleContext, x: ir.Value, *, dimensions: Any) -> list[ir.Value]:
    return [hlo.reverse(x, dimensions)]


def _slice_lowering(ctx: LoweringRuleContext, x: ir.Value, *, start_indices: Any,
                    limit_indices: Any, strides: Any) -> list[ir.Value]:
    strides = (1,) * len(start_indices) if strides is None else strides
    return [hlo.slice(x, start_indices, limit_indices, strides, _out_type(ctx))]


def _split_lowering(ctx: LoweringRuleContext, x: ir.Value, *, sizes: Any, axis: int
                    ) -> list[ir.Value]:
    # one slice per piece, each starting where the last one ended
    (x_aval,) = ctx.avals_in
    start, limit, outs = [0] * x_aval.ndim, list(x_aval.shape), []
    for aval_out in ctx.avals_out:
        limit[axis] = start[axis] + aval_out.shape[axis]
        outs.append(hlo.slice(x, start, limit, (1,) * x_aval.ndim, aval_to_ir_type(aval_out)))
        start[axis] = limit[axis]
    return outs


def _tile_lowering(ctx: LoweringRuleContext, x: ir.Value, *, reps: Any) -> list[ir.Value]:
    # (d0, d1) -> reshape (1, d0, 1, d1) -> broadcast (r0, d0, r1, d1) -> reshape (r0*d0, r1*d1)
    # (on an Explicit mesh JAX also pins the two middle values; ours pins only the result)
    (x_aval,) = ctx.avals_in
    pairs = zip(reps, x_aval.shape, strict=True)
    ones = x_aval.update(shape=tuple(n for d in x_aval.shape for n in (1, d)), sharding=None)
    wide = x_aval.update(shape=tuple(n for pair in pairs for n in pair), sharding=None)
    x = hlo.reshape(x, aval_to_ir_type(ones))
    x = mlir.broadcast_in_dim(x, wide, tuple(range(2 * x_aval.ndim)))
    return [hlo.reshape(x, _out_type(ctx))]


def _empty2_lowering(ctx: LoweringRuleContext, *, dtype: Any, memory_space: Any
                     ) -> list[ir.Value]:
    return [mlir.ir_constant(np.zeros((), dtype))]  # never read: zeros will do


def _dynamic_slice_lowering(ctx: LoweringRuleContext, x: ir.Value, *starts: ir.Value,
                            slice_sizes: Any) -> list[ir.Value]:
    return [hlo.dynamic_slice(x, starts, slice_sizes, _out_type(ctx))]


def _dynamic_update_slice_lowering(ctx: LoweringRuleContext, x: ir.Value, update: ir.Value,
                                   *starts: ir.Value) -> list[ir.Value]:
    return [hlo.dynamic_update_slice(x, update, starts)]


def _concatenate_lowering(ctx: LoweringRuleContext, *xs: ir.Value, dimension: int
                          ) -> list[ir.Value]:
    # JAX builds a tree of concatenates, 16 operands at most each (slow compiles otherwise)
    avals = list(ctx.avals_in)
    current = list(xs)
    while len(current) > 1:
        groups = [(current[i:i + 16], avals[i:i + 16]) for i in range(0, len(current), 16)]
        avals = [ga[0].update(shape=tuple(sum(a.shape[dimension] for a in ga) if d == dimension
                                          else s for d, s in enumerate(ga[0].shape)))
                 for _, ga in groups]
        current = [hlo.concatenate(g, dimension, aval_to_ir_type(a))
                   for (g, _), a in zip(groups, avals, strict=True)]
    return [current[0]]


def _pad_lowering(ctx: LoweringRuleContext, x: ir.Value, padding_value: ir.Value, *,
                  padding_config: Any) -> list[ir.Value]:
    low, high, interior = zip(*padding_config, strict=True) if padding_config else ((), (), ())
    return [hlo.pad(x, padding_value, low, high, interior, _out_type(ctx))]


def _iota_lowering(ctx: LoweringRuleContext, *, dimension: int, **params: Any
                   ) -> list[ir.Value]:
    return [hlo.iota(dimension, _out_type(ctx))]


# --8<-- [start:dot_general]
def _precision_names(precision: Any) -> list[str]:
    """One precision per operand: None is [DEFAULT, DEFAULT] (JAX: lax._full_precision)."""
    if precision is None:
        return ["DEFAULT", "DEFAULT"]
    if not isinstance(precision, tuple):
        precision = (precision, precision)
    return [p.name for p in precision]


def _dot_general_lowering(ctx: LoweringRuleContext, lhs: ir.Value, rhs: ir.Value, *,
                          dimension_numbers: Any, precision: Any, platform: str = "default",
                          **params: Any) -> list[ir.Value]:
    lhs_aval, rhs_aval = ctx.avals_in
    (aval_out,) = ctx.avals_out
    handled = lhs_aval.dtype.kind in "iuf" and rhs_aval.dtype.kind in "iuf"
    if lhs_aval.dtype != rhs_aval.dtype and not (platform == "tpu" and handled):
        # mixed operand dtypes: CPU and GPU compute in the output dtype (TPU mixes ints and
        # floats itself)
        lhs = mlir.convert_hlo(lhs, lhs_aval, lhs_aval.update(dtype=aval_out.dtype))
        rhs = mlir.convert_hlo(rhs, rhs_aval, rhs_aval.update(dtype=aval_out.dtype))
    return [hlo.dot_general(lhs, rhs, dimension_numbers, _precision_names(precision),
                            aval_to_ir_type(aval_out))]
# --8<-- [end:dot_general]


def _dot_general_platform_lowering(platform: str):
    def rule(ctx: LoweringRuleContext, *args: ir.Value, **params: Any) -> list[ir.Value]:
        return _dot_general_lowering(ctx, *args, platform=platform, **params)
    rule.__name__ = f"_dot_general_{platform}_lowering"
    return rule


register_lowering(lax.broadcast_in_dim_p, _broadcast_in_dim_lowering)
register_lowering(lax.reshape_p, _reshape_lowering)
register_lowering(lax.squeeze_p, _squeeze_lowering)
register_lowering(lax.transpose_p, _transpose_lowering)
register_lowering(lax.rev_p, _rev_lowering)
register_lowering(lax.slice_p, _slice_lowering)
register_lowering(lax.split_p, _split_lowering)
register_lowering(lax.tile_p, _tile_lowering)
register_lowering(lax.empty2_p, _empty2_lowering)
register_lowering(lax.dynamic_slice_p, _dynamic_slice_lowering)
register_lowering(lax.dynamic_update_slice_p, _dynamic_update_slice_lowering)
register_lowering(lax.concatenate_p, _concatenate_lowering)
register_lowering(lax.pad_p, _pad_lowering)
register_lowering(lax.iota_p, _iota_lowering)
register_lowering(lax.dot_general_p, _dot_general_lowering)
for _platform in ("cpu", "tpu"):  # rules for one platform win over the generic one
    register_lowering(lax.dot_general_p, _dot_general_platform_lowering(_platform), _platform)
