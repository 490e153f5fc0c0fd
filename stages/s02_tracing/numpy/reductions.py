"""Reductions: sum, mean, max, min, any, all, argmax, argmin, cumsum over numpy-style axes.

JAX: jax/_src/numpy/reductions.py. Negative axes are normalized here (lax takes only
non-negative ones); narrow ints, float16 and bfloat16 are widened for the accumulation as jnp does.
"""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

from .. import dtypes, lax
from ..lax.utils import canonicalize_axis, const
from .util import broadcast_shapes, broadcast_to, check_arraylike, promote_dtypes_numeric

__all__ = ["all", "amax", "amin", "any", "argmax", "argmin", "cumprod", "cumsum", "max", "mean",
           "min", "prod", "sum"]


def _ravel(a: Any) -> Any:
    return lax.reshape(a, (np.size(a),))


def _reduction_axes(a: Any, axis: Any) -> tuple[int, ...]:
    ndim = np.ndim(a)
    if axis is None:
        return tuple(range(ndim))
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    canon = tuple(canonicalize_axis(ax, ndim) for ax in axes)
    if len(set(canon)) != len(canon):
        raise ValueError(f"duplicate value in 'axis': {axis}")
    return canon


def _promote_integer_dtype(dtype: np.dtype) -> np.dtype:
    # sums of narrow ints (and bools) accumulate in the default int32/uint32
    if dtype == np.bool_:
        return np.dtype("int32")
    if dtypes.issubdtype(dtype, np.unsignedinteger) and dtype.itemsize < 4:
        return np.dtype("uint32")
    if dtypes.issubdtype(dtype, np.signedinteger) and dtype.itemsize < 4:
        return np.dtype("int32")
    return dtype


def _upcast_f16(dtype: np.dtype) -> np.dtype:
    # float16 and bfloat16 sums accumulate in float32, rounded once at the end
    return np.dtype("float32") if dtype in (np.float16, dtypes.bfloat16) else dtype


def _no_out(name: str, out: Any) -> None:
    if out is not None:
        raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported.")


# --------------------------------------------------------- where= and initial= (JAX's _reduction)

def _identity(dtype: np.dtype, name: str) -> Any:
    """The value that changes nothing under the reduction `name`, in `dtype`."""
    if name in ("sum", "any"):
        return np.zeros((), dtype)
    if name in ("prod", "all"):
        return np.ones((), dtype)
    if dtype == np.bool_:
        return np.array(name == "min")
    if dtypes.issubdtype(dtype, np.inexact):
        return np.array(-np.inf if name == "max" else np.inf, dtype)
    info = np.iinfo(dtype)
    return np.array(info.min if name == "max" else info.max, dtype)


def check_where(name: str, where: Any) -> None:
    if where is not None:
        check_arraylike(name, where)
        if dtypes.dtype(where) != np.bool_:
            raise ValueError(f"jnp.{name}: where must be None or a boolean array; got "
                             f"where.dtype={dtypes.dtype(where)!r}.")


def _masked(name: str, a: Any, where: Any) -> Any:
    """`where=`: the elements masked out become the reduction's identity (XLA's reduce takes
    only an identity as its initial value, so a mask cannot be anything else). As jnp.where,
    a mask broader than `a` broadcasts `a`; the reduced axes are still `a`'s own."""
    if where is None:
        return a
    shape = broadcast_shapes(np.shape(where), np.shape(a), ())
    mask = broadcast_to(lax.convert_element_type(where, np.bool_), shape)
    a = broadcast_to(a, shape)
    identity = lax.full_like(a, _identity(dtypes.dtype(a), name))
    return lax.select_n(mask, identity, a)


def _with_initial(combine: Any, result: Any, initial: Any) -> Any:
    """`initial=`: one more element, combined after the reduce (not as its init value)."""
    if initial is None:
        return result
    initial = lax.convert_element_type(initial, dtypes.dtype(result))
    if np.shape(initial) != ():
        raise ValueError(f"initial value must be a scalar. Got array of shape "
                         f"{np.shape(initial)}")
    return combine(initial, result)


