"""Reductions: reduce_sum/max/min/or/and/xor over axes, argmax/argmin along one axis, cumsum.

JAX: jax/_src/lax/lax.py (reduce_*_p, argmax_p) and jax/_src/lax/control_flow/loops.py
(cumsum_p). lax takes only non-negative axes; jax.numpy normalizes negative ones first. The
logical reductions are bitwise on ints (jnp.any/all reduce bools with them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import core, dtypes
from .kernels import max_impl, min_impl
from .utils import never_weak, standard_primitive

__all__ = [
    "argmax", "argmax_p", "argmin", "argmin_p", "cumsum", "cumsum_p", "reduce_max", "reduce_max_p",
    "reduce_and", "reduce_and_p", "reduce_min", "reduce_min_p", "reduce_or", "reduce_or_p",
    "reduce_sum", "reduce_sum_p", "reduce_xor", "reduce_xor_p",
]


def reduce_op_shape_rule(operand: core.ShapedArray, *, axes, **params) -> tuple:
    if len(axes) != len(set(axes)):
        raise ValueError(f"duplicate value in 'axes' of reduction: {axes}")
    if not all(0 <= a < operand.ndim for a in axes):
        raise ValueError(
            f"reduction axes {axes} contains out-of-bounds indices for {operand}."
        )
    return tuple(d for i, d in enumerate(operand.shape) if i not in axes)


def number_dtype_rule(name: str):
    def rule(operand: core.ShapedArray, **params) -> np.dtype:
        if not dtypes.issubdtype(operand.dtype, np.number):
            raise TypeError(
                f"{name} does not accept dtype {operand.dtype.name}. "
                "Accepted dtypes are subtypes of number."
            )
        return operand.dtype

    return rule


reduce_sum_p = standard_primitive(
    reduce_op_shape_rule,
    number_dtype_rule("reduce_sum"),
    "reduce_sum",
    lambda x, *, axes, out_sharding: np.sum(x, axis=axes, dtype=x.dtype),
)
reduce_max_p = standard_primitive(
    reduce_op_shape_rule,
    lambda operand, *, axes: operand.dtype,
    "reduce_max",
    lambda x, *, axes: _reduce_minmax(x, axes, "max"),
)
reduce_min_p = standard_primitive(
    reduce_op_shape_rule,
    lambda operand, *, axes: operand.dtype,
    "reduce_min",
    lambda x, *, axes: _reduce_minmax(x, axes, "min"),
)


def _reduce_minmax(x: np.ndarray, axes: tuple, which: str) -> np.ndarray:
    if not x.size:
        return _identity_fill(x, axes, which)
    if not np.iscomplexobj(x):
        return np.max(x, axis=axes) if which == "max" else np.min(x, axis=axes)
    # complex: fold with max_p's own rule (lexicographic select), not numpy's NaN-spreading max
    op = max_impl if which == "max" else min_impl
    kept = [i for i in range(x.ndim) if i not in axes]
    rows = np.transpose(x, (*axes, *kept)).reshape(-1, *(x.shape[i] for i in kept))
    out = rows[0]
    for row in rows[1:]:
        out = op(out, row)
    return out


def _identity_fill(x: np.ndarray, axes: tuple, which: str) -> np.ndarray:
    # reducing an empty axis gives the reduction's identity (-inf for max), as XLA does
    shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    if dtypes.issubdtype(x.dtype, np.inexact):  # complex too: -inf+0j for max
        fill = -np.inf if which == "max" else np.inf
    elif x.dtype == np.bool_:
        fill = which == "min"
    else:
        info = np.iinfo(x.dtype)
        fill = info.min if which == "max" else info.max
    return np.full(shape, fill, x.dtype)


def reduce_sum(operand: Any, axes: Sequence[int], out_sharding: Any = None) -> Any:
    """Sum over `axes` (non-negative, distinct); `out_sharding` on an Explicit mesh (stage 11)."""
    return reduce_sum_p.bind(operand, axes=tuple(int(a) for a in axes), out_sharding=out_sharding)


def reduce_max(operand: Any, axes: Sequence[int]) -> Any:
    """Maximum over `axes`."""
    return reduce_max_p.bind(operand, axes=tuple(int(a) for a in axes))


def reduce_min(operand: Any, axes: Sequence[int]) -> Any:
    """Minimum over `axes`."""
    return reduce_min_p.bind(operand, axes=tuple(int(a) for a in axes))


def _reduce_logical_shape_rule(operand: core.ShapedArray, *, axes) -> tuple:
    if operand.dtype != np.bool_ and not dtypes.issubdtype(operand.dtype, np.integer):
        raise TypeError(f"logical reduction requires operand dtype bool or int, got "
                        f"{operand.dtype}.")
    return reduce_op_shape_rule(operand, axes=axes)


def _logical_reducer(name: str, ufunc: np.ufunc) -> core.Primitive:
    def impl(x: np.ndarray, *, axes) -> np.ndarray:
        # an empty axis gives the identity: False/0 for or and xor, True/all ones for and
        init = np.array(-1).astype(x.dtype) if ufunc is np.bitwise_and else np.zeros((), x.dtype)
        return np.asarray(ufunc.reduce(x, axis=axes, initial=init), x.dtype)
    return standard_primitive(_reduce_logical_shape_rule, lambda operand, *, axes: operand.dtype,
                              name, impl, weak_type_rule=never_weak)


reduce_or_p = _logical_reducer("reduce_or", np.bitwise_or)
reduce_and_p = _logical_reducer("reduce_and", np.bitwise_and)
reduce_xor_p = _logical_reducer("reduce_xor", np.bitwise_xor)


def reduce_or(operand: Any, axes: Sequence[int]) -> Any:
    """`or` over `axes` (bitwise for ints); any(x) of a bool array."""
    return reduce_or_p.bind(operand, axes=tuple(int(a) for a in axes))


def reduce_and(operand: Any, axes: Sequence[int]) -> Any:
    """`and` over `axes` (bitwise for ints); all(x) of a bool array."""
    return reduce_and_p.bind(operand, axes=tuple(int(a) for a in axes))


def reduce_xor(operand: Any, axes: Sequence[int]) -> Any:
    """`xor` over `axes` (bitwise for ints): the parity of a bool array."""
    return reduce_xor_p.bind(operand, axes=tuple(int(a) for a in axes))


def _argminmax_shape_rule(operand: core.ShapedArray, *, axes, index_dtype) -> tuple:
    (axis,) = axes
    if not 0 <= axis < operand.ndim:
        raise ValueError(f"Invalid axis {axis} for operand shape {operand.shape}")
    if operand.shape[axis] < 1:
        raise ValueError(
            "argmin and argmax require non-empty reduced dimension. "
            f"operand.shape={operand.shape} axis={axis}"
        )
    return tuple(d for i, d in enumerate(operand.shape) if i != axis)


def _argminmax_dtype_rule(operand: core.ShapedArray, *, axes, index_dtype) -> np.dtype:
    if not dtypes.issubdtype(index_dtype, np.integer):
        raise TypeError(f"index_dtype must be an integer type, but got {index_dtype.name}")
    return index_dtype


def _argminmax_impl(np_fn: Any, comparator: str):
    # np.argmax, like XLA's reducer, returns the first maximum and treats NaN as the maximum
    def impl(x: np.ndarray, *, axes, index_dtype) -> np.ndarray:
        if dtypes.issubdtype(x.dtype, np.complexfloating):
            # JAX traces it, then its reducer's comparison refuses complex numbers
            raise TypeError(f"{comparator} does not accept dtype {x.dtype} at position 0. "
                            "Accepted dtypes at position 0 are subtypes of integer, floating, "
                            "bool.")
        return np_fn(x, axis=axes[0])
    return impl


argmax_p = standard_primitive(_argminmax_shape_rule, _argminmax_dtype_rule, "argmax",
                              _argminmax_impl(np.argmax, "gt"), weak_type_rule=never_weak)
argmin_p = standard_primitive(_argminmax_shape_rule, _argminmax_dtype_rule, "argmin",
                              _argminmax_impl(np.argmin, "lt"), weak_type_rule=never_weak)


def argmax(operand: Any, axis: int, index_dtype: Any) -> Any:
    """Index of the (first) maximum along `axis`, as `index_dtype`."""
    index_dtype = dtypes.check_and_canonicalize_user_dtype(index_dtype, "argmax")
    return argmax_p.bind(operand, axes=(int(axis),), index_dtype=index_dtype)


def argmin(operand: Any, axis: int, index_dtype: Any) -> Any:
    """Index of the (first) minimum along `axis`, as `index_dtype`."""
    index_dtype = dtypes.check_and_canonicalize_user_dtype(index_dtype, "argmin")
    return argmin_p.bind(operand, axes=(int(axis),), index_dtype=index_dtype)


def cumred_shape_rule(x: core.ShapedArray, *, axis: int, reverse: bool) -> tuple:
    if axis < 0:
        raise ValueError("XLA operations do not allow negative axes")
    if axis >= x.ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of shape {x.shape}")
    return x.shape


def _cumsum_impl(x: np.ndarray, *, axis: int, reverse: bool) -> np.ndarray:
    if reverse:
        return np.flip(np.cumsum(np.flip(x, axis), axis=axis, dtype=x.dtype), axis)
    return np.cumsum(x, axis=axis, dtype=x.dtype)


cumsum_p = standard_primitive(
    cumred_shape_rule, number_dtype_rule("cumsum"), "cumsum", _cumsum_impl
)


def cumsum(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Running sum along `axis`, from the end when `reverse`."""
    return cumsum_p.bind(operand, axis=int(axis), reverse=bool(reverse))
