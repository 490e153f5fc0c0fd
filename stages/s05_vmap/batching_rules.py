"""A batching rule for every stage-2 primitive, registered in `batching.primitive_batchers`.

JAX: each rule sits beside its primitive (jax/_src/lax/lax.py, lax/slicing.py,
lax/control_flow/loops.py for cumsum); ours are gathered here because stage 2 is closed. Every
rule answers one question: given where the batch axis sits on the inputs, where is it on the
output? Rules move the axis only when they must.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from stages.s02_tracing import core, lax

from . import _jax_compat
from .batching import (
    AxisData,
    BatchDim,
    bdim_at_front,
    defbroadcasting,
    defreducer,
    defvectorized,
    moveaxis,
    not_mapped,
    primitive_batchers,
)

# elementwise, one operand (and convert_element_type, integer_pow: params, no new operands)
for _p in (lax.neg_p, lax.sign_p, lax.floor_p, lax.ceil_p, lax.round_p, lax.abs_p, lax.erf_p,
           lax.not_p, lax.exp_p, lax.log_p, lax.log1p_p, lax.sin_p, lax.cos_p, lax.tan_p,
           lax.square_p, lax.tanh_p, lax.sqrt_p, lax.rsqrt_p, lax.logistic_p, lax.integer_pow_p,
           lax.convert_element_type_p, lax.real_p, lax.imag_p, lax.conj_p, lax.is_finite_p,
           lax.clz_p):
    defvectorized(_p)

# elementwise, several operands
for _p in (lax.add_p, lax.sub_p, lax.mul_p, lax.div_p, lax.rem_p, lax.pow_p, lax.max_p,
           lax.min_p, lax.and_p, lax.or_p, lax.xor_p, lax.shift_left_p, lax.shift_right_logical_p,
           lax.shift_right_arithmetic_p, lax.eq_p, lax.ne_p, lax.lt_p, lax.le_p, lax.gt_p,
           lax.ge_p, lax.complex_p, lax.atan2_p):
    defbroadcasting(_p)

# reductions over `axes`
for _p in (lax.reduce_sum_p, lax.reduce_max_p, lax.reduce_min_p, lax.reduce_prod_p, lax.argmax_p,
           lax.argmin_p, lax.reduce_or_p, lax.reduce_and_p, lax.reduce_xor_p):
    defreducer(_p)


def _size(vals: Sequence[Any], dims: Sequence[BatchDim]) -> int:
    """The batch size, read off the first batched operand."""
    return next(np.shape(x)[d] for x, d in zip(vals, dims, strict=True) if d is not not_mapped)


def _bitcast_convert_type_batch_rule(axis_data: AxisData, vals: Sequence[Any],
                                     dims: Sequence[BatchDim], *, new_dtype: np.dtype
                                     ) -> tuple[Any, BatchDim]:
    """Elementwise, except that a wider dtype joins the last axis: the batch axis must not be it."""
    (x,), (bdim,) = vals, dims
    # JAX: defvectorized, which fails when a batch axis sits last and the dtype widens
    if bdim == np.ndim(x) - 1 and np.dtype(new_dtype).itemsize > core.get_aval(x).dtype.itemsize:
        x, bdim = moveaxis(x, bdim, 0), 0
    return lax.bitcast_convert_type(x, new_dtype), bdim


primitive_batchers[lax.bitcast_convert_type_p] = _bitcast_convert_type_batch_rule


# ------------------------------------------------------------------------------ dot_general


# --8<-- [start:dot_general]
def _dot_general_batch_rule(axis_data: AxisData, vals: Sequence[Any], dims: Sequence[BatchDim],
                            *, dimension_numbers, precision, preferred_element_type,
                            out_sharding) -> tuple[Any, BatchDim]:
    """Batch through the dimension numbers: never move an operand's axis."""
    (lhs, rhs), (lbd, rbd) = vals, dims
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
    if lbd is not_mapped and rbd is not_mapped:
        out = lax.dot_general(lhs, rhs, dimension_numbers, precision, preferred_element_type)
        return out, not_mapped

    def bump(axes: Sequence[int], bdim: int) -> tuple[int, ...]:
        # per-example axis numbers -> axis numbers of the batched operand
        return tuple(int(a) + (a >= bdim) for a in axes)

    # EXERCISE 5.5 (dot-general): new dimension numbers, and where the batch axis comes out
    if lbd is not not_mapped and rbd is not not_mapped:
        # both batched: the vmapped axis becomes one more dot_general batch dim, the first
        lhs_batch, rhs_batch = (lbd, *bump(lhs_batch, lbd)), (rbd, *bump(rhs_batch, rbd))
        lhs_contract, rhs_contract = bump(lhs_contract, lbd), bump(rhs_contract, rbd)
        out_dim = 0
    elif lbd is not not_mapped:
        # only lhs: its vmapped axis is one more free dim; output is (batch, lhs free, rhs free)
        lhs_batch, lhs_contract = bump(lhs_batch, lbd), bump(lhs_contract, lbd)
        lhs_free = [d for d in range(np.ndim(lhs)) if d not in (*lhs_batch, *lhs_contract)]
        out_dim = len(lhs_batch) + lhs_free.index(lbd)
    else:
        rhs_batch, rhs_contract = bump(rhs_batch, rbd), bump(rhs_contract, rbd)
        rhs_free = [d for d in range(np.ndim(rhs)) if d not in (*rhs_batch, *rhs_contract)]
        lhs_free_count = np.ndim(lhs) - len(lhs_batch) - len(lhs_contract)
        out_dim = len(rhs_batch) + lhs_free_count + rhs_free.index(rbd)
    new_dims = ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))
    out = lax.dot_general(lhs, rhs, new_dims, precision, preferred_element_type)
    return out, out_dim
    # END EXERCISE
