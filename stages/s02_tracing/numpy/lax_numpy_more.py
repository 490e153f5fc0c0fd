"""More of jnp over the same lax primitives: linspace, eye, tril/triu, outer, roll, flip,
tile, repeat, split, trace, diagonal and diag.

JAX: jax/_src/numpy/lax_numpy.py, array_creation.py and tensor_contractions.py. JAX 0.10.2 writes
`jnp.tile` and `jnp.split` with `tile` and `split` primitives, which this stage does not have:
ours are broadcast_in_dim then reshape, and one slice per piece (the values agree, the jaxprs
do not).
"""

from __future__ import annotations

import builtins
import operator
from typing import Any

import numpy as np

from .. import core, dtypes, lax
from ..lax.utils import canonicalize_axis
from . import reductions, ufuncs
from .lax_numpy import arange, asarray, ravel, reshape, transpose
from .util import check_arraylike, promote_dtypes

__all__ = [
    "diag", "diagonal", "eye", "flip", "linspace", "outer", "repeat", "roll", "split", "tile",
    "trace", "tril", "triu",
]


def _real_dtype(dtype: np.dtype) -> np.dtype:
    """float32 for complex64; a real dtype as it is."""
    return np.zeros((), dtype).real.dtype


def _index(value: Any, what: str) -> int:
    """A concrete Python int (a traced value refuses, naming `what`)."""
    return operator.index(core.concrete_or_error(None, value, what))


# ------------------------------------------------------------------ creating arrays


def linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
             retstep: bool = False, dtype: Any = None, axis: int = 0) -> Any:
    """`num` values from start to stop: start * (1 - t) + stop * t for t = iota / div, then
    stop itself appended when `endpoint` (integer dtypes take the floor)."""
    num = _index(num, "'num' argument of jnp.linspace")
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    check_arraylike("linspace", start, stop)
    start, stop = asarray(start), asarray(stop)
    if dtype is None:
        dtype = dtypes.result_type(start, stop)
        if not np.issubdtype(dtype, np.inexact):
            dtype = np.dtype("float32")
    dtype = dtypes.canonicalize_dtype(dtype)
    compute = dtype if np.issubdtype(dtype, np.inexact) else np.dtype("float32")
    start = lax.convert_element_type(start, compute)
    stop = lax.convert_element_type(stop, compute)
    bounds = list(np.broadcast_shapes(np.shape(start), np.shape(stop)))
    start = lax.broadcast_in_dim(start, bounds, tuple(range(len(bounds) - np.ndim(start),
                                                            len(bounds)))) \
        if list(np.shape(start)) != bounds else start
    stop = lax.broadcast_in_dim(stop, bounds, tuple(range(len(bounds) - np.ndim(stop),
                                                          len(bounds)))) \
        if list(np.shape(stop)) != bounds else stop
    axis = len(bounds) + axis + 1 if axis < 0 else axis
    shape = bounds[:axis] + [1] + bounds[axis:]
    div = num - 1 if endpoint else num
    if num > 1:
        step = lax.div(lax.sub(stop, start), np.array(div, compute))
        real = _real_dtype(compute)
        t_shape = [1] * len(shape)
        t_shape[axis] = div
        t = lax.div(lax.reshape(lax.iota(real, div), tuple(t_shape)) if len(t_shape) > 1
                    else lax.iota(real, div), np.array(div, real))
        t = lax.convert_element_type(t, compute)
        out = ufuncs.add(ufuncs.multiply(lax.reshape(start, tuple(shape)), ufuncs.subtract(1, t)),
                         ufuncs.multiply(lax.reshape(stop, tuple(shape)), t))
        if endpoint:
            out = lax.concatenate([out, lax.expand_dims(stop, (axis,))], axis)
    elif num == 1:
        step = np.array(np.nan if endpoint else 0, compute)
        if not endpoint:
            step = lax.sub(stop, start)
        out = lax.reshape(start, tuple(shape))
    else:
        step = np.array(np.nan, compute)
        out = lax.full(tuple(bounds[:axis] + [0] + bounds[axis:]), 0, dtype)
    if np.issubdtype(dtype, np.integer) and not np.issubdtype(dtypes.dtype(out), np.integer):
        out = lax.floor(out)
    out = lax.convert_element_type(out, dtype)
    return (out, step) if retstep else out


def eye(N: int, M: int | None = None, k: int = 0, dtype: Any = None) -> Any:
    """Ones where column == row + k, zeros elsewhere: two iotas compared."""
    dtype = dtypes.canonicalize_dtype(np.float32 if dtype is None else dtype)
    if np.ndim(k) != 0 or not np.issubdtype(dtypes.dtype(k), np.integer):
        raise ValueError(f"k must be a scalar integer; got {k}")
    n = _index(N, "argument of 'N' jnp.eye()")
    m = n if M is None else _index(M, "argument 'M' of jnp.eye()")
    if n < 0 or m < 0:
        raise ValueError(f"negative dimensions are not allowed, got {N} and {M}")
    rows = lax.broadcasted_iota(np.int32, (n, m), 0)
    cols = lax.broadcasted_iota(np.int32, (n, m), 1)
    offset = np.int32(k) if isinstance(k, int) else k
    return lax.convert_element_type(ufuncs.equal(lax.add(rows, offset), cols), dtype)


