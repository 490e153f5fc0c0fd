"""Elementwise lax primitives: math, comparisons, bitwise ops, integer_pow, clamp.

JAX: the elementwise sections of jax/_src/lax/lax.py (erf is in lax/special.py). Re-exported by
lax.py. Each primitive is `unop`/`naryop` of a dtype rule and a numpy impl; the shape rule is
shared (same shape, or rank-0 operands broadcast).
"""

from __future__ import annotations

import enum
import math
from typing import Any

import numpy as np

from . import core, dtypes
from .lax_utils import (
    _any,
    _bool_or_int,
    _complex,
    _drop_params,
    _first_dtype,
    _fixed_dtype,
    _float,
    _identity,
    _int,
    _num,
    _ordered,
    _same_shape,
    _signedint,
    check_same_dtypes,
    naryop,
    standard_primitive,
    unop,
    unop_dtype_rule,
)

# ------------------------------------------------------------------ elementwise, one operand


class RoundingMethod(enum.IntEnum):
    """How `round` breaks ties; an IntEnum so the jaxpr prints `rounding_method=0` as JAX does."""

    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


def _logistic_impl(x: np.ndarray) -> np.ndarray:
    # 1 / (1 + exp(-x)) written as exp(-softplus(-x)) so large |x| neither overflows nor warns
    return np.exp(-np.logaddexp(0, -x))


def _round_impl(x: np.ndarray, *, rounding_method: int) -> np.ndarray:
    if rounding_method == RoundingMethod.TO_NEAREST_EVEN:
        return np.round(x)
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


_erf = np.vectorize(math.erf, otypes=[np.float64])


def _complex_basetype(dtype: np.dtype) -> np.dtype:
    # abs of a complex number is real: c64 -> f32
    return np.finfo(dtype).dtype if np.issubdtype(dtype, np.complexfloating) else dtype


neg_p = unop(_identity, _num, "neg", np.negative)
sign_p = unop(_identity, _num, "sign", np.sign)
floor_p = unop(_identity, _float, "floor", np.floor)
ceil_p = unop(_identity, _float, "ceil", np.ceil)
round_p = unop(_identity, _float, "round", _round_impl)
abs_p = unop(_complex_basetype, _signedint + _float + _complex, "abs", np.abs)
erf_p = unop(_identity, _float, "erf", _erf)
not_p = unop(_identity, _bool_or_int, "not", np.invert)
# These carry JAX's `accuracy` param (an XLA precision hint) with its default None.
exp_p = unop(_identity, _float + _complex, "exp", lambda x, accuracy: np.exp(x))
log_p = unop(_identity, _float + _complex, "log", lambda x, accuracy: np.log(x))
log1p_p = unop(_identity, _float + _complex, "log1p", lambda x, accuracy: np.log1p(x))
sin_p = unop(_identity, _float + _complex, "sin", lambda x, accuracy: np.sin(x))
cos_p = unop(_identity, _float + _complex, "cos", lambda x, accuracy: np.cos(x))
tan_p = unop(_identity, _float + _complex, "tan", lambda x, accuracy: np.tan(x))
tanh_p = unop(_identity, _float + _complex, "tanh", lambda x, accuracy: np.tanh(x))
sqrt_p = unop(_identity, _float + _complex, "sqrt", lambda x, accuracy: np.sqrt(x))
rsqrt_p = unop(_identity, _float + _complex, "rsqrt", lambda x, accuracy: 1 / np.sqrt(x))
logistic_p = unop(
    _identity, _float + _complex, "logistic", lambda x, accuracy: _logistic_impl(x)
)


def neg(x: Any) -> Any:
    """Elementwise negation: -x."""
    return neg_p.bind(x)


def sign(x: Any) -> Any:
    """Elementwise sign: -1, 0 or 1 (x / |x| for complex)."""
    return sign_p.bind(x)


def floor(x: Any) -> Any:
    """Elementwise floor."""
    return floor_p.bind(x)


def ceil(x: Any) -> Any:
    """Elementwise ceiling."""
    return ceil_p.bind(x)