# --8<-- [end:dot_general]


primitive_batchers[lax.dot_general_p] = _dot_general_batch_rule


# ------------------------------------------------------------------------------ select_n


def _select_n_batch_rule(axis_data, vals, dims):
    which, *cases = vals
    which_dim, *case_dims = dims
    if all(d is not_mapped for d in dims):
        return lax.select_n(which, *cases), not_mapped
    size = _size(vals, dims)
    if all(d == which_dim for d in case_dims):
        if np.shape(which) != np.shape(cases[0]):
            # a per-example scalar `which` with array cases: spread it along the batch axis
            which = lax.broadcast_in_dim(which, np.shape(cases[0]), [which_dim])
        return lax.select_n(which, *cases), which_dim
    same_shapes = all(np.shape(c) == np.shape(cases[0]) for c in cases[1:])
    if np.ndim(which) == 0 and all(d is not not_mapped for d in case_dims) and same_shapes:
        # an unbatched scalar `which` picks whole cases: line the cases' axes up with the first
        first = case_dims[0]
        others = [moveaxis(c, d, first) for c, d in zip(cases[1:], case_dims[1:], strict=True)]
        return lax.select_n(which, cases[0], *others), first
    which = bdim_at_front(which, which_dim, size) if np.shape(which) else which
    if any(np.shape(c) for c in cases):
        cases = [bdim_at_front(c, d, size) for c, d in zip(cases, case_dims, strict=True)]
    if 0 < np.ndim(which) < np.ndim(cases[0]):
        which = lax.broadcast_in_dim(which, np.shape(cases[0]), [0])
    if np.ndim(which) > np.ndim(cases[0]):
        # scalar cases, batched `which`: broadcast the cases to `which`'s shape
        cases = [lax.broadcast_in_dim(c, np.shape(which), ()) for c in cases]
    return lax.select_n(which, *cases), 0


primitive_batchers[lax.select_n_p] = _select_n_batch_rule


# ------------------------------------------------------------------------------ clamp


