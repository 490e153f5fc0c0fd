"""gather: many slices of one operand, their start positions read from an array of indices.

JAX: jax/_src/lax/slicing.py (`GatherDimensionNumbers`, `GatherScatterMode`, `gather`, the
shape rule). XLA's gather in one sentence: for every position `b` of the indices' batch shape
(all of `start_indices` but its last axis, which holds one index vector), cut a `slice_sizes`
window out of the operand starting where the index vector says, drop the window axes listed in
`collapsed_slice_dims` (size 1), and lay the result out with the window axes at `offset_dims`
of the output and the batch axes everywhere else. `operand_batching_dims` pair operand axes with
index batch axes (`start_indices_batching_dims`): window b reads slice b[k] of that operand axis,
which is how vmap batches a gather whose operand and indices are both batched.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from .. import core, dtypes
from .utils import argnum_weak_type, standard_primitive

__all__ = ["GatherDimensionNumbers", "GatherScatterMode", "gather", "gather_p"]


class GatherDimensionNumbers(NamedTuple):
    """Which output axes are window axes, which operand axes are dropped, which operand axis
    each index component addresses, and which axes are batch axes on both sides."""

    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    start_indices_batching_dims: tuple[int, ...] = ()


class GatherScatterMode(enum.Enum):
    """Out-of-bounds indices: CLIP clamps the window into range; FILL_OR_DROP fills a gathered
    window with `fill_value` (and drops a scattered one); PROMISE_IN_BOUNDS promises they never
    occur (XLA clamps gathers and drops scatters)."""

    CLIP = enum.auto()
    FILL_OR_DROP = enum.auto()
    PROMISE_IN_BOUNDS = enum.auto()
    ONE_HOT = enum.auto()

    @staticmethod
    def from_any(s: str | GatherScatterMode | None) -> GatherScatterMode:
        if isinstance(s, GatherScatterMode):
            return s
        if s == "clip":
            return GatherScatterMode.CLIP
        if s is None or s == "fill" or s == "drop":
            return GatherScatterMode.FILL_OR_DROP
        if s == "promise_in_bounds":
            return GatherScatterMode.PROMISE_IN_BOUNDS
        if s == "one_hot":
            return GatherScatterMode.ONE_HOT
        raise ValueError(f'Unknown gather mode "{s}"')


# ------------------------------------------------------------------ checks (JAX's messages)


def is_sorted(dims: Sequence[int], op: str, name: str) -> None:
    if any(dims[i] < dims[i - 1] for i in range(1, len(dims))):
        raise TypeError(f"{name} in {op} op must be sorted; got {dims}")


def no_duplicate_dims(dims: Sequence[int], op: str, name: str) -> None:
    if len(set(dims)) != len(dims):
        raise TypeError(f"{name} in {op} op must not repeat; got: {dims}.")


def _sorted_dims_in_range(dims: Sequence[int], rank: int, op: str, name: str) -> None:
    if not dims:
        return
    invalid = dims[0] if dims[0] < 0 else dims[-1] if dims[-1] >= rank else None
    if invalid:
        raise TypeError(f"Invalid {name} set in {op} op; valid range is [0, {rank}); "
                        f"got: {invalid}.")


def index_dtype_rule(op: str):
    def rule(operand: core.ShapedArray, indices: core.ShapedArray, *rest: Any,
             **params: Any) -> np.dtype:
        if not dtypes.issubdtype(indices.dtype, np.integer):
            raise ValueError("indices must have an integer type")
        return operand.dtype
    return rule


# ------------------------------------------------------------------ the primitive


def _gather_shape_rule(operand: core.ShapedArray, indices: core.ShapedArray, *,
                       dimension_numbers: GatherDimensionNumbers, slice_sizes: tuple,
                       **params: Any) -> tuple[int, ...]:
    dn = dimension_numbers
    ivd = indices.ndim - 1  # the index vector is always the last axis
    is_sorted(dn.offset_dims, "gather", "offset_dims")
    no_duplicate_dims(dn.offset_dims, "gather", "offset_dims")
    out_rank = len(dn.offset_dims) + indices.ndim - 1
    for i, d in enumerate(dn.offset_dims):
        if d < 0 or d >= out_rank:
            raise TypeError(f"Offset dimension {i} in gather op is out of bounds; got {d}, but "
                            f"should have been in [0, {out_rank})")
    if len(dn.start_index_map) != indices.shape[ivd]:
        raise TypeError(f"Gather op has {len(dn.start_index_map)} elements in start_index_map "
                        f"and the bound of dimension index_vector_dim={ivd} of indices is "
                        f"{indices.shape[ivd]}. These two numbers must be equal.")
    is_sorted(dn.collapsed_slice_dims, "gather", "collapsed_slice_dims")
    _sorted_dims_in_range(dn.collapsed_slice_dims, operand.ndim, "gather",
                          "collapsed_slice_dims")
    if operand.ndim != len(slice_sizes):
        raise TypeError("Gather op must have one slice size for every input dimension; got: "
                        f"len(slice_sizes)={len(slice_sizes)}, input_shape.rank={operand.ndim}")
    for i, (size, dim) in enumerate(zip(slice_sizes, operand.shape, strict=True)):
        if not 0 <= size <= dim:
            raise TypeError(f"Slice size at index {i} in gather op is out of range, must be "
                            f"within [0, {dim} + 1), got {size}.")
    for i, d in enumerate(dn.collapsed_slice_dims):
        if slice_sizes[d] != 1:
            raise TypeError("Gather op can only collapse slice dims with bound 1, but bound is "
                            f"{slice_sizes[d]} for index {d} at position {i}.")
    window = iter(s for i, s in enumerate(slice_sizes)
                  if i not in dn.collapsed_slice_dims and i not in dn.operand_batching_dims)
    batch = iter(indices.shape[:-1])
    return tuple(next(window) if i in dn.offset_dims else next(batch) for i in range(out_rank))


def window_starts(shape: Sequence[int], sizes: Sequence[int], index_vector: np.ndarray,
                  index_map: Sequence[int], batch_pos: tuple, operand_batching: Sequence[int],
                  indices_batching: Sequence[int]) -> tuple[list[int], bool]:
    """Where one window starts in the operand, and whether the index put it out of bounds."""
    start = [0] * len(shape)
    for k, d in enumerate(index_map):
        start[d] = int(index_vector[k])
    for d, idim in zip(operand_batching, indices_batching, strict=True):
        start[d] = batch_pos[idim]
    oob = any(not 0 <= start[d] <= shape[d] - sizes[d] for d in index_map)
    return [min(max(s, 0), n - k) for s, n, k in zip(start, shape, sizes, strict=True)], oob


def _gather_impl(operand: np.ndarray, indices: np.ndarray, *,
                 dimension_numbers: GatherDimensionNumbers, slice_sizes: tuple,
                 mode: GatherScatterMode, fill_value: Any, **params: Any) -> np.ndarray:
    dn = dimension_numbers
    kept = [i for i in range(operand.ndim)
            if i not in dn.collapsed_slice_dims and i not in dn.operand_batching_dims]
    batch_shape = indices.shape[:-1]
    out = np.empty(batch_shape + tuple(slice_sizes[i] for i in kept), operand.dtype)
    for b in np.ndindex(*batch_shape):
        start, oob = window_starts(operand.shape, slice_sizes, indices[b], dn.start_index_map,
                                   b, dn.operand_batching_dims, dn.start_indices_batching_dims)
        if oob and mode == GatherScatterMode.FILL_OR_DROP:
            out[b] = fill_value
            continue
        window = operand[tuple(slice(s, s + n) for s, n in zip(start, slice_sizes, strict=True))]
        out[b] = window.reshape(out.shape[len(batch_shape):])
    # batch axes first, window axes last: move the window axes to offset_dims
    nb = len(batch_shape)
    batch_positions = [i for i in range(out.ndim) if i not in dn.offset_dims]
    perm = [nb + dn.offset_dims.index(i) if i in dn.offset_dims else batch_positions.index(i)
            for i in range(out.ndim)]
    return out.transpose(perm)


gather_p = standard_primitive(_gather_shape_rule, index_dtype_rule("gather"), "gather",
                              _gather_impl, weak_type_rule=argnum_weak_type(0))


def default_fill_value(dtype: np.dtype) -> Any:
    """What FILL_OR_DROP puts in an out-of-bounds window: NaN, or the dtype's extreme value."""
    if dtypes.issubdtype(dtype, np.inexact):
        return np.nan
    if dtypes.issubdtype(dtype, np.signedinteger):
        return int(np.iinfo(dtype).min)
    if dtypes.issubdtype(dtype, np.unsignedinteger):
        return int(np.iinfo(dtype).max)
    if dtype == np.bool_:
        return True
    raise ValueError(f"Unsupported dtype for gather fill_value {dtype}")


# --8<-- [start:gather]
def gather(operand: Any, start_indices: Any, dimension_numbers: GatherDimensionNumbers,
           slice_sizes: Sequence[int], *, unique_indices: bool = False,
           indices_are_sorted: bool = False, mode: str | GatherScatterMode | None = None,
           fill_value: Any = None) -> Any:
    """XLA's gather: one `slice_sizes` window of operand per index vector of start_indices."""
    # lax.gather's default is PROMISE_IN_BOUNDS; numpy indexing asks for FILL_OR_DROP
    parsed = GatherScatterMode.from_any(GatherScatterMode.PROMISE_IN_BOUNDS
                                        if mode is None else mode)
    if parsed == GatherScatterMode.FILL_OR_DROP:
        if fill_value is None:
            fill_value = default_fill_value(dtypes.dtype(operand))
    else:
        fill_value = None
    return gather_p.bind(operand, start_indices, dimension_numbers=dimension_numbers,
                         slice_sizes=tuple(int(s) for s in slice_sizes),
                         unique_indices=bool(unique_indices),
                         indices_are_sorted=bool(indices_are_sorted), mode=parsed,
                         fill_value=fill_value)
# --8<-- [end:gather]