def sum(a: Any, axis: Any = None, dtype: Any = None, out: None = None,
        keepdims: bool = False, initial: Any = None, where: Any = None,
        promote_integers: bool = True) -> Any:
    """Sum over `axis` (all axes by default); narrow ints accumulate as int32 (unless
    promote_integers=False), f16 as f32, unless `dtype` is given; a bool sum is an `or`."""
    return _sum_like("sum", lax.reduce_sum, lax.reduce_or, a, axis, dtype, out, keepdims,
                     initial, where, promote_integers)


def prod(a: Any, axis: Any = None, dtype: Any = None, out: None = None,
         keepdims: bool = False, initial: Any = None, where: Any = None,
         promote_integers: bool = True) -> Any:
    """Product over `axis` (all axes by default), accumulated as sum is; a bool product is
    an `and`."""
    return _sum_like("prod", lax.reduce_prod, lax.reduce_and, a, axis, dtype, out, keepdims,
                     initial, where, promote_integers)


def _sum_like(name: str, lax_reduce: Any, bool_reduce: Any, a: Any, axis: Any, dtype: Any,
              out: None, keepdims: bool, initial: Any, where: Any,
              promote_integers: bool = True) -> Any:
    _no_out(name, out)
    check_arraylike(name, a)
    check_where(name, where)
    (a,) = promote_dtypes_numeric(a)  # True + True is 2
    axes = _reduction_axes(a, axis)
    if dtype is None:
        result_dtype = dtypes.dtype(a)
        result_dtype = _promote_integer_dtype(result_dtype) if promote_integers else result_dtype
    else:
        result_dtype = dtypes.check_and_canonicalize_user_dtype(dtype, name)
    # an explicit dtype is also the accumulator's
    computation_dtype = _upcast_f16(result_dtype) if dtype is None else result_dtype
    a = _masked(name, lax.convert_element_type(a, computation_dtype), where)
    if computation_dtype == np.bool_:
        result = _with_initial(_BOOL_COMBINE[name], bool_reduce(a, axes), initial)
    else:
        result = _with_initial(_COMBINE[name], lax_reduce(a, axes), initial)
    if keepdims:
        result = lax.expand_dims(result, axes)
    return lax.convert_element_type(result, result_dtype)


def _reduce_chooser(name: str, lax_reduce):
    def fn(a: Any, axis: Any = None, out: None = None, keepdims: bool = False,
           initial: Any = None, where: Any = None) -> Any:
        _no_out(name, out)
        check_arraylike(name, a)
        check_where(name, where)
        if initial is None and where is not None:  # an empty selection would have no answer
            raise ValueError(f"reduction operation {name} does not have an identity, so to "
                             "use a where mask one has to specify 'initial'")
        axes = _reduction_axes(a, axis)
        if initial is None and builtins.any(np.shape(a)[d] == 0 for d in axes):
            raise ValueError(
                f"zero-size array to reduction operation {name} which has no identity"
            )
        # JAX converts to the result dtype first, so a weak input gives a strong result
        a = _masked(name, lax.convert_element_type(a, dtypes.dtype(a)), where)
        result = _with_initial(_COMBINE[name], lax_reduce(a, axes), initial)
        return lax.expand_dims(result, axes) if keepdims else result

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"The {name}imum over `axis` (all axes by default)."
    return fn


_COMBINE = {"sum": lax.add, "prod": lax.mul, "max": lax.max, "min": lax.min}
_BOOL_COMBINE = {"sum": lax.bitwise_or, "prod": lax.bitwise_and}
max = _reduce_chooser("max", lax.reduce_max)
min = _reduce_chooser("min", lax.reduce_min)
amax, amin = max, min


def any(a: Any, axis: Any = None, out: None = None, keepdims: bool = False, *,
        where: Any = None) -> Any:
    """Whether any element along `axis` is true: `reduce_or` of the array cast to bool."""
    return _logical("any", lax.reduce_or, a, axis, out, keepdims, where)


def all(a: Any, axis: Any = None, out: None = None, keepdims: bool = False, *,
        where: Any = None) -> Any:
    """Whether every element along `axis` is true: `reduce_and` of the array cast to bool."""
    return _logical("all", lax.reduce_and, a, axis, out, keepdims, where)


