"""Advanced indexing (`x[idx_array]`, `x[:, idx]`, boolean masks) as a gather, and `x.at[...]`
as a scatter.

JAX: jax/_src/numpy/indexing.py (`rewriting_take`, `_index_to_gather`, `_scatter_update`) and
jax/_src/numpy/array_methods.py (`_IndexUpdateHelper`, `_IndexUpdateRef`). Every index becomes,
per operand axis, either an *advanced* axis (an integer array; ints and boolean masks turn into
those) or a *window* (a slice: a start and a size). The advanced arrays broadcast together to a
shape S; each index vector of S picks one window. NumPy's placement rule: S goes where the
advanced axes were if they are next to each other, else in front.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from .. import core, dtypes, lax
from ..array import Array
from ..lax import GatherDimensionNumbers, ScatterDimensionNumbers
from ..lax.utils import canonicalize_axis, const
from .lax_numpy import asarray
from .util import broadcast_shapes, check_arraylike, promote_dtypes

_ARRAYS = (core.Tracer, Array, np.ndarray)
_ERROR_PAGE = "https://docs.jax.dev/en/latest/errors.html"


class NonConcreteBooleanIndexError(IndexError):
    """A boolean mask known only by its shape: the result's shape would depend on its values."""

    def __init__(self, tracer: Any):
        super().__init__(f"Array boolean indices must be concrete; got {tracer.aval.str_short()}"
                         f"\n\nSee {_ERROR_PAGE}#jax.errors.NonConcreteBooleanIndexError")


def is_advanced(idx: Any) -> bool:
    """Whether an index needs a gather: an array (not 0-d), a list or a tuple inside the index
    tuple (`x[(0, 1), :]`), or a boolean."""
    items = idx if isinstance(idx, tuple) else (idx,)
    return any(isinstance(x, (list, tuple, bool, np.bool_)) or
               (isinstance(x, _ARRAYS) and (np.ndim(x) != 0 or x.dtype == np.bool_))
               for x in items)


class Plan(NamedTuple):
    """How an index reads the operand: the gather (or scatter) that does it."""

    newaxes: tuple[int, ...]  # None entries: size-1 axes inserted into the operand first
    indices: Any  # S + (k,) integer index vectors
    offset_dims: tuple[int, ...]
    collapsed: tuple[int, ...]  # the advanced axes of the (expanded) operand
    start_index_map: tuple[int, ...]
    slice_sizes: tuple[int, ...]


def _entries(idx: Any, shape: Sequence[int]) -> list[Any]:
    if isinstance(idx, list):
        # JAX's hint is tuple(seq) when the list holds what only a tuple index may hold
        hint = "tuple" if any(x is None or x is Ellipsis or isinstance(x, (slice, Sequence)) or
                              (isinstance(x, _ARRAYS) and np.ndim(x) != 0) for x in idx) \
            else "array"
        raise TypeError("Using a non-tuple sequence for multidimensional indexing is not "
                        f"allowed; use `arr[{hint}(seq)]` instead of `arr[seq]`. See "
                        "https://github.com/jax-ml/jax/issues/4564 for more information.")
    items = list(idx) if isinstance(idx, tuple) else [idx]
    ndim = len(shape)
    used = sum(np.ndim(x) if _is_bool(x) else 1 for x in items
               if x is not None and x is not Ellipsis)
    if used > ndim:
        raise IndexError(f"Too many indices: array is {ndim}-dimensional, but {used} were "
                         "indexed")
    if not any(x is Ellipsis for x in items):
        items.append(Ellipsis)
    at = next(k for k, x in enumerate(items) if x is Ellipsis)
    _check_masks(items, at, shape, ndim - used)
    return items[:at] + [slice(None)] * (ndim - used) + items[at + 1:]


