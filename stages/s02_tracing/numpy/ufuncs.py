"""Elementwise numpy functions (ufuncs): promote the arguments, then one lax op each.

JAX: jax/_src/numpy/ufuncs.py (and `where`/`clip` from lax_numpy.py).
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from .. import dtypes, lax
from ..lax.utils import const
from .util import (
    broadcast_arrays,
    check_arraylike,
    promote_args,
    promote_args_inexact,
    promote_args_numeric,
    promote_dtypes,
    promote_dtypes_inexact,
    promote_dtypes_numeric,
    promote_shapes,
)

__all__ = [
    "abs", "absolute", "add", "arctan2", "atan2", "bitwise_and", "bitwise_not", "bitwise_or",
    "bitwise_xor", "ceil", "clip", "conj", "conjugate", "cos", "divide", "divmod", "equal", "exp",
    "floor", "floor_divide", "greater", "greater_equal", "imag", "invert", "isfinite", "isinf",
    "isnan", "left_shift", "less", "less_equal", "log", "log1p", "logical_and", "logical_not",
    "logical_or", "logical_xor", "maximum", "minimum", "mod", "multiply", "negative", "not_equal",
    "positive", "power", "real", "reciprocal", "remainder", "right_shift", "sign", "sin", "sqrt",
    "square", "subtract", "tan", "tanh", "true_divide",
]  # where: exported by searching.py, whose `where` also takes the condition alone


def _unop(lax_fn, name: str, inexact: bool = False):
    promote = promote_args_inexact if inexact else promote_args

    def fn(x: Any, /) -> Any:
        (x,) = promote(name, x)
        return lax_fn(x)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name} (jnp.{name}), via lax.{lax_fn.__name__}."
    return fn


def _binop(lax_fn, name: str, bool_lax_fn=None):
    def fn(x1: Any, x2: Any, /) -> Any:
        x1, x2 = promote_args(name, x1, x2)
        if bool_lax_fn is not None and dtypes.dtype(x1) == np.bool_:
            return bool_lax_fn(x1, x2)  # True + True is True: or; True * False: and
        return lax_fn(x1, x2)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name} (jnp.{name}) with promotion and broadcasting."
    return fn


add = _binop(lax.add, "add", lax.bitwise_or)
multiply = _binop(lax.mul, "multiply", lax.bitwise_and)
subtract = _binop(lax.sub, "subtract")
maximum = _binop(lax.max, "maximum")
minimum = _binop(lax.min, "minimum")
equal = _binop(lax.eq, "equal")
not_equal = _binop(lax.ne, "not_equal")


def _ordered(lax_fn):
    # complex values have no order in XLA; jnp's is lexicographic: the real parts, and where
    # they tie, the imaginary parts (JAX: _complex_comparison)
    def compare(x1: Any, x2: Any) -> Any:
        if not _is_complex(x1):
            return lax_fn(x1, x2)
        return lax.select(lax.eq(lax.real(x1), lax.real(x2)), lax_fn(lax.imag(x1), lax.imag(x2)),
                          lax_fn(lax.real(x1), lax.real(x2)))

    return compare


less = _binop(_ordered(lax.lt), "less")
less_equal = _binop(_ordered(lax.le), "less_equal")
greater = _binop(_ordered(lax.gt), "greater")
greater_equal = _binop(_ordered(lax.ge), "greater_equal")
bitwise_and = _binop(lax.bitwise_and, "bitwise_and")
bitwise_or = _binop(lax.bitwise_or, "bitwise_or")
bitwise_xor = _binop(lax.bitwise_xor, "bitwise_xor")
negative = _unop(lax.neg, "negative")
bitwise_not = invert = _unop(lax.bitwise_not, "invert")
sign = _unop(lax.sign, "sign")
exp = _unop(lax.exp, "exp", inexact=True)
log = _unop(lax.log, "log", inexact=True)
log1p = _unop(lax.log1p, "log1p", inexact=True)
sin = _unop(lax.sin, "sin", inexact=True)
cos = _unop(lax.cos, "cos", inexact=True)
tan = _unop(lax.tan, "tan", inexact=True)
tanh = _unop(lax.tanh, "tanh", inexact=True)
sqrt = _unop(lax.sqrt, "sqrt", inexact=True)


def left_shift(x1: Any, x2: Any, /) -> Any:
    """x1 << x2 (bools shift as int32, as in JAX)."""
    return lax.shift_left(*promote_args_numeric("left_shift", x1, x2))


def right_shift(x1: Any, x2: Any, /) -> Any:
    """x1 >> x2: arithmetic for signed integers, logical for unsigned ones."""
    x1, x2 = promote_args_numeric("right_shift", x1, x2)
    if dtypes.issubdtype(dtypes.dtype(x1), np.unsignedinteger):
        return lax.shift_right_logical(x1, x2)
    return lax.shift_right_arithmetic(x1, x2)


def _to_bool(x: Any) -> Any:
    return x if dtypes.dtype(x) == np.bool_ else lax.ne(x, const(x, 0))


def _logical(lax_fn, name: str):
    def fn(*args: Any) -> Any:
        return lax_fn(*map(_to_bool, promote_args(name, *args)))  # nonzero is True

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name} (jnp.{name}) of the arguments taken as booleans."
    return fn


logical_and = _logical(lax.bitwise_and, "logical_and")
logical_or = _logical(lax.bitwise_or, "logical_or")
logical_xor = _logical(lax.bitwise_xor, "logical_xor")
logical_not = _logical(lax.bitwise_not, "logical_not")


def isnan(x: Any, /) -> Any:
    """NaN is the one value not equal to itself."""
    (x,) = promote_args("isnan", x)
    return lax.ne(x, x)


def isinf(x: Any, /) -> Any:
    (x,) = promote_args("isinf", x)
    if dtypes.issubdtype(dtypes.dtype(x), np.complexfloating):
        re, im = lax.real(x), lax.imag(x)
        return lax.bitwise_or(isinf(re), isinf(im))
    if dtypes.issubdtype(dtypes.dtype(x), np.floating):  # a strong inf: the result is never weak
        return lax.eq(lax.abs(x), np.array(np.inf, dtypes.dtype(x)))
    return lax.full_like(x, False, dtype=np.bool_)


def isfinite(x: Any, /) -> Any:
    (x,) = promote_args("isfinite", x)
    if dtypes.issubdtype(dtypes.dtype(x), np.complexfloating):
        return lax.bitwise_and(lax.is_finite(lax.real(x)), lax.is_finite(lax.imag(x)))
    if dtypes.issubdtype(dtypes.dtype(x), np.floating):
        return lax.is_finite(x)
    return lax.full_like(x, True, dtype=np.bool_)


def _as_array(x: Any) -> Any:
    """x itself as an array of ours (a numpy value is made one), its weak type kept."""
    return lax.convert_element_type(x, weak_type=dtypes.is_weakly_typed(x))


def positive(x: Any, /) -> Any:
    (x,) = promote_args("positive", x)
    return _as_array(x)


def absolute(x: Any, /) -> Any:
    """|x|; unsigned and bool values are returned as they are."""
    (x,) = promote_args("absolute", x)
    dt = dtypes.dtype(x)
    if dtypes.issubdtype(dt, np.unsignedinteger) or dt == np.bool_:
        return _as_array(x)
    return lax.abs(x)


abs = absolute


def floor(x: Any, /) -> Any:
    (x,) = promote_args("floor", x)
    return _as_array(x) if not dtypes.issubdtype(dtypes.dtype(x), np.inexact) else lax.floor(x)


def ceil(x: Any, /) -> Any:
    (x,) = promote_args("ceil", x)
    return _as_array(x) if not dtypes.issubdtype(dtypes.dtype(x), np.inexact) else lax.ceil(x)


def true_divide(x1: Any, x2: Any, /) -> Any:
    """x1 / x2 in floating point (ints divide as float32)."""
    x1, x2 = promote_args_inexact("true_divide", x1, x2)
    return lax.div(x1, x2)


divide = true_divide


def arctan2(x1: Any, x2: Any, /) -> Any:
    """The angle of the point (x2, x1) in radians, in [-pi, pi] (ints promote to float)."""
    return lax.atan2(*promote_args_inexact("arctan2", x1, x2))


def atan2(x1: Any, x2: Any, /) -> Any:
    """arctan2 under its array-API name, which promotes once more first (as JAX's does)."""
    return arctan2(*promote_args("atan2", x1, x2))


def floor_divide(x1: Any, x2: Any, /) -> Any:
    """x1 // x2, rounding toward minus infinity (lax.div truncates toward zero)."""
    x1, x2 = promote_args_numeric("floor_divide", x1, x2)
    dt = dtypes.dtype(x1)
    if dtypes.issubdtype(dt, np.unsignedinteger):
        return lax.div(x1, x2)
    if dtypes.issubdtype(dt, np.integer):
        quotient = lax.div(x1, x2)
        # jnp-level `and`, as JAX's logical_and: weak bools (weak ints compared) become strong
        rounded_wrong = bitwise_and(
            lax.ne(lax.sign(x1), lax.sign(x2)), lax.ne(lax.rem(x1, x2), const(x1, 0))
        )
        return where(rounded_wrong, subtract(quotient, 1), quotient)
    if dtypes.issubdtype(dt, np.complexfloating):
        raise TypeError("floor_divide does not support complex-valued inputs")
    # the modulus _float_divmod also fixes goes unused: JAX's jaxpr has its select (as `_`)
    return _float_divmod(x1, x2)[0]


def _float_divmod(x1: Any, x2: Any) -> tuple[Any, Any]:
    """(x1 // x2, x1 mod x2) for floats: the quotient of (x1 - x1 mod x2) / x2 and the
    modulus, both fixed up where the signs of x2 and the truncated modulus differ (JAX too)."""
    mod = lax.rem(x1, x2)
    div = lax.div(where(lax.eq(x2, const(x2, 0)), x1, lax.sub(x1, mod)), x2)
    fix = lax.bitwise_and(lax.ne(mod, const(mod, 0)), lax.ne(lax.sign(x2), lax.sign(mod)))
    mod = lax.select(fix, add(mod, x2), mod)
    # jnp's subtract of a Python 1.0, as JAX's: a weakly typed quotient stays weak
    return lax.round(lax.select(fix, subtract(div, 1.0), div)), mod


def divmod(x1: Any, x2: Any, /) -> tuple[Any, Any]:
    """(x1 // x2, x1 % x2); for floats both from one computation, as in JAX (`divmod(x, y)`
    on arrays calls this)."""
    x1, x2 = promote_args_numeric("divmod", x1, x2)
    if dtypes.issubdtype(dtypes.dtype(x1), np.integer):
        return floor_divide(x1, x2), remainder(x1, x2)
    return _float_divmod(x1, x2)


def remainder(x1: Any, x2: Any, /) -> Any:
    """x1 mod x2 with the sign of x2 (Python's %); lax.rem keeps the sign of x1."""
    x1, x2 = promote_args_numeric("remainder", x1, x2)
    zero = const(x1, 0)
    if dtypes.issubdtype(dtypes.dtype(x2), np.integer):
        x2 = where(equal(x2, 0), lax.full_like(x2, 1), x2)  # no division by zero
    trunc_mod = lax.rem(x1, x2)
    trunc_mod_not_zero = lax.ne(trunc_mod, zero)
    do_plus = lax.bitwise_and(
        lax.ne(lax.lt(trunc_mod, zero), lax.lt(x2, zero)), trunc_mod_not_zero
    )
    return lax.select(do_plus, lax.add(trunc_mod, x2), trunc_mod)


mod = remainder


def power(x1: Any, x2: Any, /) -> Any:
    """x1 ** x2: integer_pow for a concrete integer exponent, else lax.pow."""
    # a Python int exponent of any size is integer_pow's parameter, never an int32 array
    check_arraylike("power", x1, 0 if type(x2) is int else x2)
    try:
        # a Python, numpy or concrete JAX integer (a tracer of unknown value refuses __index__)
        y = operator.index(x2)
    except TypeError:
        pass
    else:
        (x1,) = promote_dtypes_numeric(x1)
        return lax.integer_pow(x1, y)
    x1, x2 = promote_shapes("power", x1, x2)
    x1_, x2_ = promote_args_numeric("power", x1, x2)  # JAX promotes first, used or not
    if not dtypes.issubdtype(dtypes.dtype(x1_), np.inexact):
        return _pow_int_int(x1_, x2_)
    if dtypes.issubdtype(dtypes.dtype(x1), np.inexact) and \
            dtypes.issubdtype(dtypes.dtype(x2), np.integer):
        return lax.pow(x1, x2)  # an integer exponent is not promoted (as in JAX)
    return lax.pow(x1_, x2_)


def _pow_int_int(base: Any, exponent: Any) -> Any:
    """Integers: XLA has no integer pow, so square and multiply over the exponent's low six
    bits, low bit first (any larger exponent overflows for |base| > 1). JAX: _pow_int_int."""
    zero, one = const(exponent, 0), const(exponent, 1)
    # 0 ** n is 0, except 0 ** 0 which is 1
    result = where(lax.bitwise_and(lax.eq(base, zero), lax.ne(exponent, zero)), zero, one)
    for _ in range(6):
        result = where(lax.bitwise_and(exponent, one), lax.mul(result, base), result)
        base = lax.mul(base, base)
        exponent = lax.shift_right_logical(exponent, one)
    return result


def _is_complex(x: Any) -> bool:
    return dtypes.issubdtype(dtypes.dtype(x), np.complexfloating)


def real(x: Any, /) -> Any:
    """The real part (a real x as it is)."""
    (x,) = promote_args("real", x)
    return lax.real(x) if _is_complex(x) else _as_array(x)


def imag(x: Any, /) -> Any:
    """The imaginary part (zeros for a real x)."""
    (x,) = promote_args("imag", x)
    return lax.imag(x) if _is_complex(x) else lax.full_like(x, 0)


def conjugate(x: Any, /) -> Any:
    """The complex conjugate (a real x as it is)."""
    (x,) = promote_args("conjugate", x)
    return lax.conj(x) if _is_complex(x) else _as_array(x)


conj = conjugate


def square(x: Any, /) -> Any:
    (x,) = promote_dtypes_numeric(x)
    return lax.square(x)


def reciprocal(x: Any, /) -> Any:
    (x,) = promote_dtypes_inexact(x)
    return lax.integer_pow(x, -1)


def where(condition: Any, x: Any = None, y: Any = None, /) -> Any:
    """x where condition else y, all three broadcast together; select_n underneath.

    JAX wraps this in a `jit` (an inner `_where` jaxpr); ours is inline, as JAX's is with
    `jax.disable_jit()`.
    """
    if x is None or y is None:
        raise ValueError(
            "Either both or neither of the x and y arguments should be provided to "
            f"jax.numpy.where, got {x} and {y}."
        )
    check_arraylike("where", condition, x, y)
    if dtypes.dtype(condition) != np.bool_:
        condition = lax.ne(condition, const(condition, 0))
    x, y = promote_dtypes(x, y)
    if np.ndim(condition) == 0:
        x, y = broadcast_arrays(x, y)  # select_n takes a scalar `which` as it is
    else:
        condition, x, y = broadcast_arrays(condition, x, y)
    return lax.select(condition, x, y)


def clip(arr: Any = None, /, min: Any = None, max: Any = None) -> Any:
    """maximum(min, arr) then minimum(max, arr) (inline; JAX wraps it in a jit)."""
    if arr is None:
        raise ValueError("No input was provided to the clip function.")
    check_arraylike("clip", arr)
    if any(t is not None and np.iscomplexobj(t) for t in (arr, min, max)):
        raise ValueError(
            "Clip received a complex value either through the input or the min/max keywords. "
            "Complex values have no ordering and cannot be clipped. Please convert to a real "
            "value or array by taking the real or imaginary components via "
            "jax.numpy.real/imag respectively.")
    if min is not None:
        arr = maximum(min, arr)
    if max is not None:
        arr = minimum(max, arr)
    # with no bounds still an array, as a jit's output would be (a Python scalar stays weak)
    return lax.convert_element_type(arr, None, weak_type=dtypes.is_weakly_typed(arr))