def _logical(name: str, lax_reduce: Any, a: Any, axis: Any, out: None, keepdims: bool,
             where: Any) -> Any:
    _no_out(name, out)
    check_arraylike(name, a)
    check_where(name, where)
    axes = _reduction_axes(a, axis)
    if np.iscomplexobj(a):  # JAX's _cast_to_bool: `real` first, then the conversion
        a = lax.real(a)
    a = _masked(name, lax.convert_element_type(a, np.bool_), where)
    result = lax_reduce(a, axes)
    return lax.expand_dims(result, axes) if keepdims else result


def mean(a: Any, axis: Any = None, dtype: Any = None, out: None = None,
         keepdims: bool = False, *, where: Any = None) -> Any:
    """sum / count, in floating point: `div` by the count as a literal."""
    _no_out("mean", out)
    check_arraylike("mean", a)
    check_where("mean", where)
    if dtype is None:
        result_dtype = dtypes.dtype(a)
        if not dtypes.issubdtype(result_dtype, np.inexact):
            result_dtype = np.dtype("float32")
    else:
        result_dtype = dtypes.check_and_canonicalize_user_dtype(dtype, "mean")
    computation_dtype = _upcast_f16(result_dtype) if dtype is None else result_dtype
    total = sum(a, axis, dtype=computation_dtype, keepdims=keepdims, where=where)
    normalizer = reduction_count(a, axis, keepdims, where, computation_dtype)
    return lax.convert_element_type(lax.div(total, normalizer), result_dtype)


def reduction_count(a: Any, axis: Any, keepdims: bool, where: Any, dtype: Any) -> Any:
    """How many elements each reduction along `axis` takes (JAX: _count): without `where`, a
    literal (JAX jits mean and var, so never a traced conversion); with it, the kept ones."""
    if where is None:
        return np.asarray(math.prod(np.shape(a)[d] for d in _reduction_axes(a, axis)), dtype)
    return sum(broadcast_to(where, np.shape(a)), axis, dtype=dtype, keepdims=keepdims)


def _arg_chooser(name: str, lax_arg):
    def fn(a: Any, axis: int | None = None, out: None = None, keepdims: bool = False) -> Any:
        _no_out(name, out)
        check_arraylike(name, a)
        if axis is None:
            dims = tuple(range(np.ndim(a)))
            a = _ravel(a)
            axis = 0
        else:
            axis = canonicalize_axis(axis, np.ndim(a))
            dims = (axis,)
        if np.shape(a)[axis] == 0:
            raise ValueError(f"attempt to get {name} of an empty sequence")
        result = lax_arg(a, axis, np.int32)
        return lax.expand_dims(result, dims) if keepdims else result

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Index of the first {name[3:]}imum along `axis` (of the flattened array if None)."
    return fn


argmax = _arg_chooser("argmax", lax.argmax)
argmin = _arg_chooser("argmin", lax.argmin)


def cumsum(a: Any, axis: int | None = None, dtype: Any = None, out: None = None) -> Any:
    """Running sum along `axis` (of the flattened array if None)."""
    return _cumulative("cumsum", lax.cumsum, a, axis, dtype, out)


def cumprod(a: Any, axis: int | None = None, dtype: Any = None, out: None = None) -> Any:
    """Running product along `axis` (of the flattened array if None)."""
    return _cumulative("cumprod", lax.cumprod, a, axis, dtype, out)


def _cumulative(name: str, lax_fn: Any, a: Any, axis: Any, dtype: Any, out: None) -> Any:
    _no_out(name, out)
    check_arraylike(name, a)
    if axis is None or np.ndim(a) == 0:
        a = _ravel(a)
        axis = 0
    axis = canonicalize_axis(axis, np.ndim(a))
    result_dtype = (dtypes.dtype(a) if dtype is None else
                    dtypes.check_and_canonicalize_user_dtype(dtype, name))
    computation_dtype = result_dtype
    if result_dtype == np.bool_:
        if dtype is None:
            result_dtype = np.dtype("int32")  # unlike sum, cumsum keeps narrow ints narrow
        elif dtypes.dtype(a) != np.bool_:
            a = lax.ne(a, const(a, 0))  # as JAX: -1 and 1 must not cancel
        computation_dtype = np.dtype("int32")
    result = lax_fn(lax.convert_element_type(a, computation_dtype), axis)
    return lax.convert_element_type(result, result_dtype)