def _check_masks(items: list[Any], at: int, shape: Sequence[int], ellipsis_size: int) -> None:
    """A boolean mask must have the shape of the axes it indexes (a size of 0 matches any),
    else nonzero() would give indices into other axes; `index N` is its place in the index."""
    axis = 0
    for position, x in enumerate(items):
        n = ellipsis_size if position == at else \
            0 if x is None or x is Ellipsis else np.ndim(x) if _is_bool(x) else 1
        expected = list(shape[axis:axis + n])
        if _is_bool(x) and n and not isinstance(x, core.Tracer) and \
                not all(s in (0, e) for s, e in zip(np.shape(x), expected, strict=True)):
            raise IndexError("boolean index did not match shape of indexed array in index "
                             f"{position}: got {np.shape(x)}, expected {expected}")
        axis += n


def _is_bool(x: Any) -> bool:
    # a list of Python or numpy bools, inside a tuple index, is a mask too (as in JAX)
    return isinstance(x, (bool, np.bool_)) or (isinstance(x, _ARRAYS) and x.dtype == np.bool_) \
        or (isinstance(x, list) and bool(x) and all(isinstance(e, (bool, np.bool_)) for e in x))


def _normalize(i: Any, size: int) -> Any:
    """A negative index counts from the end (JAX's lt/add/select_n): for an array of indices,
    known only when the program runs."""
    if not dtypes.issubdtype(i.dtype, np.signedinteger):
        return i
    # `i < 0`, not lax.lt: for numpy indices, numpy answers now, as in JAX's program
    return lax.select_n(i < 0, i, lax.add(i, const(i, size)))


def index_plan(shape: Sequence[int], idx: Any, normalize: bool = True) -> Plan:
    """The gather that reads `x[idx]` from an operand of `shape` (after its None axes);
    without `normalize`, negative array indices are left for the gather's mode to handle."""
    items, newaxes = [], []
    for x in _entries(idx, shape):
        if x is None:
            newaxes.append(len(items))
            items.append(slice(None))
        elif _is_bool(x):
            if isinstance(x, core.Tracer):
                raise NonConcreteBooleanIndexError(x)
            if np.ndim(x) == 0:  # a scalar bool is a new axis, all of it (True) or none
                newaxes.append(len(items))
            for nz in np.nonzero(np.atleast_1d(x)):  # a mask of rank n indexes n axes
                items.append(nz.astype(np.int32))
        else:
            items.append(x)
    shape = list(shape)
    for pos in newaxes:
        shape.insert(pos, 1)
    arrays, positions, starts, window_map, sizes = [], [], [], [], []
    for axis, (x, size) in enumerate(zip(items, shape, strict=True)):
        if isinstance(x, slice):
            start, stop, step = x.indices(size)
            if step != 1:
                raise NotImplementedError("a strided slice in an indexed update")
            if start:
                starts.append(start)
                window_map.append(axis)
            sizes.append(max(stop - start, 0))
            continue
        if isinstance(x, (int, np.integer)):  # a number is made positive now, not in the program
            arrays.append(np.asarray(x + size if x < 0 else x,
                                     np.int32 if isinstance(x, int) else None))
        else:
            # a list or tuple becomes an array first, as JAX's jnp.asarray makes it: its
            # normalization (`i < 0`) is then an equation, not a numpy constant
            i = x if isinstance(x, _ARRAYS) else \
                asarray(x) if isinstance(x, (list, tuple)) else np.asarray(x)
            if not dtypes.issubdtype(i.dtype, np.integer):
                raise TypeError("Indexer must have integer or boolean type, got indexer with "
                                f"type {i.dtype}")
            arrays.append(_normalize(i, size) if normalize else i)
        positions.append(axis)
        sizes.append(1)
    s = broadcast_shapes(*(np.shape(a) for a in arrays)) if arrays else ()  # JAX's error
    # as JAX: the index arrays broadcast to their common shape first (one broadcast_in_dim
    # each that needs it), then each gains its trailing size-1 axis
    if any(np.shape(a) != s for a in arrays):
        arrays = [a if np.shape(a) == s else
                  lax.broadcast_in_dim(a, s, tuple(range(len(s) - np.ndim(a), len(s))))
                  for a in arrays]
    # then each is read as int32, JAX's index dtype: a uint32 2**31 wraps to -2**31 (clamped
    # to 0 by the gather) as it does in JAX, where kept unsigned it would clamp to the end
    arrays = [lax.convert_element_type(a, np.int32) for a in arrays]
    columns = [lax.broadcast_in_dim(a, (*s, 1), tuple(range(len(s)))) for a in arrays]
    columns += [lax.full((*s, 1), st, np.int32) for st in starts]
    if not columns:
        indices = np.zeros((0,), np.int32)
    elif len(columns) == 1:
        indices = columns[0]
    else:
        dtype = np.result_type(*(c.dtype for c in columns))
        indices = lax.concatenate([lax.convert_element_type(c, dtype) for c in columns], len(s))
    windows = [a for a in range(len(shape)) if a not in positions]
    contiguous = positions == list(range(positions[0], positions[0] + len(positions))) \
        if positions else True
    first = positions[0] if positions and contiguous else 0
    offset_dims = tuple(k if k < first else k + len(s)
                        for k in range(len(windows))) if contiguous else \
        tuple(len(s) + k for k in range(len(windows)))
    return Plan(tuple(newaxes), indices, offset_dims, tuple(positions),
                tuple(positions) + tuple(window_map), tuple(sizes))


