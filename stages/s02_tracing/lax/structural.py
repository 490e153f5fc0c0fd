"""Structural lax primitives: they move, add or drop axes and never look at the values.

JAX: jax/_src/lax/lax.py (broadcast_in_dim, reshape, transpose, squeeze, expand_dims,
concatenate, pad, iota, rev).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import core, dtypes
from ..array import Array
from .utils import (
    canonicalize_axis,
    check_same_dtypes,
    check_shapelike,
    first_dtype,
    standard_primitive,
)

__all__ = [
    "broadcast", "broadcast_in_dim", "broadcast_in_dim_p", "broadcasted_iota", "concatenate",
    "concatenate_p", "expand_dims", "iota", "iota_p", "pad", "pad_p", "reshape", "reshape_p",
    "rev", "rev_p", "squeeze", "squeeze_p", "transpose", "transpose_p",
]


# ------------------------------------------------------------------ broadcast_in_dim


def _broadcast_in_dim_shape_rule(operand, *, shape, broadcast_dimensions, sharding) -> tuple:
    check_shapelike("broadcast_in_dim", "shape", shape)
    check_shapelike("broadcast_in_dim", "broadcast_dimensions", broadcast_dimensions)
    if operand.ndim != len(broadcast_dimensions):
        raise TypeError(
            "broadcast_in_dim broadcast_dimensions must have length equal to operand ndim; "
            f"got broadcast_dimensions {broadcast_dimensions} for operand ndim {operand.ndim}."
        )
    if len(shape) < operand.ndim:
        raise TypeError(
            "broadcast_in_dim target broadcast shape must have equal or higher rank to the operand"
            f" shape; got operand ndim {operand.ndim} and target broadcast ndim {len(shape)}."
        )
    if not set(broadcast_dimensions) <= set(range(len(shape))):
        raise TypeError(
            "broadcast_in_dim broadcast_dimensions must be a subset of output dimensions, "
            f"got {broadcast_dimensions} for operand ndim {operand.ndim} and shape {shape}."
        )
    if any(operand.shape[i] not in (1, shape[d]) for i, d in enumerate(broadcast_dimensions)):
        raise TypeError(
            "broadcast_in_dim operand dimension sizes must either be 1, or be equal to their "
            "corresponding dimensions in the target broadcast shape; got operand of shape "
            f"{operand.shape}, target broadcast shape {shape}, "
            f"broadcast_dimensions {broadcast_dimensions} "
        )
    if len(set(broadcast_dimensions)) != len(broadcast_dimensions):
        raise TypeError(
            "broadcast_in_dim broadcast_dimensions must not contain duplicates, "
            f"got broadcast_dimensions {broadcast_dimensions}"
        )
    return shape


def _broadcast_in_dim_impl(x, *, shape, broadcast_dimensions, sharding) -> np.ndarray:
    # x's axes in the order of their output dimensions, size-1 axes between, then broadcast
    new_axes = [d for d in range(len(shape)) if d not in broadcast_dimensions]
    x = np.expand_dims(x.transpose(np.argsort(broadcast_dimensions)), new_axes)
    return np.broadcast_to(x, shape).copy()


broadcast_in_dim_p = standard_primitive(
    _broadcast_in_dim_shape_rule, first_dtype, "broadcast_in_dim", _broadcast_in_dim_impl
)


def _broadcast_in_dim_pp_rule(eqn, context, settings):
    # JAX's printer hides the shape (the binder shows it), sharding, and empty dimensions
    params = {k: v for k, v in eqn.params.items() if k not in ("shape", "sharding")}
    if not params["broadcast_dimensions"]:
        del params["broadcast_dimensions"]
    return core.default_pp_eqn(eqn.replace(params=params), context, settings)


core.pp_eqn_rules[broadcast_in_dim_p] = _broadcast_in_dim_pp_rule


def broadcast_in_dim(operand: Any, shape: Sequence[int], broadcast_dimensions: Sequence[int],
                     out_sharding: Any = None):
    """Broadcast to `shape`, operand axis i becoming output axis broadcast_dimensions[i]."""
    # an array or tracer already of that shape passes through (a numpy value becomes an Array;
    # JAX binds an identity broadcast, then its staging trace forwards the operand)
    identity = np.shape(operand) == tuple(shape) and \
        tuple(broadcast_dimensions) == tuple(range(len(shape)))
    if isinstance(operand, (core.Tracer, Array)) and out_sharding is None and (identity or (
            np.ndim(operand) == len(shape) and not len(broadcast_dimensions))):
        return operand
    # `sharding`: the result's, on a mesh with Explicit axes (stage 11); else None
    return broadcast_in_dim_p.bind(
        operand,
        shape=tuple(int(d) for d in shape),
        broadcast_dimensions=tuple(broadcast_dimensions),  # numpy ints stay so, as in JAX
        sharding=out_sharding,
    )


def broadcast(operand: Any, sizes: Sequence[int], out_sharding: Any = None) -> Any:
    """Add leading axes of the given sizes."""
    ndim = np.ndim(operand)
    if len(sizes) == 0 and out_sharding is None:
        return operand  # nothing to add: no equation (a Python scalar stays weak)
    dims = tuple(range(len(sizes), len(sizes) + ndim))
    return broadcast_in_dim(operand, tuple(sizes) + np.shape(operand), dims, out_sharding)


def expand_dims(array: Any, dimensions: Sequence[int]) -> Any:
    """Insert size-1 axes at `dimensions` (positions in the result), via broadcast_in_dim."""
    if len(set(dimensions)) != len(dimensions):
        raise ValueError(f"repeated axis in lax.expand_dims: {dimensions}")
    ndim_out = np.ndim(array) + len(dimensions)
    dims = {canonicalize_axis(d, ndim_out) for d in dimensions}
    if len(dims) != len(dimensions):
        raise ValueError(f"repeated axis in lax.expand_dims: {sorted(dims)}")
    shape = list(np.shape(array))
    for d in sorted(dims):
        shape.insert(d, 1)
    kept = [d for d in range(ndim_out) if d not in dims]
    return broadcast_in_dim(array, shape, kept)


# ------------------------------------------------------------------ reshape, transpose, squeeze


def _reshape_shape_rule(operand, *, new_sizes, dimensions, sharding) -> tuple:
    if any(d < 0 for d in new_sizes):
        raise TypeError(f"reshape new_sizes must all be positive, got {new_sizes}.")
    if dimensions is not None and set(dimensions) != set(range(operand.ndim)):
        raise TypeError(
            "reshape dimensions must be a permutation of operand dimensions, "
            f"got dimensions {dimensions} for shape {operand.shape}."
        )
    # JAX defers this check to compilation; we fail at trace time, naming both shapes.
    if math.prod(new_sizes) != math.prod(operand.shape):
        raise TypeError(
            f"reshape total size must be unchanged, got new_sizes {new_sizes} "
            f"({math.prod(new_sizes)} elements) for shape {operand.shape} "
            f"({math.prod(operand.shape)} elements)."
        )
    return new_sizes


def _reshape_impl(x, *, new_sizes, dimensions, sharding) -> np.ndarray:
    if dimensions is not None:
        x = np.transpose(x, dimensions)
    return np.reshape(x, new_sizes)


reshape_p = standard_primitive(_reshape_shape_rule, first_dtype, "reshape", _reshape_impl)


def reshape(operand: Any, new_sizes: Sequence[int], dimensions: Sequence[int] | None = None,
            out_sharding: Any = None):
    """Row-major reshape, after transposing by `dimensions` when given."""
    new_sizes = tuple(int(d) for d in new_sizes)
    same_dims = dimensions is None or tuple(dimensions) == tuple(range(np.ndim(operand)))
    # JAX stages a reshape of a rank-0 operand to rank 0 all the same
    if np.shape(operand) and new_sizes == np.shape(operand) and same_dims and \
            isinstance(operand, (core.Tracer, Array)):
        return operand
    dims = None if same_dims else tuple(int(d) for d in dimensions)
    return reshape_p.bind(operand, new_sizes=new_sizes, dimensions=dims, sharding=out_sharding)


def _transpose_shape_rule(operand, *, permutation) -> tuple:
    if tuple(sorted(permutation)) != tuple(range(operand.ndim)):
        raise TypeError(
            "transpose permutation isn't a permutation of operand dimensions, "
            f"got permutation {permutation} for operand shape {operand.shape}."
        )
    return tuple(operand.shape[d] for d in permutation)


transpose_p = standard_primitive(_transpose_shape_rule, first_dtype, "transpose",
                                 lambda x, *, permutation: np.transpose(x, permutation))


def transpose(operand: Any, permutation: Sequence[int]) -> Any:
    """Permute axes: output axis i is operand axis permutation[i]."""
    permutation = tuple(int(d) for d in permutation)
    if isinstance(operand, (core.Tracer, Array)) and permutation == tuple(range(operand.ndim)):
        return operand
    return transpose_p.bind(operand, permutation=permutation)


def _rev_shape_rule(operand, *, dimensions) -> tuple:
    check_shapelike("rev", "dimensions", dimensions)
    if len(set(dimensions)) != len(dimensions):
        raise TypeError(f"rev dimensions must be unique, got {dimensions}.")
    if dimensions and not max(dimensions) < operand.ndim:
        raise TypeError("rev dimensions must all be less than operand ndim, got dimensions "
                        f"{dimensions} for operand ndim {operand.ndim}.")
    return operand.shape


rev_p = standard_primitive(
    _rev_shape_rule, first_dtype, "rev", lambda x, *, dimensions: np.flip(x, dimensions).copy()
)


def rev(operand: Any, dimensions: Sequence[int]) -> Any:
    """Reverse the order of elements along each of `dimensions`."""
    return rev_p.bind(operand, dimensions=tuple(dimensions))


def _squeeze_shape_rule(operand, *, dimensions) -> tuple:
    if len(set(dimensions)) != len(dimensions):
        raise ValueError(f"dimensions are not unique: {dimensions}")
    if not all(0 <= d < operand.ndim for d in dimensions):
        raise ValueError(f"dimensions outside range [0, ndim): {dimensions}")
    if any(operand.shape[d] != 1 for d in dimensions):
        raise ValueError(
            "cannot select an axis to squeeze out which has size not equal to one, "
            f"got shape={operand.shape} and dimensions={dimensions}"
        )
    return tuple(s for d, s in enumerate(operand.shape) if d not in dimensions)


squeeze_p = standard_primitive(_squeeze_shape_rule, first_dtype, "squeeze",
                               lambda x, *, dimensions: np.squeeze(x, axis=dimensions))


def squeeze(array: Any, dimensions: Sequence[int]) -> Any:
    """Drop the given size-1 axes."""
    ndim = np.ndim(array)
    dimensions = tuple(sorted(canonicalize_axis(d, ndim) for d in dimensions))
    if not dimensions and isinstance(array, (core.Tracer, Array)):
        return array
    return squeeze_p.bind(array, dimensions=dimensions)


# ------------------------------------------------------------------ concatenate, pad


def _concatenate_shape_rule(*operands, dimension) -> tuple:
    if not operands:
        raise TypeError("concatenate expects at least one operand, got 0.")
    shapes = ", ".join(str(o.shape) for o in operands)
    if len({o.ndim for o in operands}) != 1:
        raise TypeError(
            f"Cannot concatenate arrays with different numbers of dimensions: got {shapes}."
        )
    if not 0 <= dimension < operands[0].ndim:
        raise TypeError(
            f"concatenate dimension out of bounds: dimension {dimension} for shapes {shapes}."
        )
    others = {o.shape[:dimension] + o.shape[dimension + 1 :] for o in operands}
    if len(others) != 1:
        raise TypeError(
            "Cannot concatenate arrays with shapes that differ in dimensions other than the "
            f"one being concatenated: concatenating along dimension {dimension} for shapes "
            f"{shapes}."
        )
    size = sum(o.shape[dimension] for o in operands)
    first = operands[0].shape
    return first[:dimension] + (size,) + first[dimension + 1 :]


def _concatenate_dtype_rule(*operands, dimension) -> np.dtype:
    check_same_dtypes("concatenate", *operands)
    return operands[0].dtype


concatenate_p = standard_primitive(_concatenate_shape_rule, _concatenate_dtype_rule, "concatenate",
                                   lambda *xs, dimension: np.concatenate(xs, axis=dimension))


def concatenate(operands: Sequence[Any], dimension: int) -> Any:
    """Join arrays along an existing axis."""
    if len(operands) == 0:
        raise ValueError("concatenate requires a non-empty sequences of arrays")
    if len(operands) == 1 and isinstance(operands[0], (core.Tracer, Array)):
        return operands[0]
    return concatenate_p.bind(*operands, dimension=int(dimension))


def _pad_shape_rule(operand, padding_value, *, padding_config) -> tuple:
    if padding_value.ndim != 0:
        raise ValueError(f"padding_value must be a scalar; got {padding_value.shape}")
    if len(padding_config) != operand.ndim:
        raise ValueError(
            "length of padding_config must equal the number of axes of operand, got "
            f"padding_config {padding_config} for operand shape {operand.shape}"
        )
    if any(interior < 0 for _, _, interior in padding_config):
        raise ValueError(
            f"interior padding in padding_config must be nonnegative, got {padding_config}"
        )
    # d elements with `interior` fill between each pair, plus low and high (may be negative)
    out = tuple(
        lo + hi + (d + (d - 1) * interior if d else 0)
        for (lo, hi, interior), d in zip(padding_config, operand.shape, strict=False)
    )
    if any(d < 0 for d in out):
        raise ValueError(
            f"Dimension size after padding is not at least 0, got result shape {out}, for "
            f"padding_config {padding_config} and operand shape {operand.shape}"
        )
    return out


def _pad_dtype_rule(operand, padding_value, *, padding_config) -> np.dtype:
    if operand.dtype != padding_value.dtype:
        raise TypeError(
            "pad operand and padding_value must be same dtype: "
            f"got {operand.dtype} and {padding_value.dtype}."
        )
    return operand.dtype


def _pad_impl(x, padding_value, *, padding_config) -> np.ndarray:
    for axis, (lo, hi, interior) in enumerate(padding_config):
        n = x.shape[axis]
        if interior and n > 1:
            # scatter the n elements into a longer axis with `interior` gaps between them
            shape = list(x.shape)
            shape[axis] = n + (n - 1) * interior
            spread = np.full(shape, padding_value, x.dtype)
            index = [np.s_[:]] * x.ndim
            index[axis] = np.s_[:: interior + 1]
            spread[tuple(index)] = x
            x = spread
        widths = [(0, 0)] * x.ndim
        widths[axis] = (max(lo, 0), max(hi, 0))
        x = np.pad(x, widths, constant_values=padding_value)
        # then negative low/high padding crops, the other side's padding too if it reaches it
        index = [np.s_[:]] * x.ndim
        index[axis] = np.s_[max(-lo, 0) : x.shape[axis] - max(-hi, 0)]
        x = x[tuple(index)]
    return x


pad_p = standard_primitive(_pad_shape_rule, _pad_dtype_rule, "pad", _pad_impl)


def pad(operand: Any, padding_value: Any, padding_config: Sequence[tuple[int, int, int]]):
    """Pad each axis by (low, high, interior); negative low/high crop."""
    # the numbers kept as given, as JAX keeps them (an np.int64 prints as one); tuples, to hash
    config = tuple(tuple(c) for c in padding_config)
    return pad_p.bind(operand, padding_value, padding_config=config)


# ------------------------------------------------------------------ iota


def _iota_abstract_eval(*, dtype, shape, dimension, sharding) -> core.ShapedArray:
    if not dtypes.issubdtype(dtype, np.number):
        raise TypeError(
            f"iota does not accept dtype {np.dtype(dtype).name}. "
            "Accepted dtypes are subtypes of integer, floating, complexfloating."
        )
    if not 0 <= dimension < len(shape):
        raise ValueError(
            "iota dimension must be between 0 and len(shape), got "
            f"dimension={dimension} for shape={shape}"
        )
    return core.ShapedArray(shape, dtype)


def _iota_impl(*, dtype, shape, dimension, sharding) -> np.ndarray:
    _iota_abstract_eval(dtype=dtype, shape=shape, dimension=dimension, sharding=sharding)
    view = [1] * len(shape)
    view[dimension] = shape[dimension]
    return np.broadcast_to(np.arange(shape[dimension], dtype=dtype).reshape(view), shape).copy()


# iota has no operands, so it is built by hand rather than with standard_primitive
iota_p = core.Primitive("iota")
iota_p.def_abstract_eval(_iota_abstract_eval)
iota_p.def_impl(_iota_impl)


def broadcasted_iota(dtype: Any, shape: Sequence[int], dimension: int) -> Any:
    """0, 1, 2, ... along `dimension`, repeated along the other axes of `shape`."""
    dtype = dtypes.check_and_canonicalize_user_dtype(dtype, "broadcasted_iota")
    shape = tuple(int(d) for d in shape)
    return iota_p.bind(dtype=dtype, shape=shape, dimension=int(dimension), sharding=None)


def iota(dtype: Any, size: int) -> Any:
    """0, 1, ..., size - 1 as a 1-D array of `dtype`."""
    return broadcasted_iota(dtype, (size,), 0)