def _clamp_batch_rule(axis_data: AxisData, vals: Sequence[Any], dims: Sequence[BatchDim]
                      ) -> tuple[Any, BatchDim]:
    """Bounds that already fit x (the same batch axis and shape, or scalars) clamp it where
    its batch axis is; otherwise the batch axis goes first and scalar bounds are broadcast."""
    if all(d is not_mapped for d in dims):
        return lax.clamp(*vals), not_mapped
    lo, x, hi = vals
    lo_dim, x_dim, hi_dim = dims
    scalar_bounds = np.ndim(lo) == np.ndim(hi) == 0
    if lo_dim == x_dim == hi_dim:  # no transposes
        if scalar_bounds or np.shape(lo) == np.shape(x) == np.shape(hi):
            return lax.clamp(lo, x, hi), x_dim
        if np.ndim(lo) == np.ndim(hi) == 1:
            return lax.clamp(lax.broadcast_in_dim(lo, np.shape(x), [lo_dim]), x,
                             lax.broadcast_in_dim(hi, np.shape(x), [hi_dim])), x_dim
    elif scalar_bounds and x_dim is not not_mapped:
        return lax.clamp(lo, x, hi), x_dim
    lo, hi, x = (bdim_at_front(v, d, axis_data.size) if np.ndim(v) else v
                 for v, d in ((lo, lo_dim), (hi, hi_dim), (x, x_dim)))
    if np.ndim(x):  # a scalar bound is broadcast, then a bound that is only a batch axis
        lo, hi = (lax.broadcast(b, np.shape(x)) if np.ndim(b) == 0 else b for b in (lo, hi))
        lo, hi = (lax.broadcast_in_dim(b, np.shape(x), [0]) if np.ndim(b) < np.ndim(x) else b
                  for b in (lo, hi))
    else:  # x is a scalar, a bound is batched: x is broadcast to it
        x = lax.broadcast_in_dim(x, np.shape(lo) if np.ndim(lo) else np.shape(hi), ())
    return lax.clamp(lo, x, hi), 0


primitive_batchers[lax.clamp_p] = _clamp_batch_rule


# ------------------------------------------------------------------------------ structural


def _broadcast_in_dim_batch_rule(axis_data, vals, dims, *, shape, broadcast_dimensions,
                                 sharding):
    (operand,), (bdim,) = vals, dims
    if bdim is not_mapped:
        out = lax.broadcast_in_dim_p.bind(operand, shape=shape, sharding=sharding,
                                          broadcast_dimensions=broadcast_dimensions)
        return out, not_mapped
    operand = moveaxis(operand, bdim, 0)
    # the batch axis becomes output axis 0; every other axis moves one to the right
    new_dims = (0, *_jax_compat.numpy_ints(d + 1 for d in broadcast_dimensions))
    new_shape = (np.shape(operand)[0], *shape)
    out = lax.broadcast_in_dim_p.bind(operand, shape=new_shape, sharding=sharding,
                                      broadcast_dimensions=new_dims)
    return out, 0


def _reshape_batch_rule(axis_data, vals, dims, *, new_sizes, dimensions, sharding):
    (operand,), (bdim,) = vals, dims
    if bdim is not_mapped:
        return lax.reshape(operand, new_sizes, dimensions), not_mapped
    # row-major reshape keeps a leading axis intact, so put the batch axis first
    operand = moveaxis(operand, bdim, 0)
    if dimensions is not None:
        dimensions = (0, *[d + 1 for d in dimensions])
    return lax.reshape(operand, (np.shape(operand)[0], *new_sizes), dimensions), 0


def _transpose_batch_rule(axis_data, vals, dims, *, permutation):
    (operand,), (bdim,) = vals, dims
    if bdim is not_mapped:
        return lax.transpose(operand, permutation), not_mapped
    perm = (bdim, *[d if d < bdim else d + 1 for d in permutation])
    return lax.transpose(operand, perm), 0


def _rev_batch_rule(axis_data, vals, dims, *, dimensions):
    (operand,), (bdim,) = vals, dims
    if bdim is not_mapped:
        return lax.rev(operand, dimensions), not_mapped
    return lax.rev(operand, [d + 1 if d >= bdim else d for d in dimensions]), bdim


def _squeeze_batch_rule(axis_data, vals, dims, *, dimensions):
    (operand,), (bdim,) = vals, dims
    if bdim is not_mapped:
        return lax.squeeze(operand, dimensions), not_mapped
    operand = moveaxis(operand, bdim, 0)
    return lax.squeeze(operand, [d + 1 for d in dimensions]), 0


def _concatenate_batch_rule(axis_data, vals, dims, *, dimension):
    if all(d is not_mapped for d in dims):
        return lax.concatenate(vals, dimension), not_mapped
    size = _size(vals, dims)
    operands = [moveaxis(x, d, 0) if d is not not_mapped else lax.broadcast(x, (size,))
                for x, d in zip(vals, dims, strict=True)]
    return lax.concatenate(operands, dimension + 1), 0