def _below(n: int, m: int, k: int) -> Any:
    """The (n, m) mask of row + k >= column: the entries on and below the k-th diagonal."""
    rows = lax.add(lax.broadcasted_iota(np.int32, (n, m), 0), np.int32(k))
    return lax.ge(rows, lax.broadcasted_iota(np.int32, (n, m), 1))


def _triangle(name: str, m: Any, k: int, lower: bool) -> Any:
    check_arraylike(name, m)
    m = asarray(m)
    shape = np.shape(m)
    if len(shape) < 2:
        raise ValueError(f"Argument to jax.numpy.{name} must be at least 2D")
    k = _index(k, f"'k' argument of jnp.{name}")
    mask = lax.broadcast(_below(*shape[-2:], k if lower else k - 1), shape[:-2])
    zeros = lax.full_like(m, 0)
    return lax.select(mask, m, zeros) if lower else lax.select(mask, zeros, m)


def tril(m: Any, k: int = 0) -> Any:
    """m with the entries above the k-th diagonal zeroed (last two axes)."""
    return _triangle("tril", m, k, lower=True)


def triu(m: Any, k: int = 0) -> Any:
    """m with the entries below the k-th diagonal zeroed (last two axes)."""
    return _triangle("triu", m, k, lower=False)


# ------------------------------------------------------------------ shapes


