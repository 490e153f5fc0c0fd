"""More elementwise functions and statistics: round, var/std, count_nonzero, isclose/allclose,
log2/log10.

JAX: jax/_src/numpy/lax_numpy.py (round, isclose), reductions.py (var, std, count_nonzero) and
ufuncs.py (log2, log10). var squares the deviations with the `square` primitive, as JAX's does.
`arctan2` is not here: it needs an `atan2` primitive.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from .. import core, dtypes, lax
from ..lax.utils import const
from . import reductions, ufuncs
from .lax_numpy import asarray
from .util import check_arraylike, promote_args, promote_args_inexact

__all__ = [
    "allclose", "around", "count_nonzero", "isclose", "log10", "log2", "round", "std", "var",
]


def _is_complex(dtype: np.dtype) -> bool:
    return dtypes.issubdtype(dtype, np.complexfloating)


def _real_dtype(dtype: np.dtype) -> np.dtype:
    """float32 for complex64; a real dtype as it is."""
    return np.zeros((), dtype).real.dtype


def _index(value: Any, what: str) -> int:
    """A concrete Python int (a traced value refuses, naming `what`)."""
    return operator.index(core.concrete_or_error(None, value, what))


# ------------------------------------------------------------------ rounding


def round(a: Any, decimals: int = 0, out: None = None) -> Any:
    """Round half to even at `decimals` places: x * 10**d, lax.round, / 10**d."""
    check_arraylike("round", a)
    a = asarray(a)
    decimals = _index(decimals, "'decimals' argument of jnp.round")
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.round is not supported.")
    dtype = dtypes.dtype(a)
    if dtypes.issubdtype(dtype, np.integer):
        if decimals < 0:
            raise NotImplementedError("integer np.round not implemented for decimals < 0")
        return a  # an integer is already round
    # a bool is neither: as in JAX, numpy's finfo refuses it
    if decimals > np.log10(np.finfo(dtype).max):
        return a  # finer than the dtype can hold: nothing to do

    def round_real(x: Any) -> Any:
        if decimals == 0:
            return lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)
        # float16 would overflow or lose the scaled digits: scale in float32 (as JAX; bfloat16,
        # with float32's range, is scaled as it is)
        x16 = np.dtype(np.float16) if dtypes.dtype(x) == np.float16 else None
        if x16 is not None:
            x = lax.convert_element_type(x, np.float32)
        scale = const(x, 10**decimals)
        y = lax.div(lax.round(lax.mul(x, scale), lax.RoundingMethod.TO_NEAREST_EVEN), scale)
        return y if x16 is None else lax.convert_element_type(y, x16)

    if _is_complex(dtype):
        return lax.complex(round_real(lax.real(a)), round_real(lax.imag(a)))
    return round_real(a)


around = round

# ------------------------------------------------------------------ variance


def _correction(ddof: Any, correction: Any) -> Any:
    """What var divides the count less by: ddof or correction, whichever was given."""
    if correction is None:
        return ddof
    if not isinstance(ddof, int) or ddof != 0:
        raise ValueError("ddof and correction can't be provided simultaneously.")
    return correction


def var(a: Any, axis: Any = None, dtype: Any = None, out: None = None, ddof: int = 0,
        keepdims: bool = False, *, where: Any = None, mean: Any = None,
        correction: int | float | None = None) -> Any:
    """Mean squared distance from the mean (or from `mean` if given), divided by (count - ddof);
    NaN where that is <= 0. `where` keeps only the elements it marks, in both."""
    correction = _correction(ddof, correction)
    check_arraylike("var", a)
    a = asarray(a)
    reductions.check_where("var", where)
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.var is not supported.")
    in_dtype = dtypes.dtype(a)
    if dtype is not None:
        dtype = dtypes.check_and_canonicalize_user_dtype(dtype, "var")
        if not _is_complex(dtype) and _is_complex(in_dtype):
            raise ValueError(
                "jax.numpy.var does not yet support real dtype parameters when computing the "
                "variance of an array of complex values. The semantics of numpy.var seem "
                "unclear in this case. Please comment on "
                "https://github.com/jax-ml/jax/issues/2283 if this behavior is important to you."
            )
        compute = dtype
    elif not dtypes.issubdtype(in_dtype, np.inexact):
        dtype = compute = np.dtype("float32")
    else:
        dtype, compute = _real_dtype(in_dtype), in_dtype
    if compute in (np.float16, dtypes.bfloat16):
        compute = np.dtype("float32")  # accumulate float16 and bfloat16 in float32
    a = lax.convert_element_type(a, compute)
    if mean is None:
        mean = reductions.mean(a, axis, dtype=compute, keepdims=True, where=where)
    else:
        check_arraylike("var", mean)
        mean = lax.convert_element_type(mean, compute)
    centered = lax.sub(a, mean)
    if _is_complex(compute):
        centered = lax.real(lax.mul(centered, lax.conj(centered)))
        compute = dtypes.dtype(centered)
    else:
        centered = lax.square(centered)
    count = reductions.reduction_count(a, axis, keepdims, where, compute)
    normalizer = lax.sub(count, lax.convert_element_type(correction, compute))
    total = reductions.sum(centered, axis, dtype=compute, keepdims=keepdims, where=where)
    result = lax.convert_element_type(lax.div(total, normalizer), dtype)
    return ufuncs.where(normalizer > 0, result, np.nan)


def std(a: Any, axis: Any = None, dtype: Any = None, out: None = None, ddof: int = 0,
        keepdims: bool = False, *, where: Any = None, mean: Any = None,
        correction: int | float | None = None) -> Any:
    """The square root of var (same arguments)."""
    correction = _correction(ddof, correction)
    check_arraylike("std", a)
    if dtype is not None:
        dtype = dtypes.check_and_canonicalize_user_dtype(dtype, "std")
        if not dtypes.issubdtype(dtype, np.inexact):
            raise ValueError(f"dtype argument to jnp.std must be inexact; got {dtype}")
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.std is not supported.")
    return lax.sqrt(var(a, axis, dtype, correction=correction, keepdims=keepdims, where=where,
                        mean=mean))


def count_nonzero(a: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """How many elements along `axis` are not zero, as int32."""
    check_arraylike("count_nonzero", a)
    a = asarray(a)
    return reductions.sum(lax.ne(a, const(a, 0)), axis, dtype=np.int32, keepdims=keepdims)


# ------------------------------------------------------------------ comparisons and logs


def isclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08,
            equal_nan: bool = False) -> Any:
    """|a - b| <= atol + rtol * |b| where b is finite, or a == b (NaN == NaN if equal_nan)."""
    a, b = promote_args("isclose", a, b)  # JAX: the common dtype first (-3 meets uint32 as
    a, b = promote_args_inexact("isclose", a, b)  # uint32), only then float
    dtype = _real_dtype(dtypes.dtype(a))
    rtol = lax.convert_element_type(rtol, dtype)
    atol = lax.convert_element_type(atol, dtype)
    both_nan = ufuncs.logical_and(ufuncs.isnan(a), ufuncs.isnan(b))
    finite = ufuncs.isfinite(b)
    near = lax.le(lax.abs(lax.sub(a, b)), lax.add(atol, lax.mul(rtol, lax.abs(b))))
    out = ufuncs.logical_or(lax.eq(a, b), ufuncs.logical_and(finite, near))
    return ufuncs.logical_or(out, both_nan) if equal_nan else out


def allclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08,
             equal_nan: bool = False) -> Any:
    """Whether isclose holds everywhere."""
    check_arraylike("allclose", a, b)
    return reductions.all(isclose(a, b, rtol, atol, equal_nan))


def log2(x: Any, /) -> Any:
    """log(x) / log(2) (the real and imaginary parts each, for complex x)."""
    (x,) = promote_args_inexact("log2", x)
    if _is_complex(dtypes.dtype(x)):
        r = lax.log(x)
        re, im = lax.real(r), lax.imag(r)
        ln2 = lax.log(np.array(2, dtypes.dtype(re)))  # strong: a weak x gives a strong log2
        return lax.complex(lax.div(re, ln2), lax.div(im, ln2))
    return lax.div(lax.log(x), lax.log(np.array(2, dtypes.dtype(x))))


def log10(x: Any, /) -> Any:
    """log(x) times 1 / log(10) (the real and imaginary parts each, for complex x)."""
    (x,) = promote_args_inexact("log10", x)
    inv_ln10 = np.array(0.4342944819032518, _real_dtype(dtypes.dtype(x)))
    if _is_complex(dtypes.dtype(x)):
        r = lax.log(x)
        re, im = lax.real(r), lax.imag(r)
        return lax.complex(lax.mul(re, inv_ln10), lax.mul(im, inv_ln10))
    return lax.mul(lax.log(x), inv_ln10)
