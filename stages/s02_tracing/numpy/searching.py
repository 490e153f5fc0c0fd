"""Where the nonzero entries are: nonzero, flatnonzero, argwhere, one-argument where; bincount.

JAX: jax/_src/numpy/lax_numpy.py. How many entries are nonzero depends on the values, and an
output's shape may not: outside a trace the count is read from the array; inside one it must be
given (`size=`), or the count is a tracer and JAX's ConcretizationTypeError says so. With a size,
the indices come from two running sums and a count per slot (bincount), never from a loop:
slot k's flat index is how many prefixes hold at most k nonzero entries.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from .. import core, dtypes
from .indexing import scatter_update
from .lax_numpy import arange, asarray, expand_dims, ravel, stack, zeros
from .reductions import cumsum
from .ufuncs import clip
from .ufuncs import where as _where3
from .util import check_arraylike

__all__ = ["argwhere", "bincount", "flatnonzero", "nonzero", "where"]

_SIZE_CONTEXT = ("The size argument of jnp.nonzero must be statically specified to use "
                 "jnp.nonzero within JAX transformations.")


def nonzero(a: Any, *, size: int | None = None,
            fill_value: Any = None) -> tuple[Any, ...]:
    """One int32 index array per axis of `a`, listing its nonzero entries in row-major order;
    `size` entries exactly (cut, or padded with `fill_value`, 0 by default)."""
    check_arraylike("nonzero", a)
    arr = asarray(a)
    if np.ndim(arr) == 0:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. "
                         "Use jnp.atleast_1d(scalar).nonzero() instead.")
    mask = arr if dtypes.dtype(arr) == np.bool_ else arr != 0
    n = core.concrete_or_error(operator.index, mask.sum() if size is None else size,
                               _SIZE_CONTEXT)
    if np.size(arr) == 0 or n == 0:
        return tuple(zeros(n, int) for _ in np.shape(arr))
    flat = cumsum(bincount(cumsum(mask), length=n))  # slot k: the k-th nonzero's flat index
    strides = (np.cumprod(np.shape(arr)[::-1])[::-1] // np.shape(arr)).astype(np.int32)
    out = tuple((flat // int(s)) % d for s, d in zip(strides, np.shape(arr), strict=True))
    if fill_value is None:
        return out
    fills = fill_value if isinstance(fill_value, tuple) else (fill_value,) * np.ndim(arr)
    if any(np.shape(v) != () for v in fills):
        raise ValueError(f"fill_value must be a scalar or a tuple of length {np.ndim(arr)}; "
                         f"got {fill_value}")
    past_count = arange(n) >= mask.sum()
    if len(fills) != len(out):
        raise ValueError(f"safe_zip() argument 1 has length {len(out)} but argument 0 has "
                         f"length {len(fills)}. All lengths: ({len(fills)}, {len(out)})")
    return tuple(_where3(past_count, v, idx) for v, idx in zip(fills, out, strict=True))


def flatnonzero(a: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
    """The nonzero entries' indices into `ravel(a)`."""
    check_arraylike("flatnonzero", a)
    return nonzero(ravel(a), size=size, fill_value=fill_value)[0]


def argwhere(a: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
    """The nonzero entries' indices as rows: shape (count, ndim)."""
    check_arraylike("argwhere", a)
    arr = asarray(a)
    result = stack(nonzero(expand_dims(arr, 0) if np.ndim(arr) == 0 else arr,
                           size=size, fill_value=fill_value), axis=1)
    return result[:, 1:] if np.ndim(arr) == 0 else result


def where(condition: Any, x: Any = None, y: Any = None, /, *, size: int | None = None,
          fill_value: Any = None) -> Any:
    """`x` where `condition`, else `y`; with neither given, `nonzero(condition)`."""
    if x is None and y is None:
        check_arraylike("where", condition)
        return nonzero(condition, size=size, fill_value=fill_value)
    check_arraylike("where", condition, x, y)  # a None among them: JAX's TypeError first
    if size is not None or fill_value is not None:
        raise ValueError("size and fill_value arguments cannot be used in three-term where "
                         "function.")
    return _where3(condition, x, y)


def bincount(x: Any, weights: Any = None, minlength: int = 0, *,
             length: int | None = None) -> Any:
    """How many times each value 0, 1, ... occurs in the non-negative ints `x` (each counted
    with its weight); `length` slots, or max(x) + 1 read from the values outside a trace."""
    check_arraylike("bincount", x)
    if not dtypes.issubdtype(dtypes.dtype(x), np.integer):
        raise TypeError(f"x argument to bincount must have an integer type; got {dtypes.dtype(x)}")
    if np.ndim(x) != 1:
        raise ValueError("only 1-dimensional input supported.")
    minlength = core.concrete_or_error(
        operator.index, minlength, "The error occurred because of argument 'minlength' of "
        "jnp.bincount.")
    if length is None:
        x = core.concrete_or_error(
            None, x, "The error occurred because of argument 'x' of jnp.bincount. To avoid this "
            "error, pass a static `length` argument.")
        length = max(minlength, int(np.max(x)) + 1 if np.size(x) else 0)
    else:
        length = core.concrete_or_error(operator.index, length,
                                        "The error occurred because of argument 'length' of "
                                        "jnp.bincount.")
    if weights is None:
        weights = np.array(1, dtype=dtypes.canonicalize_dtype(np.int64))
    elif np.shape(x) != np.shape(weights):
        raise ValueError("type of weights must match type of x. Got "
                         f"typeof(x)={core.get_aval(x).str_short(True)} and "
                         f"typeof(weights)={core.get_aval(weights).str_short(True)}")
    counts = zeros(length, dtypes.dtype(weights))
    return scatter_update(counts, clip(x, 0), weights, "add", mode="drop")