def _pre_slice(arr: Any, idx: Any) -> tuple[Any, tuple]:
    """Apply the index's slices first (a plain `slice`), leaving full slices in their place."""
    items = _entries(idx, np.shape(arr))
    shape = np.shape(arr)
    starts, limits, strides, out, axis, flip = [], [], [], [], 0, []
    for x in items:
        if x is None:
            out.append(x)
            continue
        if isinstance(x, slice):
            start, stop, step = x.indices(shape[axis])
            if step < 0:  # the same elements read forwards from the lowest, then reversed
                start, stop, step = min(shape[axis], stop + 1 + (start - stop - 1) % -step), \
                    start + 1, -step
                flip.append(axis)
            starts.append(start)
            limits.append(max(start, stop))
            strides.append(step)
            out.append(slice(None))
            axis += 1
            continue
        n = np.ndim(x) if _is_bool(x) else 1
        for d in range(n):
            starts.append(0)
            limits.append(shape[axis + d])
            strides.append(1)
        out.append(x)
        axis += n
    if starts != [0] * len(shape) or limits != list(shape) or set(strides) - {1}:
        arr = lax.slice(arr, starts, limits, None if set(strides) <= {1} else strides)
    return (lax.rev(arr, flip) if flip else arr), tuple(out)


def _expanded(arr: Any, plan: Plan) -> Any:
    return lax.expand_dims(arr, plan.newaxes) if plan.newaxes else arr


def _gather_dn(plan: Plan) -> GatherDimensionNumbers:
    return GatherDimensionNumbers(offset_dims=plan.offset_dims, collapsed_slice_dims=plan.collapsed,
                                  start_index_map=plan.start_index_map)


def rewriting_take(arr: Any, idx: Any, mode: Any = None, fill_value: Any = None,
                   unique_indices: bool = False, indices_are_sorted: bool = False,
                   normalize_indices: bool = True) -> Any:
    """arr[idx] with advanced indices: one gather (out-of-bounds indices are clamped)."""
    arr, idx = _pre_slice(arr, idx)
    plan = index_plan(np.shape(arr), idx, normalize_indices)
    return lax.gather(_expanded(arr, plan), plan.indices, _gather_dn(plan), plan.slice_sizes,
                      mode="promise_in_bounds" if mode is None else mode,
                      fill_value=fill_value, unique_indices=unique_indices,
                      indices_are_sorted=indices_are_sorted)


_SCATTERS = {"set": lax.scatter, "add": lax.scatter_add, "mul": lax.scatter_mul,
             "min": lax.scatter_min, "max": lax.scatter_max}


