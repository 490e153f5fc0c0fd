"""More of jnp over the same lax primitives: linspace, eye, tril/triu, outer, roll, flip,
tile, repeat, split, array_split, trace, diagonal and diag.

JAX: jax/_src/numpy/lax_numpy.py, array_creation.py and tensor_contractions.py.
"""

from __future__ import annotations

import builtins
import operator
from typing import Any

import numpy as np

from .. import core, dtypes, lax
from ..lax.utils import canonicalize_axis
from . import indexing, reductions, ufuncs
from .lax_numpy import arange, array, asarray, full, ravel, reshape, transpose, zeros
from .util import broadcast_shapes, broadcast_to, check_arraylike, promote_dtypes

__all__ = [
    "array_split", "diag", "diagonal", "eye", "flip", "linspace", "outer", "repeat", "roll",
    "split", "tile", "trace", "tril", "triu",
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
        if not dtypes.issubdtype(dtype, np.inexact):
            dtype = np.dtype("float32")
    dtype = dtypes.check_and_canonicalize_user_dtype(dtype, "linspace")
    compute = dtype if dtypes.issubdtype(dtype, np.inexact) else np.dtype("float32")
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
    return (out, asarray(step)) if retstep else out  # the step an array too, as JAX's


def eye(N: int, M: int | None = None, k: int = 0, dtype: Any = None) -> Any:
    """Ones where column == row + k, zeros elsewhere: two iotas compared."""
    dtype = np.float32 if dtype is None else dtype
    dtype = dtypes.check_and_canonicalize_user_dtype(dtype, "eye")
    if np.ndim(k) != 0 or not dtypes.issubdtype(dtypes.dtype(k), np.integer):
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


def _index_tuple(x: Any) -> tuple[int, ...]:
    """x as a tuple of ints; a TypeError if it is not (traced, or not integers)."""
    x = core.concrete_or_error(None, x, "expected a static index or sequence of indices.")
    try:
        return (operator.index(x),)
    except TypeError:
        return tuple(map(operator.index, x))


def roll(a: Any, shift: Any, axis: Any = None) -> Any:
    """Elements shifted along `axis` (of the flattened array if None), wrapping around: two
    slices swapped by a concatenate, or for a traced shift a dynamic_slice of `a` twice."""
    check_arraylike("roll", a)
    a = asarray(a)
    if axis is None:
        return reshape(roll(_ravel_1d(a), shift, 0), np.shape(a))
    axes = tuple(canonicalize_axis(ax, np.ndim(a)) for ax in _index_tuple(axis))
    try:
        shifts = _index_tuple(shift)
    except TypeError:
        return _roll_dynamic(a, asarray(shift), axes)
    for ax, s in zip(*np.broadcast_arrays(axes, shifts), strict=True):
        n = np.shape(a)[ax]
        if n == 0:
            continue
        cut = int(-s % n)
        a = lax.concatenate([lax.slice_in_dim(a, cut, n, axis=int(ax)),
                             lax.slice_in_dim(a, 0, cut, axis=int(ax))], int(ax))
    return a


def _roll_dynamic(a: Any, shift: Any, axes: tuple[int, ...]) -> Any:
    # JAX: _roll_dynamic in jax/_src/numpy/lax_numpy.py; the window of a ++ a that starts
    # n - shift % n along the axis is `a` rolled by shift
    b_shape = broadcast_shapes(np.shape(shift), np.shape(axes))
    if len(b_shape) != 1:
        raise ValueError("'shift' and 'axis' arguments to roll must be scalars or 1D arrays")
    for x, i in zip(broadcast_to(shift, b_shape), np.broadcast_to(axes, b_shape), strict=True):
        n = array(np.shape(a)[i], dtype=np.int32)
        x = ufuncs.remainder(lax.convert_element_type(x, np.int32), lax.max(n, np.int32(1)))
        a = lax.dynamic_slice_in_dim(lax.concatenate((a, a), int(i)), n - x, np.shape(a)[i],
                                     axis=int(i))
    return a


def flip(m: Any, axis: Any = None) -> Any:
    """m with the order of its elements along `axis` (every axis if None) reversed: one rev."""
    check_arraylike("flip", m)
    m = asarray(m)
    axes = range(np.ndim(m)) if axis is None else \
        axis if isinstance(axis, (tuple, list)) else (axis,)
    return lax.rev(m, tuple(canonicalize_axis(operator.index(ax), np.ndim(m)) for ax in axes))


def _is_index(r: Any) -> bool:
    try:
        operator.index(r)
        return True
    except TypeError:
        return False


def tile(A: Any, reps: Any) -> Any:
    """A repeated `reps` times along each axis: one `tile` equation, after a broadcast_in_dim
    that gives A leading size-1 axes when `reps` is longer than A's shape."""
    check_arraylike("tile", A)
    A = asarray(A)
    reps = tuple(reps) if np.iterable(reps) else (reps,)
    reps = tuple(operator.index(r) if _is_index(r) else r for r in reps)  # a float: the shape
    reps = (1,) * (np.ndim(A) - len(reps)) + reps  # rule refuses it, as JAX's
    if len(reps) > np.ndim(A):
        A = lax.expand_dims(A, tuple(range(len(reps) - np.ndim(A))))
    return lax.tile(A, reps)


_TRACED_REPEATS = ("When jit-compiling jnp.repeat, the total number of repeats must be static. "
                   "To fix this, either specify a static value for `repeats`, or pass a static "
                   "value to `total_repeat_length`.")


def repeat(a: Any, repeats: Any, axis: int | None = None, *,
           total_repeat_length: int | None = None) -> Any:
    """Each element `repeats` times along `axis` (of the flattened array if None). One int: a
    new axis broadcast after `axis`, then merged into it. One count per element: a gather, at
    indices a scatter and two cumsums make; a traced `repeats` needs `total_repeat_length`
    (the result is cut there, or filled out with the last element)."""
    check_arraylike("repeat", a, *(() if type(repeats) is int else (repeats,)))
    a = asarray(a)
    if axis is None:
        a, axis = _ravel_1d(a), 0
    axis = _index(axis, "'axis' argument of jnp.repeat()")
    if total_repeat_length is None:
        repeats = core.concrete_or_error(None, repeats, _TRACED_REPEATS)
        if np.ndim(repeats) == 0 and np.ndim(a) != 0:
            axis = canonicalize_axis(axis, np.ndim(a))
            shape = list(np.shape(a))
            wide = shape[: axis + 1] + [operator.index(repeats)] + shape[axis + 1 :]
            dims = tuple(i for i in range(len(wide)) if i != axis + 1)
            shape[axis] *= operator.index(repeats)
            return reshape(lax.broadcast_in_dim(a, tuple(wide), dims), tuple(shape))
        repeats = np.ravel(repeats)
        if np.ndim(a) != 0:
            repeats = np.broadcast_to(repeats, [np.shape(a)[axis]])
        total_repeat_length = int(np.sum(repeats))
    else:
        repeats = ravel(asarray(repeats))
        if np.ndim(a) != 0:
            repeats = broadcast_to(repeats, [np.shape(a)[axis]])
    return _repeat_each(a, repeats, axis, total_repeat_length)


def _repeat_each(a: Any, repeats: Any, axis: int, total: int) -> Any:
    # JAX: _repeat in jax/_src/numpy/lax_numpy.py, equation for equation
    if np.ndim(a) == 0:
        if np.shape(repeats) == (1,):
            return full([total], a)
        raise ValueError("`repeat` with a scalar parameter `a` is only implemented for scalar "
                         "values of the parameter `repeats`.")
    if total == 0:
        shape = list(np.shape(a))
        shape[axis] = 0
        return reshape(array([], dtype=a.dtype), shape)
    if np.shape(a)[axis] == 0:
        return a
    # [1, 2, 0, 5] -> starts [0, 1, 3, 3] -> a 1 at each start [1, 1, 0, 2, 0, 0, 0, 0]
    # -> their running count minus 1 is the source of each output [0, 1, 1, 3, 3, 3, 3, 3]
    starts = reductions.cumsum(roll(repeats, shift=1).at[0].set(0))
    marks = zeros([total], dtype="int32").at[starts].add(1)
    return indexing.take(a, reductions.cumsum(marks) - 1, axis=axis)


def _split(op: str, ary: Any, indices_or_sections: Any, axis: int) -> list[Any]:
    """Pieces of `ary` along `axis`, cut at each index of a list, or in equal sections (for
    `array_split`, the first ones one longer): one `split` equation (JAX: `_split`)."""
    check_arraylike(op, ary)
    ary = asarray(ary)
    size = np.shape(ary)[_index(axis, f"in jax.numpy.{op} argument `axis`")]  # IndexError
    if np.ndim(indices_or_sections) > 0:
        sizes = list(np.diff([0] + [_index(i, f"in jax.numpy.{op} argument 1")
                                    for i in indices_or_sections] + [size]))
    else:
        sections = core.concrete_or_error(int, indices_or_sections,
                                          f"in jax.numpy.{op} argument 1")  # 2.0 is 2
        part, rest = divmod(size, sections)
        if rest and op == "split":
            raise ValueError(
                f"array split does not result in an equal division: rest is {rest}"
            )
        sizes = [part + 1] * rest + [part] * (sections - rest)
    return lax.split(ary, [np.int64(n) for n in sizes], axis=axis)


def split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list[Any]:
    """`ary` in equal sections along `axis`, or cut at each index of a list."""
    return _split("split", ary, indices_or_sections, axis)


def array_split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list[Any]:
    """Like `split`, but sections need not divide the axis: the first ones are one longer."""
    return _split("array_split", ary, indices_or_sections, axis)


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
    if dtype is not None:  # narrowed here, so that the warning names trace, not sum
        dtype = dtypes.check_and_canonicalize_user_dtype(dtype, "trace")
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

