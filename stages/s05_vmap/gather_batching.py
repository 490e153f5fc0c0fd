"""Batching gather and the scatters; dynamic_slice and dynamic_update_slice with batched starts
become one gather or scatter.

JAX: `_gather_batching_rule`, `_scatter_batching_rule`, `_dynamic_slice_batching_rule` and
`_dynamic_update_slice_batching_rule` in jax/_src/lax/slicing.py. The batch axis goes first on
every batched operand, and the dimension numbers say what it is: a window axis taken whole
(only the operand batched), one more batch axis of the indices (only the indices batched), or a
batching dimension pairing the two (both batched: example b reads only its own operand).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from stages.s02_tracing import core, lax
from stages.s02_tracing.lax import (
    GatherDimensionNumbers,
    GatherScatterMode,
    ScatterDimensionNumbers,
)

from ._jax_compat import numpy_ints
from .batching import AxisData, BatchDim, bdim_at_front, moveaxis, not_mapped, primitive_batchers


def _plus1(dims: Sequence[int]) -> tuple:
    return numpy_ints(np.add(1, dims))  # JAX computes these with np.add: they print as np.int64


# --8<-- [start:gather_batch]
def _gather_batch_rule(axis_data: AxisData, vals: Sequence[Any], dims: Sequence[BatchDim], *,
                       dimension_numbers: GatherDimensionNumbers, slice_sizes: tuple,
                       unique_indices: bool, indices_are_sorted: bool, mode: Any,
                       fill_value: Any) -> tuple[Any, BatchDim]:
    (operand, indices), (operand_bdim, indices_bdim) = vals, dims
    dn = dimension_numbers
    params = dict(mode=mode, fill_value=fill_value)
    if operand_bdim is not_mapped and indices_bdim is not_mapped:
        return lax.gather(operand, indices, dn, slice_sizes, unique_indices=unique_indices,
                          indices_are_sorted=indices_are_sorted, **params), not_mapped
    if indices_bdim is not_mapped:
        # every example's window is the same one: take the batch axis whole, as a window axis
        operand = moveaxis(operand, operand_bdim, 0)
        dn = GatherDimensionNumbers(
            offset_dims=(0, *_plus1(dn.offset_dims)),
            collapsed_slice_dims=_plus1(dn.collapsed_slice_dims),
            start_index_map=_plus1(dn.start_index_map),
            operand_batching_dims=_plus1(dn.operand_batching_dims),
            start_indices_batching_dims=dn.start_indices_batching_dims)
        return lax.gather(operand, indices, dn, (np.shape(operand)[0], *slice_sizes),
                          unique_indices=unique_indices,
                          indices_are_sorted=indices_are_sorted, **params), 0
    if operand_bdim is not_mapped:
        # one more batch axis of index vectors, in front
        indices = moveaxis(indices, indices_bdim, 0)
        dn = GatherDimensionNumbers(
            offset_dims=tuple(1 + d for d in dn.offset_dims),
            collapsed_slice_dims=dn.collapsed_slice_dims, start_index_map=dn.start_index_map,
            operand_batching_dims=dn.operand_batching_dims,
            start_indices_batching_dims=_plus1(dn.start_indices_batching_dims))
        # the batch may repeat or reorder indices: no longer sorted or unique
        return lax.gather(operand, indices, dn, slice_sizes, unique_indices=False,
                          indices_are_sorted=False, **params), 0
    # both batched: example b's index vectors read example b's operand (a batching dimension)
    operand = moveaxis(operand, operand_bdim, 0)
    indices = moveaxis(indices, indices_bdim, 0)
    first = 0 if np.shape(operand)[0] == 0 else 1
    dn = GatherDimensionNumbers(
        offset_dims=_plus1(dn.offset_dims),
        collapsed_slice_dims=_plus1(dn.collapsed_slice_dims),
        start_index_map=_plus1(dn.start_index_map),
        operand_batching_dims=(0, *_plus1(dn.operand_batching_dims)),
        start_indices_batching_dims=(0, *_plus1(dn.start_indices_batching_dims)))
    return lax.gather(operand, indices, dn, (first, *slice_sizes), unique_indices=unique_indices,
                      indices_are_sorted=indices_are_sorted, **params), 0
# --8<-- [end:gather_batch]


def _scatter_batch_rule(prim: core.Primitive, axis_data: AxisData, vals: Sequence[Any],
                        dims: Sequence[BatchDim], *, dimension_numbers: ScatterDimensionNumbers,
                        **params: Any) -> tuple[Any, BatchDim]:
    operand, indices, updates = vals
    operand_bdim, indices_bdim, updates_bdim = dims
    dn = dimension_numbers
    if all(d is not_mapped for d in dims):
        return prim.bind(operand, indices, updates, dimension_numbers=dn, **params), not_mapped
    # the operand must carry the batch (each example writes its own copy): axis 0 on both
    size = axis_data.size
    operand = bdim_at_front(operand, operand_bdim, size)
    updates = bdim_at_front(updates, updates_bdim, size)
    if indices_bdim is not_mapped:
        dn = ScatterDimensionNumbers(
            update_window_dims=(0, *_plus1(dn.update_window_dims)),
            inserted_window_dims=_plus1(dn.inserted_window_dims),
            scatter_dims_to_operand_dims=_plus1(dn.scatter_dims_to_operand_dims),
            operand_batching_dims=_plus1(dn.operand_batching_dims),
            scatter_indices_batching_dims=dn.scatter_indices_batching_dims)
        return prim.bind(operand, indices, updates, dimension_numbers=dn, **params), 0
    indices = bdim_at_front(indices, indices_bdim, size)
    dn = ScatterDimensionNumbers(
        update_window_dims=_plus1(dn.update_window_dims),
        inserted_window_dims=_plus1(dn.inserted_window_dims),
        scatter_dims_to_operand_dims=_plus1(dn.scatter_dims_to_operand_dims),
        operand_batching_dims=(0, *_plus1(dn.operand_batching_dims)),
        scatter_indices_batching_dims=(0, *_plus1(dn.scatter_indices_batching_dims)))
    return prim.bind(operand, indices, updates, dimension_numbers=dn, **params), 0


for _prim in (lax.scatter_p, lax.scatter_add_p, lax.scatter_mul_p, lax.scatter_min_p,
              lax.scatter_max_p):
    primitive_batchers[_prim] = lambda axis_data, vals, dims, _prim=_prim, **params: \
        _scatter_batch_rule(_prim, axis_data, vals, dims, **params)
primitive_batchers[lax.gather_p] = _gather_batch_rule


# ------------------------------------------------------------------ dynamic slices


def _batch_dynamic_slice_indices(indices: Sequence[Any], dims: Sequence[BatchDim]
                                 ) -> tuple[Any, BatchDim]:
    """The scalar start indices as one index vector (per example when any is batched)."""
    if not indices:
        return np.array([], np.int32), not_mapped
    size = next((np.shape(x)[d] for x, d in zip(indices, dims, strict=True)
                 if d is not not_mapped), None)
    if size is None:
        return lax.concatenate([lax.broadcast(i, (1,)) for i in indices], 0), not_mapped
    columns = [lax.broadcast_in_dim(x, (size, 1), (0,) if d is not not_mapped else ())
               for x, d in zip(indices, dims, strict=True)]
    return lax.concatenate(columns, 1), 0


def _dynamic_slice_batch_rule(axis_data: AxisData, vals: Sequence[Any],
                              dims: Sequence[BatchDim], *, slice_sizes: tuple
                              ) -> tuple[Any, BatchDim]:
    """A dynamic_slice is a gather of one window: batch it as one."""
    operand, *starts = vals
    operand_bdim, *start_dims = dims
    if all(d is not_mapped for d in dims):
        return lax.dynamic_slice_p.bind(operand, *starts, slice_sizes=slice_sizes), not_mapped
    every = tuple(range(np.ndim(operand) - (operand_bdim is not not_mapped)))
    dn = GatherDimensionNumbers(offset_dims=every, collapsed_slice_dims=(),
                                start_index_map=every)
    index, index_bdim = _batch_dynamic_slice_indices(starts, start_dims)
    return _gather_batch_rule(axis_data, [operand, index], [operand_bdim, index_bdim],
                              dimension_numbers=dn, slice_sizes=slice_sizes,
                              unique_indices=True, indices_are_sorted=True,
                              mode=GatherScatterMode.CLIP, fill_value=None)


def _dynamic_update_slice_batch_rule(axis_data: AxisData, vals: Sequence[Any],
                                     dims: Sequence[BatchDim]) -> tuple[Any, BatchDim]:
    """A dynamic_update_slice is a scatter of one window: batch it as one."""
    operand, update, *starts = vals
    operand_bdim, update_bdim, *start_dims = dims
    if all(d is not_mapped for d in dims):
        return lax.dynamic_update_slice_p.bind(operand, update, *starts), not_mapped
    every = tuple(range(np.ndim(update) - (update_bdim is not not_mapped)))
    dn = ScatterDimensionNumbers(update_window_dims=every, inserted_window_dims=(),
                                 scatter_dims_to_operand_dims=every)
    index, index_bdim = _batch_dynamic_slice_indices(starts, start_dims)
    return _scatter_batch_rule(
        lax.scatter_p, axis_data, [operand, index, update], [operand_bdim, index_bdim,
                                                              update_bdim],
        dimension_numbers=dn, update_jaxpr=None, update_consts=(), indices_are_sorted=True,
        unique_indices=True, mode=GatherScatterMode.CLIP)


primitive_batchers[lax.dynamic_slice_p] = _dynamic_slice_batch_rule
primitive_batchers[lax.dynamic_update_slice_p] = _dynamic_update_slice_batch_rule


def _sort_batch_rule(axis_data: AxisData, vals: Sequence[Any], dims: Sequence[BatchDim], *,
                     dimension: int, is_stable: bool, num_keys: int) -> tuple[list, list]:
    """Every operand batched along the same axis; the sorted axis shifts past it."""
    if all(d is not_mapped for d in dims):  # nothing batched: one sort for every example
        outs = lax.sort_p.bind(*vals, dimension=dimension, is_stable=is_stable,
                               num_keys=num_keys)
        return outs, [not_mapped] * len(outs)
    proto, bdim = next((x, d) for x, d in zip(vals, dims, strict=True) if d is not not_mapped)
    args = []
    for x, d in zip(vals, dims, strict=True):
        if d is not_mapped:
            keep = [i for i in range(np.ndim(proto)) if i != bdim]
            args.append(lax.broadcast_in_dim(x, np.shape(proto), keep))
        else:
            args.append(moveaxis(x, d, bdim))
    outs = lax.sort_p.bind(*args, dimension=dimension + (bdim <= dimension),
                           is_stable=is_stable, num_keys=num_keys)
    return outs, [bdim] * len(outs)


primitive_batchers[lax.sort_p] = _sort_batch_rule