def scatter_update(arr: Any, idx: Any, values: Any, op: str, mode: Any = None,
                   indices_are_sorted: bool = False, unique_indices: bool = False) -> Any:
    """arr with arr[idx] combined with `values` by `op`: one scatter (out of bounds: dropped)."""
    from . import lax_numpy

    plan = index_plan(np.shape(arr), idx)
    operand = lax_numpy.asarray(arr)
    dtype, weak_type = operand.dtype, dtypes.is_weakly_typed(operand)
    fits = isinstance(values, int) and dtypes.issubdtype(dtype, np.integer) and \
        np.iinfo(dtype).min <= values <= np.iinfo(dtype).max
    values = lax_numpy.asarray(values, dtype=dtype if fits else None)
    if dtypes.result_type(values, operand) != dtypes.result_type(operand):
        warnings.warn("scatter inputs have incompatible types: cannot safely cast value from "
                      f"dtype={dtypes.dtype(values)} to dtype={dtype} with "
                      "jax_numpy_dtype_promotion=standard. In future JAX releases this will "
                      "result in an error.", FutureWarning, stacklevel=3)
    # as JAX: scatter in the joined dtype (an int array += 0.5 adds in float), then cast back
    operand, values = promote_dtypes(operand, values)
    operand = _expanded(operand, plan)
    s_rank = np.ndim(plan.indices) - 1
    out_shape = [0] * (s_rank + len(plan.offset_dims))
    windows = [a for a in range(np.ndim(operand)) if a not in plan.collapsed]
    for d, a in zip(plan.offset_dims, windows, strict=True):
        out_shape[d] = plan.slice_sizes[a]
    batch = iter(np.shape(plan.indices)[:-1])
    out_shape = [d if k in plan.offset_dims else next(batch) for k, d in enumerate(out_shape)]
    updates = lax_numpy.broadcast_to(values, tuple(out_shape))
    dn = ScatterDimensionNumbers(update_window_dims=plan.offset_dims,
                                 inserted_window_dims=plan.collapsed,
                                 scatter_dims_to_operand_dims=plan.start_index_map)
    out = _SCATTERS[op](operand, plan.indices, updates, dn, mode=mode,
                        indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)
    out = lax.squeeze(out, plan.newaxes) if plan.newaxes else out
    return lax.convert_element_type(out, dtype, weak_type)


class IndexUpdateRef:
    """`x.at[idx]`: the methods that return x updated at idx (JAX: _IndexUpdateRef, printed
    under that name)."""

    def __init__(self, array: Any, index: Any):
        self.array, self.index = array, index

    def __repr__(self) -> str:
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

    def get(self, *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode: Any = None, fill_value: Any = None) -> Any:
        if not is_advanced(self.index) and mode is None and fill_value is None:
            return self.array[self.index]
        basic = not is_advanced(self.index)  # numbers and slices: one sorted, unique index
        return rewriting_take(self.array, self.index, mode, fill_value, unique_indices or basic,
                              indices_are_sorted or basic)


def _method(op: str):
    def update(self: IndexUpdateRef, values: Any, *, indices_are_sorted: bool = False,
               unique_indices: bool = False, mode: Any = None) -> Any:
        basic = not is_advanced(self.index)  # numbers and slices: one sorted, unique index
        return scatter_update(self.array, self.index, values, op, mode,
                              indices_are_sorted or basic, unique_indices or basic)
    update.__name__ = op
    return update


for _op in _SCATTERS:
    setattr(IndexUpdateRef, _op, _method(_op))
IndexUpdateRef.multiply = IndexUpdateRef.mul  # JAX's name for it; `mul` is its alias


class IndexUpdateHelper:
    """`x.at`: indexing it gives an IndexUpdateRef (JAX: _IndexUpdateHelper)."""

    def __init__(self, array: Any):
        self.array = array

    def __getitem__(self, index: Any) -> IndexUpdateRef:
        return IndexUpdateRef(self.array, index)

    def __repr__(self) -> str:
        return f"_IndexUpdateHelper({self.array!r})"