def outer(a: Any, b: Any, out: None = None) -> Any:
    """Every a[i] times every b[j], both raveled: a column times a row."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.outer is not supported.")
    check_arraylike("outer", a, b)
    a, b = promote_dtypes(a, b)
    column = lax.expand_dims(_ravel_1d(a), (1,))
    return ufuncs.multiply(column, lax.expand_dims(_ravel_1d(b), (0,)))


def _ravel_1d(x: Any) -> Any:
    return x if np.ndim(x) == 1 else ravel(x)


def roll(a: Any, shift: Any, axis: Any = None) -> Any:
    """Elements shifted along `axis` (of the flattened array if None), wrapping around: two
    slices swapped by a concatenate. The shift must be concrete."""
    check_arraylike("roll", a)
    a = asarray(a)
    if axis is None:
        return reshape(roll(_ravel_1d(a), shift, 0), np.shape(a))
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    axes = tuple(canonicalize_axis(operator.index(ax), np.ndim(a)) for ax in axes)
    shifts = tuple(shift) if isinstance(shift, (tuple, list)) else (shift,)
    shifts = tuple(_index(s, "'shift' argument of jnp.roll (a traced shift is not supported "
                             "in this stage)") for s in shifts)
    for ax, s in zip(*np.broadcast_arrays(axes, shifts), strict=True):
        n = np.shape(a)[ax]
        if n == 0:
            continue
        cut = int(-s % n)
        a = lax.concatenate([lax.slice_in_dim(a, cut, n, axis=int(ax)),
                             lax.slice_in_dim(a, 0, cut, axis=int(ax))], int(ax))
    return a


def flip(m: Any, axis: Any = None) -> Any:
    """m with the order of its elements along `axis` (every axis if None) reversed: one rev."""
    check_arraylike("flip", m)
    m = asarray(m)
    axes = range(np.ndim(m)) if axis is None else \
        axis if isinstance(axis, (tuple, list)) else (axis,)
    return lax.rev(m, tuple(canonicalize_axis(operator.index(ax), np.ndim(m)) for ax in axes))


def tile(A: Any, reps: Any) -> Any:
    """A repeated `reps` times along each axis: broadcast_in_dim to (r0, d0, r1, d1, ...) then
    one reshape (JAX 0.10.2 has a `tile` primitive instead)."""
    check_arraylike("tile", A)
    A = asarray(A)
    reps = tuple(reps) if isinstance(reps, (tuple, list)) else (reps,)
    reps = tuple(operator.index(r) for r in reps)
    ndim = builtins.max(len(reps), np.ndim(A))
    shape = (1,) * (ndim - np.ndim(A)) + tuple(np.shape(A))
    reps = (1,) * (ndim - len(reps)) + reps
    if shape != np.shape(A):
        A = lax.reshape(A, shape)
    if reps == (1,) * ndim:
        return A
    pairs = tuple(d for r, s in zip(reps, shape, strict=True) for d in (r, s))
    wide = lax.broadcast_in_dim(A, pairs, tuple(range(1, 2 * ndim, 2)))
    return lax.reshape(wide, tuple(r * s for r, s in zip(reps, shape, strict=True)))


def repeat(a: Any, repeats: Any, axis: int | None = None, *,
           total_repeat_length: int | None = None) -> Any:
    """Each element `repeats` times along `axis` (of the flattened array if None): a new axis
    broadcast after `axis`, then merged into it. `repeats` must be one concrete int here."""
    check_arraylike("repeat", a)
    a = asarray(a)
    if axis is None:
        a, axis = _ravel_1d(a), 0
    axis = canonicalize_axis(_index(axis, "'axis' argument of jnp.repeat()"), np.ndim(a))
    if np.ndim(repeats) != 0:
        raise NotImplementedError("jnp.repeat with an array of repeats (a gather) is not in "
                                  "this stage; give one int")
    repeats = _index(repeats, "When jit-compiling jnp.repeat, the total number of repeats "
                     "must be static. To fix this, either specify a static value for "
                     "`repeats`, or pass a static value to `total_repeat_length`.")
    shape = list(np.shape(a))
    wide = shape[: axis + 1] + [repeats] + shape[axis + 1 :]
    dims = tuple(i for i in range(len(wide)) if i != axis + 1)
    shape[axis] *= repeats
    return reshape(lax.broadcast_in_dim(a, tuple(wide), dims), tuple(shape))


def split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list[Any]:
    """Pieces of `ary` along `axis`: `indices_or_sections` equal parts, or cut at each index
    in a list (one slice per piece; JAX 0.10.2 has a `split` primitive instead)."""
    check_arraylike("split", ary)
    ary = asarray(ary)
    axis = canonicalize_axis(_index(axis, "in jax.numpy.split argument `axis`"), np.ndim(ary))
    size = np.shape(ary)[axis]
    if np.ndim(indices_or_sections) > 0:
        cuts = [0] + [_index(i, "in jax.numpy.split argument 1")
                      for i in indices_or_sections] + [size]
        sizes = np.diff(cuts)
    else:
        sections = _index(indices_or_sections, "in jax.numpy.split argument 1")
        part, rest = divmod(size, sections)
        if rest:
            raise ValueError(
                f"array split does not result in an equal division: rest is {rest}"
            )
        sizes = [part] * sections
    sizes = [np.int64(n) for n in sizes]
    if any(n < 0 for n in sizes):
        raise ValueError(f"Sizes passed to split must be nonnegative, got {sizes}")
    starts = np.cumsum([0, *sizes[:-1]])
    return [lax.slice_in_dim(ary, int(s), int(s + n), axis=axis)
            for s, n in zip(starts, sizes, strict=True)]


# ------------------------------------------------------------------ diagonals


def _axes_last(a: Any, axis1: int, axis2: int) -> Any:
    """a with axis1 and axis2 moved to the end, in that order (no equation if already)."""
    ndim = np.ndim(a)
    i, j = canonicalize_axis(axis1, ndim), canonicalize_axis(axis2, ndim)
    perm = [d for d in range(ndim) if d not in (i, j)] + [i, j]
    return a if perm == list(range(ndim)) else transpose(a, perm)


def trace(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None,
          out: None = None) -> Any:
    """The sum along the offset diagonal: a masked by eye(..., k=offset), then summed."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.trace is not supported.")
    check_arraylike("trace", a)
    a = asarray(a)
    if canonicalize_axis(axis1, np.ndim(a)) == canonicalize_axis(axis2, np.ndim(a)):
        raise ValueError(f"axis1 and axis2 can not be same. axis1={axis1} and axis2={axis2}")
    shape = np.shape(a)
    a = _axes_last(a, axis1, axis2)
    mask = eye(shape[axis1], shape[axis2], k=offset, dtype=bool)
    return reductions.sum(ufuncs.where(mask, a, lax.full_like(a, 0)), axis=(-2, -1),
                          dtype=dtype)


def diagonal(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    """The offset diagonal over axis1 and axis2 (placed last): an index-array gather."""
    check_arraylike("diagonal", a)
    a = asarray(a)
    if np.ndim(a) < 2:
        raise ValueError("diagonal requires an array of at least two dimensions.")
    offset = _index(offset, "'offset' argument of jnp.diagonal()")
    shape = np.shape(a)
    a = _axes_last(a, axis1, axis2)
    n = builtins.max(0, builtins.min(shape[axis1] + builtins.min(offset, 0),
                                     shape[axis2] - builtins.max(offset, 0)))
    i, j = arange(n), arange(builtins.abs(offset), builtins.abs(offset) + n)
    return a[..., i, j] if offset >= 0 else a[..., j, i]


def diag(v: Any, k: int = 0) -> Any:
    """A 1-d v laid on the k-th diagonal of a square matrix; the k-th diagonal of a 2-d v."""
    check_arraylike("diag", v)
    v = asarray(v)
    k = operator.index(k)
    if np.ndim(v) == 1:
        zero = lax.full_like(v, 0, shape=())
        n = np.shape(v)[0] + builtins.abs(k)
        v = lax.pad(v, zero, ((builtins.max(0, -k), builtins.max(0, k), 0),))
        return ufuncs.where(eye(n, k=k, dtype=bool), v[:, None], zero)
    if np.ndim(v) == 2:
        return diagonal(v, offset=k)
    raise ValueError("diag input must be 1d or 2d")

