"""Elementwise arithmetic: the one-operand maths (sin, exp, ...), integer_pow, add, mul, ...

JAX: the elementwise sections of jax/_src/lax/lax.py (erf is in lax/special.py). Each primitive
is `unop`/`naryop` of a dtype rule and a numpy impl; the shape rule is shared (same shape, or
rank-0 operands broadcast). Bitwise ops and comparisons are in bitwise.py.
"""

from __future__ import annotations

import enum
import math
from typing import Any

import numpy as np

from .. import core, dtypes
from . import kernels
from .utils import (
    ANY,
    COMPLEX,
    FLOAT,
    INT,
    NUM,
    SIGNED_INT,
    drop_params,
    first_dtype,
    naryop,
    same_dtype,
    same_shape,
    standard_primitive,
    unop,
    unop_dtype_rule,
)

__all__ = [
    "RoundingMethod", "abs", "abs_p", "add", "add_p", "atan2", "atan2_p", "ceil", "ceil_p",
    "cos", "cos_p", "div", "div_p", "erf", "erf_p", "exp", "exp_p", "floor", "floor_p",
    "integer_pow", "integer_pow_p", "is_finite", "is_finite_p",
    "log", "log1p", "log1p_p", "log_p", "logistic", "logistic_p", "max", "max_p", "min", "min_p",
    "mul", "mul_p", "neg", "neg_p", "pow", "pow_p", "rem", "rem_p", "round", "round_p", "rsqrt",
    "rsqrt_p", "sign", "sign_p", "sin", "sin_p", "sqrt", "sqrt_p", "square", "square_p", "sub",
    "sub_p", "tan", "tan_p", "tanh", "tanh_p", "real", "real_p", "imag", "imag_p", "complex",
    "complex_p", "conj", "conj_p",
]

# ------------------------------------------------------------------ one operand


class RoundingMethod(enum.IntEnum):
    """How `round` breaks ties; an IntEnum so the jaxpr prints `rounding_method=0` as JAX does."""

    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


def _round_impl(x: np.ndarray, *, rounding_method: int) -> np.ndarray:
    if rounding_method == RoundingMethod.TO_NEAREST_EVEN:
        return np.round(x)
    # exact: x - trunc(x) loses no bits, where |x| + 0.5 would round (0.49999997 -> 1.0)
    whole = np.trunc(x)
    with np.errstate(invalid="ignore"):
        return np.where(np.abs(x - whole) >= 0.5, whole + np.sign(x), whole).astype(x.dtype)


_erf = np.vectorize(math.erf, otypes=[np.float64])


def _complex_basetype(dtype: np.dtype) -> np.dtype:
    # abs of a complex number is real: c64 -> f32
    return np.finfo(dtype).dtype if dtypes.issubdtype(dtype, np.complexfloating) else dtype


neg_p = unop(same_dtype, NUM, "neg", np.negative)
sign_p = unop(same_dtype, NUM, "sign", np.sign)
floor_p = unop(same_dtype, FLOAT, "floor", np.floor)
ceil_p = unop(same_dtype, FLOAT, "ceil", np.ceil)
round_p = unop(same_dtype, FLOAT, "round", _round_impl)
abs_p = unop(_complex_basetype, SIGNED_INT + FLOAT + COMPLEX, "abs", np.abs)
erf_p = unop(same_dtype, FLOAT, "erf", _erf)
square_p = unop(same_dtype, NUM, "square", np.square)  # x * x (JAX: lax.square)
is_finite_p = unop(lambda dtype: np.dtype(np.bool_), FLOAT, "is_finite", np.isfinite)
# These carry JAX's `accuracy` param (an XLA precision hint) with its default None.
exp_p = unop(same_dtype, FLOAT + COMPLEX, "exp", lambda x, accuracy: np.exp(x))
log_p = unop(same_dtype, FLOAT + COMPLEX, "log", lambda x, accuracy: np.log(x))
log1p_p = unop(same_dtype, FLOAT + COMPLEX, "log1p", lambda x, accuracy: np.log1p(x))
sin_p = unop(same_dtype, FLOAT + COMPLEX, "sin", lambda x, accuracy: np.sin(x))
cos_p = unop(same_dtype, FLOAT + COMPLEX, "cos", lambda x, accuracy: np.cos(x))
tan_p = unop(same_dtype, FLOAT + COMPLEX, "tan", lambda x, accuracy: np.tan(x))
tanh_p = unop(same_dtype, FLOAT + COMPLEX, "tanh", lambda x, accuracy: np.tanh(x))
sqrt_p = unop(same_dtype, FLOAT + COMPLEX, "sqrt", lambda x, accuracy: np.sqrt(x))
rsqrt_p = unop(same_dtype, FLOAT + COMPLEX, "rsqrt", lambda x, accuracy: kernels.rsqrt_impl(x))
logistic_p = unop(
    same_dtype, FLOAT + COMPLEX, "logistic", lambda x, accuracy: kernels.logistic_impl(x)
)


def neg(x: Any) -> Any:
    """Elementwise negation: -x."""
    return neg_p.bind(x)


def sign(x: Any) -> Any:
    """Elementwise sign: -1, 0 or 1 (x / |x| for complex)."""
    return sign_p.bind(x)


def is_finite(x: Any) -> Any:
    """Elementwise: True where `x` is neither infinite nor NaN (floating point only)."""
    return is_finite_p.bind(x)


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