def round(x: Any, rounding_method: RoundingMethod = RoundingMethod.AWAY_FROM_ZERO) -> Any:
    """Elementwise rounding; ties go away from zero unless TO_NEAREST_EVEN is asked for."""
    return round_p.bind(x, rounding_method=RoundingMethod(rounding_method))


def abs(x: Any) -> Any:
    """Elementwise absolute value (real-valued for complex input)."""
    return abs_p.bind(x)


def erf(x: Any) -> Any:
    """Elementwise error function."""
    return erf_p.bind(x)


def bitwise_not(x: Any) -> Any:
    """Elementwise bitwise NOT (logical NOT for bool); the primitive is named `not`."""
    return not_p.bind(x)


def exp(x: Any, *, accuracy: Any = None) -> Any:
    """Elementwise e**x."""
    return exp_p.bind(x, accuracy=accuracy)


def log(x: Any, *, accuracy: Any = None) -> Any:
    """Elementwise natural logarithm."""
    return log_p.bind(x, accuracy=accuracy)


def log1p(x: Any, *, accuracy: Any = None) -> Any:
    """Elementwise log(1 + x), accurate near 0."""
    return log1p_p.bind(x, accuracy=accuracy)


def sin(x: Any, *, accuracy: Any = None) -> Any:
    """Elementwise sine."""
    return sin_p.bind(x, accuracy=accuracy)


def cos(x: Any, *, accuracy: Any = None) -> Any:
    """Elementwise cosine."""
    return cos_p.bind(x, accuracy=accuracy)


def tan(x: Any, *, accuracy: Any = None) -> Any:
    """Elementwise tangent."""
    return tan_p.bind(x, accuracy=accuracy)


def tanh(x: Any, *, accuracy: Any = None) -> Any:
    """Elementwise hyperbolic tangent."""
    return tanh_p.bind(x, accuracy=accuracy)


def sqrt(x: Any, *, accuracy: Any = None) -> Any:
    """Elementwise square root."""
    return sqrt_p.bind(x, accuracy=accuracy)


def rsqrt(x: Any, *, accuracy: Any = None) -> Any:
    """Elementwise 1 / sqrt(x)."""
    return rsqrt_p.bind(x, accuracy=accuracy)


def logistic(x: Any, *, accuracy: Any = None) -> Any:
    """Elementwise logistic sigmoid 1 / (1 + exp(-x))."""
    return logistic_p.bind(x, accuracy=accuracy)


# --8<-- [start:integer_pow]
def _integer_pow_impl(x: np.ndarray, *, y: int) -> np.ndarray:
    """x ** y for a static integer y, by repeated squaring (as XLA expands it)."""
    # EXERCISE 2.1 (impl-rule): compute x ** y with multiplications only; y < 0 is 1 / x ** -y
    result = np.ones_like(x)
    power = x
    n = -y if y < 0 else y
    while n > 0:
        if n & 1:
            result = result * power
        power = power * power
        n >>= 1
    return 1 / result if y < 0 else result
    # END EXERCISE
# --8<-- [end:integer_pow]


def _integer_pow_dtype_rule(x: core.ShapedArray, *, y: int) -> np.dtype:
    dtype = unop_dtype_rule(_identity, _num, "integer_pow", x)
    if y < 0 and np.issubdtype(dtype, np.integer):
        raise TypeError(
            f"Integers cannot be raised to negative powers, got integer_pow({x}, {y})"
        )
    return dtype


integer_pow_p = standard_primitive(
    _same_shape, _integer_pow_dtype_rule, "integer_pow", _integer_pow_impl
)


def integer_pow(x: Any, y: int) -> Any:
    """Elementwise x ** y for a Python int y (a param, not an operand)."""
    return integer_pow_p.bind(x, y=y)


# ------------------------------------------------------------------ elementwise, two operands