def _pad_batch_rule(axis_data, vals, dims, *, padding_config):
    (operand, padding_value), (operand_bdim, value_bdim) = vals, dims
    if operand_bdim is not_mapped and value_bdim is not_mapped:
        return lax.pad(operand, padding_value, padding_config), not_mapped
    if operand_bdim is not_mapped:
        operand_bdim = 0
        operand = lax.broadcast(operand, (np.shape(padding_value)[value_bdim],))
    config = list(padding_config)
    config.insert(operand_bdim, (0, 0, 0))  # never pad the batch axis
    if value_bdim is not_mapped:
        return lax.pad(operand, padding_value, config), operand_bdim
    # one padding value per example: pad with zeros, then select the value where padding went
    padded = lax.pad(operand, np.zeros((), core.get_aval(operand).dtype), config)
    mask = lax.pad(lax.full_like(operand, True, np.bool_), False, config)
    values = lax.broadcast_in_dim(padding_value, np.shape(padded), (operand_bdim,))
    return lax.select(mask, padded, values), operand_bdim


def _iota_batch_rule(axis_data, vals, dims, **params):
    # no operands, so nothing is batched: the same iota for every example
    return lax.iota_p.bind(**params), not_mapped


def _empty2_batch_rule(axis_data, vals, dims, **params):
    return lax.empty2_p.bind(**params), not_mapped  # no operands, as iota


def _split_batch_rule(axis_data, vals, dims, *, sizes, axis):
    # every piece keeps the operand's batch axis; the split axis shifts past it
    (operand,), (bdim,) = vals, dims
    if bdim is not_mapped:
        outs = lax.split(operand, sizes, axis)
        return outs, [not_mapped] * len(outs)
    outs = lax.split(operand, sizes, axis + 1 if axis >= bdim else axis)
    return outs, [bdim] * len(outs)


def _tile_batch_rule(axis_data, vals, dims, *, reps):
    # the batch axis is tiled once: a rep of 1 where it sits
    (operand,), (bdim,) = vals, dims
    if bdim is not_mapped:
        return lax.tile(operand, reps), not_mapped
    return lax.tile(operand, (*reps[:bdim], 1, *reps[bdim:])), bdim


def _cumred_batch_rule(prim, axis_data, vals, dims, *, axis, reverse):
    # JAX: _cumred_batch_rule (cumsum, cumprod, cummax, cummin, cumlogsumexp)
    (operand,), (bdim,) = vals, dims
    if bdim is not_mapped:
        return prim.bind(operand, axis=axis, reverse=reverse), not_mapped
    return prim.bind(operand, axis=axis if axis < bdim else axis + 1, reverse=reverse), bdim


primitive_batchers[lax.broadcast_in_dim_p] = _broadcast_in_dim_batch_rule
primitive_batchers[lax.reshape_p] = _reshape_batch_rule
primitive_batchers[lax.transpose_p] = _transpose_batch_rule
primitive_batchers[lax.squeeze_p] = _squeeze_batch_rule
primitive_batchers[lax.rev_p] = _rev_batch_rule
primitive_batchers[lax.concatenate_p] = _concatenate_batch_rule
primitive_batchers[lax.pad_p] = _pad_batch_rule
primitive_batchers[lax.iota_p] = _iota_batch_rule
primitive_batchers[lax.empty2_p] = _empty2_batch_rule
primitive_batchers[lax.split_p] = _split_batch_rule
primitive_batchers[lax.tile_p] = _tile_batch_rule
for _p in (lax.cumsum_p, lax.cumprod_p, lax.cummax_p, lax.cummin_p, lax.cumlogsumexp_p):
    primitive_batchers[_p] = lambda axis_data, vals, dims, _p=_p, **params: \
        _cumred_batch_rule(_p, axis_data, vals, dims, **params)


# ------------------------------------------------------------------------------ slices


def _slice_batch_rule(axis_data, vals, dims, *, start_indices, limit_indices, strides):
    (operand,), (bdim,) = vals, dims
    if bdim is not_mapped:
        return lax.slice(operand, start_indices, limit_indices, strides), not_mapped
    # take the whole batch axis, where it already is
    starts, limits = list(start_indices), list(limit_indices)
    starts.insert(bdim, 0)
    limits.insert(bdim, np.shape(operand)[bdim])
    if strides is not None:
        strides = list(strides)
        strides.insert(bdim, 1)
    return lax.slice(operand, starts, limits, strides), bdim


primitive_batchers[lax.slice_p] = _slice_batch_rule
