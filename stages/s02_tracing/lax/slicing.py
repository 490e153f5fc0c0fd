"""Slices: static `slice`, and `dynamic_slice`/`dynamic_update_slice` whose starts are operands.

JAX: jax/_src/lax/slicing.py. This module also installs `ShapedArray._iter` (`for row in
tracer`, JAX: lax._iter in lax/lax.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import core, dtypes
from .bitwise import lt
from .elementwise import add
from .lax import convert_element_type, select
from .structural import squeeze
from .utils import argnum_weak_type, check_same_dtypes, const, first_dtype, standard_primitive

__all__ = [
    "dynamic_index_in_dim", "dynamic_slice", "dynamic_slice_in_dim", "dynamic_slice_p",
    "dynamic_update_slice", "dynamic_update_slice_in_dim", "dynamic_update_slice_p",
    "index_in_dim", "slice", "slice_in_dim", "slice_p",
]


def _slice_shape_rule(operand, *, start_indices, limit_indices, strides) -> tuple:
    if operand.ndim != len(start_indices):
        raise TypeError(
            "slice start_indices must have length equal to the number of dimensions of the "
            f"operand, got indices {start_indices} for operand shape {operand.shape}."
        )
    if len(start_indices) != len(limit_indices):
        raise TypeError(
            "slice limit_indices must have the same length as start_indices, "
            f"got start_indices {start_indices} and limit_indices {limit_indices}."
        )
    if any(lim > d for lim, d in zip(limit_indices, operand.shape, strict=False)):
        raise TypeError(
            "slice limit_indices must be less than or equal to operand shape, "
            f"got limit_indices {limit_indices} for operand shape {operand.shape}."
        )
    if any(s < 0 for s in start_indices):
        raise TypeError(
            "slice start_indices must be greater than or equal to zero, "
            f"got start_indices of {start_indices}."
        )
    if any(lim < s for s, lim in zip(start_indices, limit_indices, strict=False)):
        raise TypeError(
            "slice limit_indices must be greater than or equal to start_indices, "
            f"got start_indices {start_indices} and limit_indices {limit_indices}."
        )
    sizes = tuple(lim - s for s, lim in zip(start_indices, limit_indices, strict=False))
    if strides is None:
        return sizes
    if len(strides) != operand.ndim:
        raise TypeError(
            "slice strides must have length equal to the number of dimensions of the "
            f"operand, got strides {strides} for operand shape {operand.shape}."
        )
    if any(s <= 0 for s in strides):
        raise TypeError(f"slice strides must be positive, got {strides}")
    # ceil(size / stride) elements are picked along each axis
    return tuple(-(-size // s) for size, s in zip(sizes, strides, strict=False))


def _slice_impl(x, *, start_indices, limit_indices, strides) -> np.ndarray:
    steps = strides or (1,) * x.ndim
    bounds = zip(start_indices, limit_indices, steps, strict=True)
    index = tuple(np.s_[s:lim:st] for s, lim, st in bounds)
    return x[index].copy()


slice_p = standard_primitive(_slice_shape_rule, first_dtype, "slice", _slice_impl)


def slice(
    operand: Any,
    start_indices: Sequence[int],
    limit_indices: Sequence[int],
    strides: Sequence[int] | None = None,
) -> Any:
    """operand[start:limit:stride] along every axis, with static bounds."""
    return slice_p.bind(
        operand,
        start_indices=tuple(start_indices),  # numpy ints stay so, and print so, as in JAX
        limit_indices=tuple(limit_indices),
        strides=None if strides is None else tuple(strides),
    )


def slice_in_dim(operand: Any, start_index: int | None, limit_index: int | None,
                 stride: int = 1, axis: int = 0) -> Any:
    """`slice` along one axis; None and negative bounds read as in Python."""
    size = operand.shape[axis]
    start = 0 if start_index is None else int(start_index)
    limit = size if limit_index is None else int(limit_index)
    start = start + size if start < 0 else start
    limit = limit + size if limit < 0 else limit
    starts, limits, strides = [0] * operand.ndim, list(operand.shape), [1] * operand.ndim
    starts[axis], limits[axis], strides[axis] = start, limit, int(stride)
    return slice(operand, starts, limits, strides)


def index_in_dim(operand: Any, index: int, axis: int = 0, keepdims: bool = True) -> Any:
    """operand[..., index] along `axis`, with a static index (negative counts from the end)."""
    size = operand.shape[axis]
    wrapped = index + size if index < 0 else index
    if not 0 <= wrapped < size:
        raise IndexError(f"index {index} is out of bounds for axis {axis} with size {size}")
    result = slice_in_dim(operand, wrapped, wrapped + 1, 1, axis)
    return result if keepdims else squeeze(result, (axis,))


# ------------------------------------------------------------------ dynamic_slice


def _check_start_indices(name: str, start_indices: Sequence[core.ShapedArray]) -> None:
    if any(i.ndim != 0 for i in start_indices):
        shown = [str(i.shape) for i in start_indices]
        raise TypeError(f"start_indices arguments to {name} must be scalars, got {shown}")
    if any(
        i.dtype != start_indices[0].dtype or not dtypes.issubdtype(i.dtype, np.integer)
        for i in start_indices
    ):
        got = ", ".join(str(i.dtype) for i in start_indices)
        raise TypeError(f"index arguments to {name} must be integers of the same type, got {got}")


def _dynamic_slice_shape_rule(operand, *start_indices, slice_sizes) -> tuple:
    if len(start_indices) != operand.ndim:
        raise TypeError(
            "dynamic_slice start_indices must have length equal to the number of dimensions "
            f"of the operand, got {len(start_indices)} indices for operand shape "
            f"{operand.shape}."
        )
    if len(slice_sizes) != operand.ndim:
        raise TypeError(
            "dynamic_slice slice_sizes must have length equal to the number of dimensions of "
            f"the operand, got slice_sizes {slice_sizes} for operand shape {operand.shape}."
        )
    if any(size > d for size, d in zip(slice_sizes, operand.shape, strict=True)):
        raise TypeError(
            "slice slice_sizes must be less than or equal to operand shape, "
            f"got slice_sizes {slice_sizes} for operand shape {operand.shape}."
        )
    if any(size < 0 for size in slice_sizes):
        raise TypeError(
            "slice slice_sizes must be greater than or equal to zero, "
            f"got slice_sizes of {slice_sizes}."
        )
    _check_start_indices("dynamic_slice", start_indices)
    return tuple(slice_sizes)


def _clamped_starts(shape: Sequence[int], sizes: Sequence[int], starts: Sequence[Any]) -> list:
    # XLA clamps each start so the window fits: min(max(start, 0), dim - size)
    return [int(np.clip(s, 0, d - n)) for s, d, n in zip(starts, shape, sizes, strict=False)]


def _dynamic_slice_impl(x, *start_indices, slice_sizes) -> np.ndarray:
    starts = _clamped_starts(x.shape, slice_sizes, start_indices)
    return x[tuple(np.s_[s : s + n] for s, n in zip(starts, slice_sizes, strict=False))].copy()


dynamic_slice_p = standard_primitive(
    _dynamic_slice_shape_rule,
    first_dtype,
    "dynamic_slice",
    _dynamic_slice_impl,
    weak_type_rule=argnum_weak_type(0),
)


def _dynamic_update_slice_shape_rule(operand, update, *start_indices) -> tuple:
    if operand.ndim != update.ndim:
        raise TypeError(
            "dynamic_update_slice update must have the same rank as operand, "
            f"got update shape {update.shape} for operand shape {operand.shape}."
        )
    if operand.ndim != len(start_indices):
        raise TypeError(
            "dynamic_update_slice start_indices must have length equal to the rank of "
            f"operand, got indices {len(start_indices)} for operand shape {operand.shape}."
        )
    if any(u > d for u, d in zip(update.shape, operand.shape, strict=False)):
        raise TypeError(
            "dynamic_update_slice update shape must be smaller than operand shape, "
            f"got update shape {update.shape} for operand shape {operand.shape}."
        )
    _check_start_indices("dynamic_update_slice", start_indices)
    return operand.shape


def _dynamic_update_slice_dtype_rule(operand, update, *start_indices) -> np.dtype:
    check_same_dtypes("dynamic_update_slice", operand, update)
    return operand.dtype


def _dynamic_update_slice_impl(x, update, *start_indices) -> np.ndarray:
    starts = _clamped_starts(x.shape, update.shape, start_indices)
    out = x.copy()
    out[tuple(np.s_[s : s + n] for s, n in zip(starts, update.shape, strict=False))] = update
    return out


dynamic_update_slice_p = standard_primitive(
    _dynamic_update_slice_shape_rule,
    _dynamic_update_slice_dtype_rule,
    "dynamic_update_slice",
    _dynamic_update_slice_impl,
)


def _dynamic_slice_indices(operand: Any, start_indices: Sequence[Any],
                           allow_negative_indices: bool | Sequence[bool]) -> list:
    """Make negative starts count from the end: statically for ints, with a select if traced."""
    if len(start_indices) != np.ndim(operand):
        raise ValueError(
            "Length of slice indices must match number of operand dimensions "
            f"({len(start_indices)} vs {np.shape(operand)})"
        )
    if isinstance(allow_negative_indices, bool):
        allow_negative_indices = [allow_negative_indices] * len(start_indices)
    result = []
    per_axis = zip(start_indices, np.shape(operand), allow_negative_indices, strict=True)
    for i, d, allow_negative in per_axis:
        dtype = dtypes.dtype(i)
        if dtypes.issubdtype(dtype, np.unsignedinteger):
            result.append(i)
        elif isinstance(i, (int, np.integer)):
            # a static index: normalize now, then convert (a literal in a staged jaxpr; under
            # linearize's known side a computed value, as in JAX)
            i = int(i)
            if i < 0 and not allow_negative:
                raise ValueError(
                    f"Index {i} is out of bounds for dimension {d} if "
                    "allow_negative_indices=False"
                )
            result.append(convert_element_type(i + d if i < 0 else i, dtype))
        elif allow_negative:
            # i + d where i < 0; JAX writes `lax.select(i < 0, i + d_arr, i)` with jnp operators:
            # a weak i meets a weak 0 (a weak bool) and a strong d_arr (i is converted)
            is_negative = lt(i, const(i, 0))
            wrapped = add(convert_element_type(i, dtype), np.asarray(d, dtype))
            result.append(select(is_negative, wrapped, i))
        else:
            result.append(i)
    return result


def dynamic_slice(operand: Any, start_indices: Sequence[Any], slice_sizes: Sequence[int], *,
                  allow_negative_indices: bool | Sequence[bool] = True) -> Any:
    """A `slice_sizes` window starting at (possibly traced) `start_indices`, clamped to fit."""
    starts = _dynamic_slice_indices(operand, start_indices, allow_negative_indices)
    sizes = tuple(int(s) for s in slice_sizes)
    return dynamic_slice_p.bind(operand, *starts, slice_sizes=sizes)


def dynamic_update_slice(operand: Any, update: Any, start_indices: Sequence[Any], *,
                         allow_negative_indices: bool | Sequence[bool] = True) -> Any:
    """operand with `update` written at (possibly traced) `start_indices`, clamped to fit."""
    starts = _dynamic_slice_indices(operand, start_indices, allow_negative_indices)
    return dynamic_update_slice_p.bind(operand, update, *starts)


def _zero_like_index(index: Any) -> Any:
    # JAX: lax._const(index, 0): a Python int stays an int, anything else a 0 of its dtype
    if type(index) is int:
        return 0
    return np.asarray(0, dtypes.dtype(index))


def dynamic_slice_in_dim(operand: Any, start_index: Any, slice_size: int, axis: int = 0, *,
                         allow_negative_indices: bool = True) -> Any:
    """dynamic_slice along one axis: operand[..., start:start + slice_size]."""
    starts = [_zero_like_index(start_index)] * np.ndim(operand)
    sizes = list(np.shape(operand))
    allow = [False] * np.ndim(operand)
    starts[axis], sizes[axis], allow[axis] = start_index, int(slice_size), allow_negative_indices
    return dynamic_slice(operand, starts, sizes, allow_negative_indices=allow)


def dynamic_index_in_dim(operand: Any, index: Any, axis: int = 0, keepdims: bool = True, *,
                         allow_negative_indices: bool = True) -> Any:
    """operand[..., index] along `axis` for a possibly traced index."""
    result = dynamic_slice_in_dim(
        operand, index, 1, axis, allow_negative_indices=allow_negative_indices
    )
    return result if keepdims else squeeze(result, (axis,))


def dynamic_update_slice_in_dim(operand: Any, update: Any, start_index: Any, axis: int, *,
                                allow_negative_indices: bool = True) -> Any:
    """dynamic_update_slice along one axis."""
    starts = [_zero_like_index(start_index)] * np.ndim(operand)
    allow = [False] * np.ndim(operand)
    starts[axis], allow[axis] = start_index, allow_negative_indices
    return dynamic_update_slice(operand, update, starts, allow_negative_indices=allow)


def _iter(tracer: Any) -> Any:
    # `for row in x` on a tracer: one static index_in_dim per row (JAX: lax._iter)
    if tracer.ndim == 0:
        raise TypeError("iteration over a 0-d array")  # same as numpy's error
    return (index_in_dim(tracer, i, keepdims=False) for i in range(tracer.shape[0]))


core.ShapedArray._iter = staticmethod(_iter)