def _safe_divisor(y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """y with 0 and -1 replaced by 1 (numpy is undefined there), and where they were."""
    by_zero = y == 0
    by_minus_one = (y == -1) if np.issubdtype(y.dtype, np.signedinteger) else np.zeros_like(by_zero)
    return np.where(by_zero | by_minus_one, 1, y).astype(y.dtype), by_zero, by_minus_one


def _div_impl(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if not np.issubdtype(x.dtype, np.integer):
        return np.divide(x, y)
    # XLA's integer division truncates toward zero (C), where numpy's // floors; x / 0 is -1
    # (all bits set: the maximum for unsigned), and MIN / -1 wraps around to MIN
    safe_y, by_zero, by_minus_one = _safe_divisor(y)
    floored = np.floor_divide(x, safe_y)
    # an inexact quotient of operands of opposite signs floors one below the truncation
    truncated = floored + ((np.remainder(x, safe_y) != 0) & ((x < 0) != (safe_y < 0)))
    out = np.where(by_minus_one, np.negative(x), truncated.astype(x.dtype))
    return np.where(by_zero, np.invert(np.zeros_like(x)), out)


def _rem_impl(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if not np.issubdtype(x.dtype, np.integer):
        return np.fmod(x, y)
    # C's %: the sign of x. XLA defines x % 0 as x (and MIN % -1 as 0); numpy leaves them out
    safe_y, by_zero, _ = _safe_divisor(y)
    return np.where(by_zero, x, np.fmod(x, safe_y))


def _pow_dtype_rule(x: core.ShapedArray, y: core.ShapedArray, **params: Any) -> np.dtype:
    if np.issubdtype(y.dtype, np.integer) or x.dtype == y.dtype:
        return x.dtype
    raise TypeError(
        "the first argument to pow must have an inexact dtype (float or complex), and the "
        "second argument must have an inexact or integer dtype, and two inexact dtypes must "
        f"match, but got {x.dtype} and {y.dtype} respectively."
    )


def _mul_dtype(x: core.ShapedArray, y: core.ShapedArray, out_dtype: Any = None) -> np.dtype:
    return x.dtype if out_dtype is None else dtypes.canonicalize_dtype(out_dtype)


def _shift_impl(shift):
    # XLA defines over-wide shifts (numpy does not): left/logical give 0, arithmetic the sign
    def impl(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        bits = x.dtype.itemsize * 8
        too_far = (y < 0) | (y >= bits)
        safe_y = np.where(too_far, 0, y).astype(x.dtype)
        out = shift(x, safe_y)
        fill = np.where(x < 0, -1, 0) if shift is _arithmetic_right else 0
        return np.where(too_far, fill, out)

    return impl


def _logical_right(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    unsigned = np.dtype(f"uint{x.dtype.itemsize * 8}")
    return np.right_shift(x.view(unsigned), y.astype(unsigned)).view(x.dtype)


def _arithmetic_right(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.right_shift(x, y)


add_p = naryop(_first_dtype, [_num, _num], "add", np.add)
sub_p = naryop(_first_dtype, [_num, _num], "sub", np.subtract)
mul_p = naryop(_mul_dtype, [_num, _num], "mul", lambda x, y, out_dtype: np.multiply(x, y))
div_p = naryop(_first_dtype, [_num, _num], "div", _div_impl)
rem_p = naryop(_first_dtype, [_int + _float, _int + _float], "rem", _rem_impl)
pow_p = naryop(
    _pow_dtype_rule, [_float + _complex, _num], "pow", np.power, require_same_dtypes=False
)
max_p = naryop(_first_dtype, [_any, _any], "max", np.maximum)
min_p = naryop(_first_dtype, [_any, _any], "min", np.minimum)
and_p = naryop(_first_dtype, [_bool_or_int, _bool_or_int], "and", np.bitwise_and)
or_p = naryop(_first_dtype, [_bool_or_int, _bool_or_int], "or", np.bitwise_or)
xor_p = naryop(_first_dtype, [_bool_or_int, _bool_or_int], "xor", np.bitwise_xor)
shift_left_p = naryop(_first_dtype, [_int, _int], "shift_left", _shift_impl(np.left_shift))
shift_right_logical_p = naryop(
    _first_dtype, [_int, _int], "shift_right_logical", _shift_impl(_logical_right)
)
shift_right_arithmetic_p = naryop(
    _first_dtype, [_int, _int], "shift_right_arithmetic", _shift_impl(_arithmetic_right)
)
_bool_out = _fixed_dtype(np.bool_)
eq_p = naryop(_bool_out, [_any, _any], "eq", np.equal)
ne_p = naryop(_bool_out, [_any, _any], "ne", np.not_equal)
lt_p = naryop(_bool_out, [_ordered, _ordered], "lt", np.less)
le_p = naryop(_bool_out, [_ordered, _ordered], "le", np.less_equal)
gt_p = naryop(_bool_out, [_ordered, _ordered], "gt", np.greater)
ge_p = naryop(_bool_out, [_ordered, _ordered], "ge", np.greater_equal)


def add(x: Any, y: Any) -> Any:
    """Elementwise x + y; both operands must share a dtype (use numpy.add to promote)."""
    return add_p.bind(x, y)


def sub(x: Any, y: Any) -> Any:
    """Elementwise x - y."""
    return sub_p.bind(x, y)


def mul(x: Any, y: Any, *, out_dtype: Any = None) -> Any:
    """Elementwise x * y."""
    return mul_p.bind(x, y, out_dtype=out_dtype)


def div(x: Any, y: Any) -> Any:
    """Elementwise x / y; integer division rounds toward zero, and x / 0 is -1 (all bits set)."""
    return div_p.bind(x, y)


def rem(x: Any, y: Any) -> Any:
    """Elementwise remainder with the sign of x (C's fmod); for integers x % 0 is x."""
    return rem_p.bind(x, y)


def pow(x: Any, y: Any) -> Any:
    """Elementwise x ** y for an inexact x and an inexact or integer y."""
    return pow_p.bind(x, y)


def max(x: Any, y: Any) -> Any:
    """Elementwise maximum."""
    return max_p.bind(x, y)


def min(x: Any, y: Any) -> Any:
    """Elementwise minimum."""
    return min_p.bind(x, y)


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


# JAX's printer hides these params at their defaults
for _p in (exp_p, log_p, log1p_p, tanh_p, logistic_p, sin_p, cos_p, tan_p, sqrt_p, rsqrt_p):
    core.pp_eqn_rules[_p] = _drop_params("accuracy")
core.pp_eqn_rules[mul_p] = _drop_params("out_dtype")


# ------------------------------------------------------------------ clamp


def _clamp_shape_rule(lo: core.ShapedArray, operand: core.ShapedArray,
                      hi: core.ShapedArray) -> tuple:
    if lo.shape and lo.shape != operand.shape:
        raise TypeError("clamp requires min.shape == operand.shape or min.shape == (), got "
                        f"min.shape={lo.shape}, operand.shape={operand.shape}.")
    if hi.shape and hi.shape != operand.shape:
        raise TypeError("clamp requires max.shape == operand.shape or max.shape == (), got "
                        f"max.shape={hi.shape}, operand.shape={operand.shape}.")
    return operand.shape


def _clamp_dtype_rule(lo: core.ShapedArray, operand: core.ShapedArray,
                      hi: core.ShapedArray) -> np.dtype:
    check_same_dtypes("clamp", lo, operand, hi)
    return operand.dtype


def _clamp_impl(lo: np.ndarray, operand: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return np.minimum(np.maximum(operand, lo), hi)


clamp_p = standard_primitive(_clamp_shape_rule, _clamp_dtype_rule, "clamp", _clamp_impl,
                             weak_type_rule=lambda lo, operand, hi: operand.weak_type)


# jax.lax.clamp's parameter names, which shadow lax.min and lax.max inside the body only
def clamp(min: Any, x: Any, max: Any) -> Any:  # noqa: F811
    """Elementwise min(max(x, min), max); `min` and `max` may be scalars of x's dtype."""
    return clamp_p.bind(min, x, max)
