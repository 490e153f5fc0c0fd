"""Bitwise and comparison primitives: not, and, or, xor, the shifts, clz; eq, ne, lt, le, gt,
ge; and bitcast_convert_type, the same bits read as another dtype.

JAX: the same sections of jax/_src/lax/lax.py. Built like the arithmetic ones (elementwise.py):
`unop`/`naryop` of a dtype rule and a numpy impl; comparisons return bool.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import core, dtypes
from .utils import (
    ANY,
    BOOL_OR_INT,
    INT,
    ORDERED,
    first_dtype,
    fixed_dtype,
    naryop,
    never_weak,
    same_dtype,
    standard_primitive,
    unop,
)

__all__ = [
    "and_p", "bitcast_convert_type", "bitcast_convert_type_p", "bitwise_and", "bitwise_not",
    "bitwise_or", "bitwise_xor", "clz", "clz_p", "eq", "eq_p", "ge", "ge_p", "gt", "gt_p", "le",
    "le_p", "lt", "lt_p", "ne", "ne_p", "not_p", "or_p", "shift_left", "shift_left_p",
    "shift_right_arithmetic", "shift_right_arithmetic_p", "shift_right_logical",
    "shift_right_logical_p", "xor_p"
]


def _shift_impl(shift):
    # XLA defines over-wide shifts (numpy does not): left/logical give 0, arithmetic the sign
    def impl(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        bits = x.dtype.itemsize * 8
        too_far = (y < 0) | (y >= bits)
        safe_y = np.where(too_far, 0, y).astype(x.dtype)
        out = shift(x, safe_y)
        fill = 0
        if shift is _arithmetic_right:  # copies of the top bit, for unsigned ints too
            fill = np.where(_as_signed(x) < 0, -1, 0).astype(_as_signed(x).dtype).view(x.dtype)
        return np.where(too_far, fill, out)

    return impl


def _logical_right(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    unsigned = np.dtype(f"uint{x.dtype.itemsize * 8}")
    return np.right_shift(x.view(unsigned), y.astype(unsigned)).view(x.dtype)


def _as_signed(x: np.ndarray) -> np.ndarray:
    return x.view(np.dtype(f"int{x.dtype.itemsize * 8}"))


def _arithmetic_right(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    # the top bit is the sign bit, whatever the dtype (XLA shifts uint8 128 >> 1 to 192)
    return np.right_shift(_as_signed(x), y.astype(_as_signed(x).dtype)).view(x.dtype)


def _clz_impl(x: np.ndarray) -> np.ndarray:
    # clz(u) is how many of the powers 2**0 ... 2**(bits-1) exceed u (all of them for 0)
    bits = x.dtype.itemsize * 8
    u = np.asarray(x).view(np.dtype(f"uint{bits}"))  # the bits as they are, sign bit included
    powers = np.left_shift(np.ones((), u.dtype), np.arange(bits, dtype=u.dtype))
    return np.sum(u[..., None] < powers, axis=-1).astype(x.dtype)


not_p = unop(same_dtype, BOOL_OR_INT, "not", np.invert)
clz_p = unop(same_dtype, INT, "clz", _clz_impl)
and_p = naryop(first_dtype, [BOOL_OR_INT, BOOL_OR_INT], "and", np.bitwise_and)
or_p = naryop(first_dtype, [BOOL_OR_INT, BOOL_OR_INT], "or", np.bitwise_or)
xor_p = naryop(first_dtype, [BOOL_OR_INT, BOOL_OR_INT], "xor", np.bitwise_xor)
shift_left_p = naryop(first_dtype, [INT, INT], "shift_left", _shift_impl(np.left_shift))
shift_right_logical_p = naryop(
    first_dtype, [INT, INT], "shift_right_logical", _shift_impl(_logical_right)
)
shift_right_arithmetic_p = naryop(
    first_dtype, [INT, INT], "shift_right_arithmetic", _shift_impl(_arithmetic_right)
)
_bool_out = fixed_dtype(np.bool_)
eq_p = naryop(_bool_out, [ANY, ANY], "eq", np.equal)
ne_p = naryop(_bool_out, [ANY, ANY], "ne", np.not_equal)
lt_p = naryop(_bool_out, [ORDERED, ORDERED], "lt", np.less)
le_p = naryop(_bool_out, [ORDERED, ORDERED], "le", np.less_equal)
gt_p = naryop(_bool_out, [ORDERED, ORDERED], "gt", np.greater)
ge_p = naryop(_bool_out, [ORDERED, ORDERED], "ge", np.greater_equal)


def bitwise_not(x: Any) -> Any:
    """Elementwise bitwise NOT (logical NOT for bool); the primitive is named `not`."""
    return not_p.bind(x)


def clz(x: Any) -> Any:
    """Elementwise count of leading zero bits (the bit width for 0, 0 for a negative int)."""
    return clz_p.bind(x)


def bitwise_and(x: Any, y: Any) -> Any:
    """Elementwise AND; the primitive is named `and`."""
    return and_p.bind(x, y)


def bitwise_or(x: Any, y: Any) -> Any:
    """Elementwise OR; the primitive is named `or`."""
    return or_p.bind(x, y)


def bitwise_xor(x: Any, y: Any) -> Any:
    """Elementwise XOR; the primitive is named `xor`."""
    return xor_p.bind(x, y)


def shift_left(x: Any, y: Any) -> Any:
    """Elementwise x << y (0 once y reaches the bit width)."""
    return shift_left_p.bind(x, y)


def shift_right_logical(x: Any, y: Any) -> Any:
    """Elementwise x >> y filling with zeros, whatever the sign of x."""
    return shift_right_logical_p.bind(x, y)


def shift_right_arithmetic(x: Any, y: Any) -> Any:
    """Elementwise x >> y filling with the sign bit."""
    return shift_right_arithmetic_p.bind(x, y)


def eq(x: Any, y: Any) -> Any:
    """Elementwise x == y, as bool."""
    return eq_p.bind(x, y)


def ne(x: Any, y: Any) -> Any:
    """Elementwise x != y, as bool."""
    return ne_p.bind(x, y)


def lt(x: Any, y: Any) -> Any:
    """Elementwise x < y, as bool."""
    return lt_p.bind(x, y)


def le(x: Any, y: Any) -> Any:
    """Elementwise x <= y, as bool."""
    return le_p.bind(x, y)


def gt(x: Any, y: Any) -> Any:
    """Elementwise x > y, as bool."""
    return gt_p.bind(x, y)


def ge(x: Any, y: Any) -> Any:
    """Elementwise x >= y, as bool."""
    return ge_p.bind(x, y)


# ------------------------------------------------------------------ bitcast_convert_type


def _bitcast_shape_rule(x: core.ShapedArray, *, new_dtype: np.dtype) -> tuple:
    # a narrower dtype splits each element along a new last axis; a wider one joins that axis
    old_bits, new_bits = x.dtype.itemsize * 8, new_dtype.itemsize * 8
    if old_bits == new_bits:
        return x.shape
    if old_bits > new_bits:
        return (*x.shape, old_bits // new_bits)
    size = x.shape[-1] if x.shape else 1
    if size * old_bits != new_bits:
        raise ValueError(f"Attempting to convert array of shape {x.shape} from {x.dtype} of size "
                         f"{old_bits} bits to {new_dtype} of size {new_bits}, bits but {size} * "
                         f"{old_bits} != {new_bits}")
    return x.shape[:-1]


def _bitcast_dtype_rule(x: core.ShapedArray, *, new_dtype: np.dtype) -> np.dtype:
    # a bool's or a complex number's bits have no meaning of their own in another dtype
    bool_or_complex = (np.bool_, np.complexfloating)
    if x.dtype != new_dtype and any(dtypes.issubdtype(d, t) for d in (x.dtype, new_dtype)
                                    for t in bool_or_complex):
        raise TypeError("lax.bitcast_convert_type does not support bool or complex values unless "
                        f"the operand and destination types match. Got operand dtype={x.dtype}, "
                        f"{new_dtype=}. Consider using the arr.view() method instead.")
    return new_dtype


def _bitcast_impl(x: np.ndarray, *, new_dtype: np.dtype) -> np.ndarray:
    x = np.array(x, order="C")  # a view needs contiguous memory
    if new_dtype.itemsize < x.dtype.itemsize:
        return x[..., None].view(new_dtype)  # the new last axis holds the pieces, low bytes first
    out = x.view(new_dtype)  # a wider dtype: the last axis joins into one element, of size 1
    return out if new_dtype.itemsize == x.dtype.itemsize else out.reshape(x.shape[:-1])


bitcast_convert_type_p = standard_primitive(
    _bitcast_shape_rule, _bitcast_dtype_rule, "bitcast_convert_type", _bitcast_impl,
    weak_type_rule=never_weak,
)


def bitcast_convert_type(operand: Any, new_dtype: Any) -> Any:
    """The same bits read as `new_dtype` (not the same values: convert_element_type keeps those);
    a narrower dtype adds a last axis of the pieces, a wider one consumes the last axis."""
    new_dtype = dtypes.check_and_canonicalize_user_dtype(new_dtype, "bitcast_convert_type")
    return bitcast_convert_type_p.bind(operand, new_dtype=new_dtype)
