"""Lowering rules of gather and the scatters: `stablehlo.gather` and `stablehlo.scatter`.

JAX: jax/_src/lax/slicing.py (`_gather_lower`, `_gather_fill`, `_scatter_lower`,
`_clamp_scatter_indices`). The dimension numbers map onto the ops' attributes one for one (the
index vector is always the last axis of the indices). The out-of-bounds modes are where the work
is: StableHLO's gather clamps its windows and its scatter drops them, so a CLIP or
PROMISE_IN_BOUNDS gather and a FILL_OR_DROP or PROMISE_IN_BOUNDS scatter are the bare op; a
FILL_OR_DROP gather masks the windows whose index was out of range, and a CLIP scatter clamps its
indices first. Those two are written with lax and lowered with `lower_fun`, as JAX does. A
scatter's region combines an old and a new element: the lowered `update_jaxpr`, or (replacing)
the new one. sort (JAX: lax.py's `_sort_lower`) is here too: its comparator canonicalizes
float keys (-0.0 as 0.0, one NaN) and compares them in XLA's total order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from stages.s02_tracing import lax
from stages.s02_tracing.lax import GatherScatterMode

from . import hlo, ir, mlir
from .ir import Region
from .mlir import LoweringRuleContext, aval_to_ir_type, register_lowering


def _ints(xs: Sequence[int]) -> str:
    return "[" + ", ".join(str(int(x)) for x in xs) + "]"


def _dims_attr(kind: str, fields: Sequence[tuple[str, Sequence[int]]], index_vector_dim: int
               ) -> str:
    # MLIR leaves out what is its default: the empty lists, and an index_vector_dim of 0
    parts = [f"{name} = {_ints(v)}" for name, v in fields if len(v)]
    parts += [f"index_vector_dim = {index_vector_dim}"] if index_vector_dim else []
    return f"#stablehlo.{kind}<{', '.join(parts)}>"


def _generic(op_name: str, props: dict[str, str], body: Region | None = None):
    text = ", ".join(f"{k} = {props[k]}" for k in sorted(props))

    def asm(p, op):
        region = f" ({p.region(body, entry_args=True)})" if body is not None else ""
        return (f'"{op.name}"({p.vs(op.operands)}) <{{{text}}}>{region} : '
                f"({p.types(op.operands)}) -> {op.results[0].type}")
    return asm


# ------------------------------------------------------------------ gather


def _bare_gather(ctx: LoweringRuleContext, operand: ir.Value, indices: ir.Value, *,
                 dimension_numbers: Any, slice_sizes: Sequence[int], indices_are_sorted: bool,
                 **params: Any) -> list[ir.Value]:
    dn = dimension_numbers
    attr = _dims_attr("gather", [
        ("offset_dims", dn.offset_dims), ("collapsed_slice_dims", dn.collapsed_slice_dims),
        ("operand_batching_dims", dn.operand_batching_dims),
        ("start_indices_batching_dims", dn.start_indices_batching_dims),
        ("start_index_map", dn.start_index_map)], len(ctx.avals_in[1].shape) - 1)
    props = {"dimension_numbers": attr,
             "indices_are_sorted": str(bool(indices_are_sorted)).lower(),
             "slice_sizes": hlo.i64_array(slice_sizes)}
    out = aval_to_ir_type(ctx.avals_out[0])
    return [hlo.generic_op("stablehlo.gather", [operand, indices], [out],
                    _generic("stablehlo.gather", props)).result]


def _index_dtype_for_shape(shape: Sequence[int]) -> np.dtype:
    """int32, or int64 when a dimension exceeds int32 (JAX: lax_utils.int_dtype_for_shape)."""
    big = any(d > np.iinfo(np.int32).max for d in shape)
    return np.dtype(np.int64 if big else np.int32)


def _gather_fill(operand: Any, indices: Any, *, dimension_numbers: Any, slice_sizes: Any,
                 unique_indices: bool, indices_are_sorted: bool, mode: Any,
                 fill_value: Any) -> Any:
    """A gather whose out-of-bounds windows read `fill_value` (JAX: _gather_fill). The indices
    are first widened to an int type that holds every bound of the operand."""
    dn = dimension_numbers
    index_dtype = _index_dtype_for_shape(np.shape(operand))
    indices = lax.convert_element_type(indices, index_dtype)
    nb = np.ndim(indices) - 1
    upper = np.array([np.shape(operand)[d] - slice_sizes[d] for d in dn.start_index_map],
                     index_dtype)
    mask = lax.bitwise_and(lax.ge(indices, index_dtype.type(0)),
                           lax.le(indices, lax.expand_dims(upper, tuple(range(nb)))))
    mask = lax.reduce_and(mask, (nb,))
    out = lax.gather(operand, indices, dn, slice_sizes, indices_are_sorted=indices_are_sorted,
                     mode=GatherScatterMode.PROMISE_IN_BOUNDS)
    batch_dims = [d for d in range(np.ndim(out)) if d not in dn.offset_dims]
    mask = lax.broadcast_in_dim(mask, np.shape(out), batch_dims)
    return lax.select(mask, out, lax.full_like(out, fill_value))


_gather_fill_lowering = mlir.lower_fun(_gather_fill, multiple_results=False)


def _gather_lowering(ctx: LoweringRuleContext, operand: ir.Value, indices: ir.Value,
                     **params: Any) -> list[ir.Value]:
    if params["mode"] == GatherScatterMode.FILL_OR_DROP:
        return _gather_fill_lowering(ctx, operand, indices, **params)
    return _bare_gather(ctx, operand, indices, **params)


register_lowering(lax.gather_p, _gather_lowering)

# ------------------------------------------------------------------ scatters


def _clamp_indices(operand: Any, indices: Any, updates: Any, *, dimension_numbers: Any,
                   **params: Any) -> Any:
    """Indices clamped so that every window fits (JAX: _clamp_scatter_indices)."""
    dn = dimension_numbers
    sizes, window = [], iter(dn.update_window_dims)
    for i in range(np.ndim(operand)):
        skip = i in dn.inserted_window_dims or i in dn.operand_batching_dims
        sizes.append(1 if skip else np.shape(updates)[next(window)])
    bounds = [np.shape(operand)[d] - sizes[d] for d in dn.scatter_dims_to_operand_dims]
    upper = np.array(bounds, _index_dtype_for_shape(bounds))
    # a bound the indices' dtype cannot hold is capped at its largest value
    top = min(np.iinfo(upper.dtype).max, np.iinfo(indices.dtype).max)
    upper = lax.convert_element_type(lax.min(upper, upper.dtype.type(top)), indices.dtype)
    upper = lax.broadcast_in_dim(upper, np.shape(indices), (np.ndim(indices) - 1,))
    return lax.clamp(indices.dtype.type(0), indices, upper)


def _scatter_lowering(ctx: LoweringRuleContext, operand: ir.Value, indices: ir.Value,
                      updates: ir.Value, *, dimension_numbers: Any, update_jaxpr: Any,
                      update_consts: Any, indices_are_sorted: bool, unique_indices: bool,
                      mode: Any) -> list[ir.Value]:
    if mode == GatherScatterMode.CLIP:
        clamp = mlir.lower_fun(_clamp_indices, multiple_results=False)
        (indices,) = clamp(ctx.replace(avals_out=[ctx.avals_in[1]]), operand, indices, updates,
                           dimension_numbers=dimension_numbers)
    dn = dimension_numbers
    attr = _dims_attr("scatter", [
        ("update_window_dims", dn.update_window_dims),
        ("inserted_window_dims", dn.inserted_window_dims),
        ("input_batching_dims", dn.operand_batching_dims),
        ("scatter_indices_batching_dims", dn.scatter_indices_batching_dims),
        ("scatter_dims_to_operand_dims", dn.scatter_dims_to_operand_dims)],
        len(ctx.avals_in[1].shape) - 1)
    props = {"indices_are_sorted": str(bool(indices_are_sorted)).lower(),
             "scatter_dimension_numbers": attr,
             "unique_indices": str(bool(unique_indices)).lower()}
    scalar = aval_to_ir_type(ctx.avals_in[0].update(shape=()))
    body = Region([scalar, scalar])
    op = hlo.generic_op("stablehlo.scatter", [operand, indices, updates],
                 [aval_to_ir_type(ctx.avals_out[0])], _generic("stablehlo.scatter", props, body),
                 regions=[body])
    with ir.InsertionPoint(body.block):
        old, new = body.block.arguments
        if update_jaxpr is None:
            hlo.return_([new])
        else:
            hlo.return_(mlir.jaxpr_subcomp(ctx.module_context, update_jaxpr, [], old, new))
    return [op.result]


for _prim in (lax.scatter_p, lax.scatter_add_p, lax.scatter_mul_p, lax.scatter_min_p,
              lax.scatter_max_p):
    register_lowering(_prim, _scatter_lowering)

# ------------------------------------------------------------------ sort (JAX: lax.py)


def _canonicalize_float_for_sort(x: Any) -> Any:
    """-0.0 as 0.0 and every NaN as one NaN: the total order would put them apart, and a
    stable sort would then not keep them in input order."""
    result = lax.select(lax.eq(x, lax.full_like(x, 0, shape=())), lax.full_like(x, 0), x)
    return lax.select(lax.ne(x, x), lax.full_like(result, np.nan), result)


def _operands_to_keys(ctx: LoweringRuleContext, *operands: ir.Value, num_keys: int
                      ) -> tuple[list[tuple[ir.Value, Any]], list[tuple[ir.Value, Any]]]:
    """The keys of the first num_keys operand pairs, with their dtypes: floats canonicalized,
    a complex number as its canonicalized real and imaginary parts."""
    def canon(v: ir.Value, aval: Any) -> tuple[ir.Value, Any]:
        sub = ctx.replace(primitive=None, avals_in=[aval], avals_out=[aval])
        canonical = mlir.lower_fun(_canonicalize_float_for_sort, multiple_results=False)
        return canonical(sub, v)[0], aval.dtype

    x_keys, y_keys = [], []
    for i in range(num_keys):
        x, y, aval = operands[2 * i], operands[2 * i + 1], ctx.avals_in[2 * i]
        if aval.dtype.kind == "c":
            part = aval.update(dtype=np.finfo(aval.dtype).dtype)
            t = aval_to_ir_type(part)
            for keys, v in ((x_keys, x), (y_keys, y)):
                keys.append(canon(hlo.elementwise("real", v, result_type=t), part))
                keys.append(canon(hlo.elementwise("imag", v, result_type=t), part))
        elif mlir.compare_type(aval.dtype) == "FLOAT":
            x_keys.append(canon(x, aval))
            y_keys.append(canon(y, aval))
        else:
            x_keys.append((x, aval.dtype))
            y_keys.append((y, aval.dtype))
    return x_keys, y_keys


def _sort_lt_comparator(ctx: LoweringRuleContext, *operands: ir.Value, num_keys: int
                        ) -> ir.Value:
    """x < y on the keys, lexicographically, in the total order -inf < ... < inf < NaN."""
    x_keys, y_keys = _operands_to_keys(ctx, *operands, num_keys=num_keys)
    p = None
    for (xk, dtype), (yk, _) in zip(x_keys[::-1], y_keys[::-1], strict=True):
        # JAX's lt_to_p and eq_to_p: floats compare in the total order
        kind = "TOTALORDER" if mlir.compare_type(dtype) == "FLOAT" else None
        lt = mlir.compare_hlo(xk, yk, "LT", dtype, kind)
        p = lt if p is None else hlo.elementwise(
            "or", lt, hlo.elementwise("and", mlir.compare_hlo(xk, yk, "EQ", dtype, kind), p))
    return p


def _sort_lowering(ctx: LoweringRuleContext, *operands: ir.Value, dimension: int,
                   is_stable: bool, num_keys: int) -> list[ir.Value]:
    scalars = [a.update(shape=()) for a in ctx.avals_in]
    types = [aval_to_ir_type(a) for a in scalars]
    body = Region([t for t in types for _ in (0, 1)])
    props = {"dimension": f"{dimension} : i64", "is_stable": str(bool(is_stable)).lower()}

    text = ", ".join(f"{k} = {props[k]}" for k in sorted(props))

    def asm(p, op):
        results = p.types(op.results)
        return (f'"{op.name}"({p.vs(op.operands)}) <{{{text}}}> '
                f"({p.region(body, entry_args=True)}) : ({p.types(op.operands)}) -> "
                + (results if len(op.results) == 1 else f"({results})"))
    out_types = [aval_to_ir_type(a) for a in ctx.avals_out]
    op = hlo.generic_op("stablehlo.sort", operands, out_types, asm, regions=[body])
    sub = ctx.replace(primitive=None, avals_in=[a for a in scalars for _ in (0, 1)],
                      avals_out=[scalars[0].update(dtype=np.dtype(bool))])
    with ir.InsertionPoint(body.block):
        hlo.return_([_sort_lt_comparator(sub, *body.block.arguments, num_keys=num_keys)])
    return list(op.results)


register_lowering(lax.sort_p, _sort_lowering)