# ------------------------------------------------------------------ take, take_along_axis


def take(a: Any, indices: Any, axis: int | None = None, out: None = None, mode: Any = None,
         unique_indices: bool = False, indices_are_sorted: bool = False,
         fill_value: Any = None) -> Any:
    """Elements of `a` at `indices` along `axis` (of the flattened `a` if None); by default an
    out-of-bounds index reads `fill_value` (NaN for floats), as in JAX. mode="clip" clamps
    every index into range (a negative one to 0: it does not count from the end), "wrap"
    takes them modulo the axis size."""
    from . import lax_numpy, ufuncs

    check_arraylike("take", a, indices)
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.take is not supported.")
    a = lax_numpy.asarray(a)
    if axis is None:
        a, axis = lax_numpy.ravel(a), 0
    axis = canonicalize_axis(axis, np.ndim(a))
    indices = lax_numpy.asarray(indices)
    if mode == "raise":
        raise NotImplementedError("The 'raise' mode to jnp.take is not supported.")
    if mode not in (None, "fill", "clip", "wrap"):
        raise ValueError(f"Invalid mode '{mode}' for np.take")
    if np.shape(a)[axis] == 0:  # nothing to gather from: only nothing can be taken (JAX: same)
        if np.size(indices) != 0:
            raise IndexError("Cannot do a non-empty jnp.take() from an empty axis.")
        return a
    # clipped indices count from 0, and wrapped ones are in range already: neither normalized
    normalize = mode not in ("clip", "wrap")
    if mode == "wrap":
        indices, mode = ufuncs.remainder(indices, const(indices, np.shape(a)[axis])), \
            "promise_in_bounds"
    return rewriting_take(a, (slice(None),) * axis + (indices,),
                          "fill" if mode is None else mode, fill_value, unique_indices,
                          indices_are_sorted, normalize_indices=normalize)


def take_along_axis(arr: Any, indices: Any, axis: int | None, mode: Any = None,
                    fill_value: Any = None, wrap_negative_indices: bool | None = None) -> Any:
    """arr's elements at `indices` along `axis`, every other axis matched position by position
    (broadcast against `indices`)."""
    from . import lax_numpy

    check_arraylike("take_along_axis", arr, indices)  # JAX's checks, in its order
    arr, indices = lax_numpy.asarray(arr), lax_numpy.asarray(indices)
    if not dtypes.issubdtype(indices.dtype, np.integer):
        raise TypeError(f"take_along_axis indices must be of integer type, got {indices.dtype}")
    if axis is None:
        if np.ndim(indices) != 1:
            raise ValueError("take_along_axis indices must be 1D if axis=None, got shape "
                             f"{np.shape(indices)}")
        arr, axis = lax_numpy.ravel(arr), 0
    if np.ndim(indices) != np.ndim(arr):
        raise ValueError("indices and arr must have the same number of dimensions; "
                         f"{np.ndim(indices)} vs. {np.ndim(arr)}")
    axis = canonicalize_axis(axis, np.ndim(arr))
    arr_shape = list(np.shape(arr))
    arr_shape[axis] = np.shape(indices)[axis]
    out_shape = np.broadcast_shapes(np.shape(indices), tuple(arr_shape))
    index = []
    for d in range(np.ndim(arr)):
        if d == axis:
            index.append(lax_numpy.broadcast_to(indices, out_shape))
        else:
            index.append(lax.broadcasted_iota(np.int32, out_shape, d))
    if wrap_negative_indices is None:  # JAX's legacy default: wrap unless promised in bounds
        wrap_negative_indices = mode != "promise_in_bounds"
    return rewriting_take(arr, tuple(index), "fill" if mode is None else mode, fill_value,
                          normalize_indices=wrap_negative_indices)