def square(x: Any) -> Any:
    return square_p.bind(x)


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
    """x ** y for a static integer y, by repeated squaring (as JAX's lowering expands it)."""
    # EXERCISE 2.1 (impl-rule): compute x ** y with multiplications only; y < 0 is 1 / x ** -y
    if y == 0:
        return np.ones_like(x)
    result, power = None, x  # no product yet: the first set bit takes the power as it is
    n = -y if y < 0 else y
    while n > 0:
        if n & 1:
            result = power if result is None else result * power
        n >>= 1
        if n > 0:
            power = power * power
    return 1 / result if y < 0 else result
    # END EXERCISE
# --8<-- [end:integer_pow]


def _integer_pow_dtype_rule(x: core.ShapedArray, *, y: int) -> np.dtype:
    dtype = unop_dtype_rule(same_dtype, NUM, "integer_pow", x)
    if y < 0 and dtypes.issubdtype(dtype, np.integer):
        raise TypeError(
            f"Integers cannot be raised to negative powers, got integer_pow({x}, {y})"
        )
    return dtype


integer_pow_p = standard_primitive(
    same_shape, _integer_pow_dtype_rule, "integer_pow", _integer_pow_impl
)


def integer_pow(x: Any, y: int) -> Any:
    """Elementwise x ** y for a Python int y (a param, not an operand)."""
    return integer_pow_p.bind(x, y=y)


# ------------------------------------------------------------------ two operands


def _pow_dtype_rule(x: core.ShapedArray, y: core.ShapedArray, **params: Any) -> np.dtype:
    if dtypes.issubdtype(y.dtype, np.integer) or x.dtype == y.dtype:
        return x.dtype
    raise TypeError(
        "the first argument to pow must have an inexact dtype (float or complex), and the "
        "second argument must have an inexact or integer dtype, and two inexact dtypes must "
        f"match, but got {x.dtype} and {y.dtype} respectively."
    )


def _mul_dtype(x: core.ShapedArray, y: core.ShapedArray, out_dtype: Any = None) -> np.dtype:
    return x.dtype if out_dtype is None else dtypes.canonicalize_dtype(out_dtype)


add_p = naryop(first_dtype, [NUM, NUM], "add", np.add)
sub_p = naryop(first_dtype, [NUM, NUM], "sub", np.subtract)
mul_p = naryop(_mul_dtype, [NUM, NUM], "mul", lambda x, y, out_dtype: np.multiply(x, y))
div_p = naryop(first_dtype, [NUM, NUM], "div", kernels.div_impl)
rem_p = naryop(first_dtype, [INT + FLOAT, INT + FLOAT], "rem", kernels.rem_impl)
pow_p = naryop(
    _pow_dtype_rule, [FLOAT + COMPLEX, NUM], "pow", kernels.pow_impl, require_same_dtypes=False
)
atan2_p = naryop(first_dtype, [FLOAT + COMPLEX, FLOAT + COMPLEX], "atan2", kernels.atan2_impl)
max_p = naryop(first_dtype, [ANY, ANY], "max", kernels.max_impl)
min_p = naryop(first_dtype, [ANY, ANY], "min", kernels.min_impl)


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


def atan2(x: Any, y: Any) -> Any:
    """Elementwise arctangent of x / y in [-pi, pi], its quadrant chosen by both signs."""
    return atan2_p.bind(x, y)


def max(x: Any, y: Any) -> Any:
    """Elementwise maximum."""
    return max_p.bind(x, y)


def min(x: Any, y: Any) -> Any:
    """Elementwise minimum."""
    return min_p.bind(x, y)


# ------------------------------------------------------------------ complex numbers

_COMPLEX_PARTS = (np.float32, np.float64)  # what complex() builds from (JAX: _complex_elem_types)


def _complex_dtype(dtype: np.dtype, *args: Any, **params: Any) -> np.dtype:
    # float32 or complex64 -> complex64; float64 or complex128 -> complex128
    return (np.zeros((), dtype) + np.zeros((), np.complex64)).dtype


def _conj_impl(x: np.ndarray, *, input_dtype: Any) -> np.ndarray:
    return np.conj(x.astype(_complex_dtype(x.dtype)))


real_p = unop(_complex_basetype, COMPLEX, "real", np.real)
imag_p = unop(_complex_basetype, COMPLEX, "imag", np.imag)


complex_p = naryop(lambda x, y: _complex_dtype(x.dtype), [_COMPLEX_PARTS, _COMPLEX_PARTS],
                   "complex", kernels.complex_impl)
conj_p = unop(_complex_dtype, _COMPLEX_PARTS + COMPLEX, "conj", _conj_impl)


def real(x: Any) -> Any:
    """Elementwise real part (float32 for complex64)."""
    return real_p.bind(x)


def imag(x: Any) -> Any:
    """Elementwise imaginary part."""
    return imag_p.bind(x)


def complex(x: Any, y: Any) -> Any:  # (shadows the builtin here, as jax.lax.complex does)
    """Elementwise x + i y, from two float arrays of one dtype."""
    return complex_p.bind(x, y)


def conj(x: Any) -> Any:
    """Elementwise complex conjugate (of a float: the same value as a complex number)."""
    return conj_p.bind(x, input_dtype=dtypes.dtype(x))


# JAX's printer hides these params at their defaults
for _p in (exp_p, log_p, log1p_p, tanh_p, logistic_p, sin_p, cos_p, tan_p, sqrt_p, rsqrt_p):
    core.pp_eqn_rules[_p] = drop_params("accuracy")
core.pp_eqn_rules[mul_p] = drop_params("out_dtype")
