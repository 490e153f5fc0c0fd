"""Bitwise and comparison primitives: not, and, or, xor, the shifts; eq, ne, lt, le, gt, ge.

JAX: the same sections of jax/_src/lax/lax.py. Built like the arithmetic ones (elementwise.py):
`unop`/`naryop` of a dtype rule and a numpy impl; comparisons return bool.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .utils import (
    ANY,
    BOOL_OR_INT,
    INT,
    ORDERED,
    first_dtype,
    fixed_dtype,
    naryop,
    same_dtype,
    unop,
)

__all__ = [
    "and_p", "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "eq", "eq_p", "ge", "ge_p",
    "gt", "gt_p", "le", "le_p", "lt", "lt_p", "ne", "ne_p", "not_p", "or_p", "shift_left",
    "shift_left_p", "shift_right_arithmetic", "shift_right_arithmetic_p", "shift_right_logical",
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


not_p = unop(same_dtype, BOOL_OR_INT, "not", np.invert)
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
