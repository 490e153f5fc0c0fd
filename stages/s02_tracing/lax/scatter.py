"""scatter and its combining variants: gather's mirror image, writing windows into an operand.

JAX: jax/_src/lax/slicing.py (`ScatterDimensionNumbers`, `scatter`, `scatter_add`, `scatter_mul`,
`scatter_min`, `scatter_max`). For every index vector of `scatter_indices`, the window of
`updates` at that position (its axes `update_window_dims`) is combined into the operand where
the index vector says: replaced (`scatter`), added, multiplied, or min/max-ed. Axes listed in
`inserted_window_dims` are size-1 window axes the updates leave out. The combining variants
carry the combiner as a one-equation jaxpr (`update_jaxpr`), as JAX's do.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from .. import core, dtypes
from .gather import (
    GatherScatterMode,
    index_dtype_rule,
    is_sorted,
    no_duplicate_dims,
    window_starts,
)
from .utils import argnum_weak_type, check_same_dtypes, standard_primitive

__all__ = ["ScatterDimensionNumbers", "scatter", "scatter_add", "scatter_add_p",
           "scatter_max", "scatter_max_p", "scatter_min", "scatter_min_p", "scatter_mul",
           "scatter_mul_p", "scatter_p"]


class ScatterDimensionNumbers(NamedTuple):
    """Which update axes are window axes, which operand window axes the updates leave out,
    which operand axis each index component addresses, and the batch axes on both sides."""

    update_window_dims: Sequence[int]
    inserted_window_dims: Sequence[int]
    scatter_dims_to_operand_dims: Sequence[int]
    operand_batching_dims: Sequence[int] = ()
    scatter_indices_batching_dims: Sequence[int] = ()


def _scatter_dtype_rule(operand: core.ShapedArray, indices: core.ShapedArray,
                        updates: core.ShapedArray, **params: Any) -> np.dtype:
    index_dtype_rule("scatter")(operand, indices)
    check_same_dtypes("scatter", operand, updates)
    return operand.dtype


def _scatter_shape_rule(operand: core.ShapedArray, indices: core.ShapedArray,
                        updates: core.ShapedArray, *, dimension_numbers: ScatterDimensionNumbers,
                        **params: Any) -> tuple[int, ...]:
    dn = dimension_numbers
    is_sorted(dn.update_window_dims, "scatter", "update_window_dims")
    no_duplicate_dims(dn.update_window_dims, "scatter", "update_window_dims")
    is_sorted(dn.inserted_window_dims, "scatter", "inserted_window_dims")
    ivd = indices.ndim - 1
    if len(dn.scatter_dims_to_operand_dims) != indices.shape[ivd]:
        raise TypeError(f"Scatter op has {len(dn.scatter_dims_to_operand_dims)} elements in "
                        "scatter_dims_to_operand_dims and the bound of dimension "
                        f"index_vector_dim={ivd} of indices is {indices.shape[ivd]}. These two "
                        "numbers must be equal")
    expected = len(dn.update_window_dims) + indices.ndim - 1
    if updates.ndim != expected:
        raise TypeError(f"Updates tensor must be of rank {expected}; got {updates.ndim}.")
    return operand.shape


def scatter_window_sizes(operand_shape: Sequence[int], updates_shape: Sequence[int],
                  dn: ScatterDimensionNumbers) -> list[int]:
    """The window each update writes, as operand-shaped sizes (1 on inserted/batching axes)."""
    sizes, window = [], iter(dn.update_window_dims)
    for i in range(len(operand_shape)):
        if i in dn.inserted_window_dims or i in dn.operand_batching_dims:
            sizes.append(1)
        else:
            sizes.append(updates_shape[next(window)])
    return sizes


def _scatter_impl(combine: Callable, operand: np.ndarray, indices: np.ndarray,
                  updates: np.ndarray, *, dimension_numbers: ScatterDimensionNumbers,
                  mode: GatherScatterMode, **params: Any) -> np.ndarray:
    dn = dimension_numbers
    out = operand.copy()
    sizes = scatter_window_sizes(operand.shape, updates.shape, dn)
    scatter_axes = [d for d in range(updates.ndim) if d not in dn.update_window_dims]
    for b in np.ndindex(*indices.shape[:-1]):
        start, oob = window_starts(operand.shape, sizes, indices[b],
                                   dn.scatter_dims_to_operand_dims, b,
                                   dn.operand_batching_dims, dn.scatter_indices_batching_dims)
        if oob and mode != GatherScatterMode.CLIP:
            continue  # an update whose window does not fit is dropped (XLA's semantics)
        where = [slice(None)] * updates.ndim
        for axis, i in zip(scatter_axes, b, strict=True):
            where[axis] = i
        window = updates[tuple(where)].reshape(sizes)
        region = tuple(slice(s, s + n) for s, n in zip(start, sizes, strict=True))
        out[region] = combine(out[region], window)
    return out


def _scatter_primitive(name: str, combine: Callable) -> core.Primitive:
    return standard_primitive(_scatter_shape_rule, _scatter_dtype_rule, name,
                              functools.partial(_scatter_impl, combine),
                              weak_type_rule=argnum_weak_type(0))


scatter_p = _scatter_primitive("scatter", lambda old, new: new)
scatter_add_p = _scatter_primitive("scatter-add", np.add)
scatter_mul_p = _scatter_primitive("scatter-mul", np.multiply)
scatter_min_p = _scatter_primitive("scatter-min", np.minimum)
scatter_max_p = _scatter_primitive("scatter-max", np.maximum)


@functools.cache
def _reduction_jaxpr(op: Callable, dtype: np.dtype, weak_type: bool) -> core.Jaxpr:
    """The combiner as a jaxpr of two scalars (JAX: lax._reduction_jaxpr)."""
    from .. import linear_util as lu  # the tracing machinery sits above lax
    from .. import partial_eval as pe

    scalar = core.ShapedArray((), dtype, weak_type)
    return pe.trace_to_closed_jaxpr(lu.wrap_init(lambda x, y: [op(x, y)]), [scalar] * 2).jaxpr


def _bind_combining(prim: core.Primitive, op_name: str, operand: Any, scatter_indices: Any,
                    updates: Any, dimension_numbers: ScatterDimensionNumbers,
                    indices_are_sorted: bool, unique_indices: bool, mode: Any) -> Any:
    from . import elementwise  # the combiners: add, mul, min, max

    # JAX types the combiner by lax._const(operand, 0): weak only for a Python scalar operand
    jaxpr = _reduction_jaxpr(getattr(elementwise, op_name), dtypes.dtype(operand),
                             type(operand) in (bool, int, float, complex))
    return prim.bind(operand, scatter_indices, updates, update_jaxpr=jaxpr, update_consts=(),
                     dimension_numbers=dimension_numbers,
                     indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                     mode=GatherScatterMode.from_any(mode))


def _combining(prim: core.Primitive, op_name: str, doc: str) -> Callable:
    def scatter_op(operand: Any, scatter_indices: Any, updates: Any,
                   dimension_numbers: ScatterDimensionNumbers, *,
                   indices_are_sorted: bool = False, unique_indices: bool = False,
                   mode: str | GatherScatterMode | None = None) -> Any:
        return _bind_combining(prim, op_name, operand, scatter_indices, updates,
                               dimension_numbers, indices_are_sorted, unique_indices, mode)
    scatter_op.__name__ = f"scatter_{op_name}"
    scatter_op.__doc__ = doc
    return scatter_op


scatter_add = _combining(scatter_add_p, "add", "Scatter with each update added in.")
scatter_mul = _combining(scatter_mul_p, "mul", "Scatter with each update multiplied in.")
scatter_min = _combining(scatter_min_p, "min", "Scatter keeping the minimum.")
scatter_max = _combining(scatter_max_p, "max", "Scatter keeping the maximum.")


def scatter(operand: Any, scatter_indices: Any, updates: Any,
            dimension_numbers: ScatterDimensionNumbers, *, indices_are_sorted: bool = False,
            unique_indices: bool = False, mode: str | GatherScatterMode | None = None) -> Any:
    """Scatter replacing the operand's values (with repeated indices, any one update wins)."""
    return scatter_p.bind(operand, scatter_indices, updates, update_jaxpr=None,
                          update_consts=(), dimension_numbers=dimension_numbers,
                          indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                          mode=GatherScatterMode.from_any(mode))
