"""numpy stand-ins for XLA's CPU kernels, where numpy's own function answers otherwise.

Each is the `impl` of a primitive in elementwise.py: integer division that truncates (and
x / 0 = -1), C's remainder, a complex arctan2 and logistic, complex max/min that compare
lexicographically, and `complex(x, y)` that keeps an infinite part.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes


def logistic_impl(x: np.ndarray) -> np.ndarray:
    if np.iscomplexobj(x):  # numpy has no complex logaddexp: exp of a negative real part only
        e = np.exp(np.where(x.real < 0, x, -x))
        return np.where(x.real < 0, e / (1 + e), 1 / (1 + e))
    # 1 / (1 + exp(-x)) written as exp(-softplus(-x)) so large |x| neither overflows nor warns
    return np.exp(-np.logaddexp(0, -x))


def rsqrt_impl(x: np.ndarray) -> np.ndarray:
    """1 / sqrt(x), computed in float64 and rounded once. `1 / np.sqrt` in the input's own type
    rounds twice: a float16 or bfloat16 came out one unit off for every other value (XLA rounds
    those once, exactly as here), a float32 one unit off XLA's own rsqrt about twice as often
    as now (JAX: rsqrt(1e-6) is 1000, not 999.99994)."""
    if np.iscomplexobj(x) or np.dtype(x.dtype).itemsize == 8:
        return 1 / np.sqrt(x)
    return (1 / np.sqrt(x.astype(np.float64))).astype(x.dtype)


def _safe_divisor(y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """y with 0 and -1 replaced by 1 (numpy is undefined there), and where they were."""
    by_zero = y == 0
    by_minus_one = (y == -1) if np.issubdtype(y.dtype, np.signedinteger) else np.zeros_like(by_zero)
    return np.where(by_zero | by_minus_one, 1, y).astype(y.dtype), by_zero, by_minus_one


def pow_impl(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x ** y as XLA computes it: y first converted to x's dtype (JAX's lowering converts it),
    both laid out in full, since numpy's loop takes a repeated exponent of 0.5 for a sqrt,
    which keeps -0 and makes -inf a NaN where pow gives 0 and inf."""
    x = np.asarray(x)
    y = np.asarray(y).astype(x.dtype)
    shape = np.broadcast_shapes(x.shape, y.shape)
    flat = [np.ascontiguousarray(np.broadcast_to(v, shape)).reshape(-1) for v in (x, y)]
    return np.power(*flat).reshape(shape)


def div_impl(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if not dtypes.issubdtype(x.dtype, np.integer):
        return np.divide(x, y)
    # XLA's integer division truncates toward zero (C), where numpy's // floors; x / 0 is -1
    # (all bits set: the maximum for unsigned), and MIN / -1 wraps around to MIN
    safe_y, by_zero, by_minus_one = _safe_divisor(y)
    floored = np.floor_divide(x, safe_y)
    # an inexact quotient of operands of opposite signs floors one below the truncation
    truncated = floored + ((np.remainder(x, safe_y) != 0) & ((x < 0) != (safe_y < 0)))
    out = np.where(by_minus_one, np.negative(x), truncated.astype(x.dtype))
    return np.where(by_zero, np.invert(np.zeros_like(x)), out)


def rem_impl(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if not dtypes.issubdtype(x.dtype, np.integer):
        return np.fmod(x, y)
    # C's %: the sign of x. XLA defines x % 0 as x (and MIN % -1 as 0); numpy leaves them out
    safe_y, by_zero, _ = _safe_divisor(y)
    return np.where(by_zero, x, np.fmod(x, safe_y))


def atan2_impl(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if not np.iscomplexobj(x):
        return np.arctan2(x, y)  # the angle of the point (y, x): numpy's order too
    # numpy has no complex arctan2: XLA's formula, -i log((y + i x) / sqrt(x^2 + y^2))
    with np.errstate(all="ignore"):
        return (-1j * np.log((y + 1j * x) / np.sqrt(x * x + y * y))).astype(x.dtype)


def _minmax_impl(numpy_op: Any, compare: Any) -> Any:
    """numpy's maximum/minimum, but complex values as XLA compares them (JAX: mlir._minmax_hlo):
    lexicographically, then `select(x > y, x, y)`, so a NaN part picks y instead of spreading."""
    def impl(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        if not np.iscomplexobj(x):
            return numpy_op(x, y)
        which = np.where(x.real == y.real, compare(x.imag, y.imag), compare(x.real, y.real))
        return np.where(which, x, y)
    return impl


max_impl = _minmax_impl(np.maximum, np.greater)
min_impl = _minmax_impl(np.minimum, np.less)


def complex_impl(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    # not x + 1j * y: 1j * inf is nan + inf j, so an infinite or NaN y would spoil the real part
    x, y = np.broadcast_arrays(x, y)
    out = np.empty(x.shape, np.result_type(x.dtype, y.dtype, np.complex64))
    out.real, out.imag = x, y
    return out
