"""Tracer operators and methods, and basic indexing (`x[0, 1:]`).

JAX: jax/_src/numpy/array_methods.py (`_set_shaped_array_attributes`,
`_set_tracer_aval_forwarding`) and the static/dynamic slice paths of jax/_src/numpy/indexing.py.
Two sides, as in JAX: `Tracer.__add__` is `self.aval._add(self, other)`, and the aval's `_add` is
jnp.add; so every operator a tracer has is defined here, once, in terms of the numpy facade.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import core, lax
from ..array import Array
from . import (
    indexing,
    lax_numpy,
    lax_numpy_more,
    math_more,
    reductions,
    searching,
    sorting,
    tensor_contractions,
    ufuncs,
)

# ------------------------------------------------------------------ indexing


_ARRAYS = (core.Tracer, Array, np.ndarray)  # index values held in arrays: dynamic, as in JAX


def _expand_index(idx: Any, ndim: int) -> list[tuple[str, Any]]:
    """The index as (kind, value) entries, one per consumed axis plus 'none' entries."""
    items = list(idx) if isinstance(idx, tuple) else [idx]
    consumed = [x for x in items if x is not None and x is not Ellipsis]
    if len(consumed) > ndim:
        raise IndexError(
            f"Too many indices: array is {ndim}-dimensional, but {len(consumed)} were indexed"
        )
    if items.count(Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if Ellipsis not in items:
        items.append(Ellipsis)
    at = items.index(Ellipsis)
    fill = [slice(None)] * (ndim - len(consumed))
    items = items[:at] + fill + items[at + 1 :]
    return [("none", None) if x is None else ("index", x) for x in items]


# --8<-- [start:getitem]
def _getitem(arr: Any, idx: Any) -> Any:
    """arr[idx] for int, slice, None and ... indices; traced ints use dynamic_slice; index
    arrays and masks are a gather (indexing.py)."""
    if indexing.is_advanced(idx):
        return indexing.rewriting_take(arr, idx)
    entries = _expand_index(idx, np.ndim(arr))
    shape = np.shape(arr)
    for _, value in entries:
        if value is not None and not isinstance(value, slice):
            dtype = value.dtype if isinstance(value, _ARRAYS) else np.asarray(value).dtype
            if not np.issubdtype(dtype, np.integer):
                raise TypeError("Indexer must have integer or boolean type, got indexer with "
                                f"type {dtype}")
    starts, limits, strides, squeeze_axes, newaxis_dims, rev_axes = [], [], [], [], [], []
    # a 0-d integer array (traced or not) is a dynamic start, as in JAX: dynamic_slice; so is
    # an int out of range, which dynamic_slice clamps (JAX raises no IndexError)
    is_dynamic = any(isinstance(v, _ARRAYS) for _, v in entries) or \
        any(not isinstance(v, slice) and not -n <= v < n for (_, v), n in _sized(entries, shape))
    axis = 0
    for kind, value in entries:
        if kind == "none":
            # positions in the result, after earlier squeezes and new axes
            newaxis_dims.append(len(starts) - len(squeeze_axes) + len(newaxis_dims))
            continue
        size = shape[axis]
        if size == 0 and not isinstance(value, slice):
            raise IndexError(f"index is out of bounds for axis {axis} with size 0")
        if isinstance(value, slice):
            start, stop, step = value.indices(size)
            if is_dynamic and abs(step) != 1:
                raise TypeError("dynamic_slice: only unit steps supported in slice.")
            if step < 0:  # the same elements read forwards from the lowest, then reversed
                start, stop, step = min(size, stop + 1 + (start - stop - 1) % -step), \
                    start + 1, -step
                rev_axes.append(axis)
            starts.append(start)
            limits.append(max(start, stop))
            strides.append(step)
        elif isinstance(value, _ARRAYS):
            starts.append(value)
            limits.append(None)
            strides.append(1)
            squeeze_axes.append(axis)
        else:
            i = int(value)
            if not is_dynamic and i < 0:
                i += size  # dynamic_slice normalizes negative starts itself
            # dynamic, JAX makes the int an array: its normalization is staged
            starts.append(lax_numpy.asarray(i) if is_dynamic else i)
            limits.append(None if is_dynamic else i + 1)
            strides.append(1)
            squeeze_axes.append(axis)
        axis += 1
    if is_dynamic:
        result = _dynamic_take(arr, starts, limits, squeeze_axes)
    elif starts == [0] * len(shape) and limits == list(shape) and set(strides) <= {1}:
        result = arr  # x[:] or x[...] stages nothing
    else:
        all_unit = all(s == 1 for s in strides)
        result = lax.slice(arr, starts, limits, None if all_unit else strides)
    if rev_axes:
        result = lax.rev(result, rev_axes)
    if squeeze_axes:
        result = lax.squeeze(result, squeeze_axes)
    if newaxis_dims:
        result = lax.expand_dims(result, newaxis_dims)
    return result
# --8<-- [end:getitem]


def _sized(entries: list, shape: tuple) -> list:
    """The entries that index an axis, each with that axis's size."""
    return list(zip([e for e in entries if e[0] != "none"], shape, strict=True))


def _dynamic_take(arr: Any, starts: list, limits: list, squeeze_axes: list) -> Any:
    sizes = [1 if lim is None else lim - s for s, lim in zip(starts, limits, strict=False)]
    if len(starts) > 1:
        # dynamic_slice wants start indices of one dtype: all int32, as jnp does
        starts = [lax.convert_element_type(s, np.int32) for s in starts]
    return lax.dynamic_slice(arr, starts, sizes)


# ------------------------------------------------------------------ methods


def _reshape(a: Any, *args: Any, order: str = "C") -> Any:
    shape = args[0] if len(args) == 1 else args
    return lax_numpy.reshape(a, shape, order)


def _transpose(a: Any, *args: Any) -> Any:
    if not args or (len(args) == 1 and args[0] is None):
        return lax_numpy.transpose(a)
    axes = args[0] if len(args) == 1 else args
    return lax_numpy.transpose(a, axes)


def _defer_to_unrecognized_arg(fun: Any, swap: bool = False):
    # `tracer + [1, 2]` returns NotImplemented, so Python tries list.__radd__ and then fails
    def method(self: Any, other: Any) -> Any:
        if not isinstance(other, (core.Tracer, Array, np.ndarray, np.generic, bool, int, float,
                                  complex)):
            return NotImplemented
        return fun(other, self) if swap else fun(self, other)

    return method


def _refusing(fun: Any, symbol: str, containers: tuple[type, ...], swap: bool = False):
    # JAX: _operator_eq/_ne/_mul/_rmul. Python's fallback would hide a list meant as an array:
    # `x == [1]` is False by identity, `[1, 2] * x` repeats the list (through __index__). So
    # these containers are refused by exact type (a namedtuple is not); == and != both say ==
    deferring = _defer_to_unrecognized_arg(fun, swap)

    def method(self: Any, other: Any) -> Any:
        if type(other) in containers:
            left, right = (other, self) if swap else (self, other)
            raise TypeError(f"unsupported operand type(s) for {symbol}: "
                            f"{type(left).__name__!r} and {type(right).__name__!r}")
        return deferring(self, other)

    return method


def _unimplemented_setitem(self: Any, index: Any, value: Any) -> None:
    raise TypeError("JAX arrays are immutable and do not support in-place item assignment. "
                    "Instead of x[idx] = y, use x = x.at[idx].set(y) or another .at[] method: "
                    "https://docs.jax.dev/en/latest/_autosummary/jax.numpy.ndarray.at.html")


def _operator_round(number: Any, ndigits: int | None = None) -> Any:
    """round(x): an integer array, as round(7.5) is an int; round(x, 1) keeps the dtype."""
    out = math_more.round(number, decimals=ndigits or 0)
    return lax_numpy.astype(out, int) if ndigits is None else out


_binary_operators = {
    "add": ufuncs.add, "sub": ufuncs.subtract, "mul": ufuncs.multiply,
    "truediv": ufuncs.true_divide, "floordiv": ufuncs.floor_divide, "mod": ufuncs.remainder,
    "divmod": ufuncs.divmod, "pow": ufuncs.power, "matmul": tensor_contractions.matmul,
    "and": ufuncs.bitwise_and, "or": ufuncs.bitwise_or, "xor": ufuncs.bitwise_xor,
    "lshift": ufuncs.left_shift, "rshift": ufuncs.right_shift,
}
_comparisons = {
    "eq": ufuncs.equal, "ne": ufuncs.not_equal, "lt": ufuncs.less, "le": ufuncs.less_equal,
    "gt": ufuncs.greater, "ge": ufuncs.greater_equal,
}
_unary_operators = {
    "neg": ufuncs.negative, "pos": ufuncs.positive, "abs": ufuncs.absolute,
    "invert": ufuncs.invert,
}
def _matrix_transpose(x: Any) -> Any:  # x.mT: the last two axes swapped (JAX: same)
    if np.ndim(x) < 2:
        raise ValueError("x must be at least two-dimensional for matrix_transpose; got "
                         f"ndim={np.ndim(x)}")
    return lax_numpy.swapaxes(x, -1, -2)


def _contains(x: Any, query: Any) -> Any:
    """`query in x`: for a 1-D x and a scalar query only, unlike numpy (JAX: the same)."""
    if query is None or isinstance(query, str):
        raise TypeError(f"Array.__contains__: unsupported operand type {type(query)}.")
    query = lax_numpy.asarray(query)
    if np.ndim(x) != 1:
        raise ValueError("Array.__contains__: search array must be one-dimensional, got "
                         f"arr.shape={np.shape(x)}.")
    if np.ndim(query) != 0:
        raise ValueError(f"Array.__contains__: query value must be a scalar, got "
                         f"query.shape={np.shape(query)}")
    return reductions.any(ufuncs.equal(x, query))


_methods = {
    "contains": _contains, "reshape": _reshape, "transpose": _transpose, "sum": reductions.sum,
    "mean": reductions.mean, "max": reductions.max, "min": reductions.min,
    "argmax": reductions.argmax, "argmin": reductions.argmin, "cumsum": reductions.cumsum,
    "prod": reductions.prod, "cumprod": reductions.cumprod, "any": reductions.any,
    "all": reductions.all,
    "astype": lax_numpy.astype, "squeeze": lax_numpy.squeeze, "ravel": lax_numpy.ravel,
    "flatten": lax_numpy.ravel, "dot": tensor_contractions.dot, "clip": ufuncs.clip,
    "swapaxes": lax_numpy.swapaxes, "getitem": _getitem, "T": lax_numpy.transpose,
    "round": math_more.round, "std": math_more.std, "var": math_more.var,
    "trace": lax_numpy_more.trace, "repeat": lax_numpy_more.repeat,
    "diagonal": lax_numpy_more.diagonal, "conj": ufuncs.conj, "conjugate": ufuncs.conjugate,
    "real": ufuncs.real, "imag": ufuncs.imag, "sort": sorting.sort,
    "argsort": sorting.argsort, "take": indexing.take, "mT": _matrix_transpose,
    "nonzero": searching.nonzero,
}


def _set_shaped_array_attributes(shaped_array: type) -> None:
    """Install `_add`, `_radd`, ..., `_getitem`, `_T`, `_reshape`, ... as static methods."""
    sequences, containers = (list, tuple), (dict, list, set, tuple)
    for name, fun in _binary_operators.items():
        op, rop = _defer_to_unrecognized_arg(fun), _defer_to_unrecognized_arg(fun, True)
        if name == "mul":  # `*` on a list or tuple repeats it
            op, rop = _refusing(fun, "*", sequences), _refusing(fun, "*", sequences, True)
        setattr(shaped_array, f"_{name}", staticmethod(op))
        setattr(shaped_array, f"_r{name}", staticmethod(rop))
    for name, fun in _comparisons.items():
        setattr(shaped_array, f"_{name}", staticmethod(
            _refusing(fun, "==", containers) if name in ("eq", "ne")
            else _defer_to_unrecognized_arg(fun)))
    shaped_array._setitem = staticmethod(_unimplemented_setitem)
    shaped_array._operator_round = staticmethod(_operator_round)  # `round` is the method
    for name, fun in {**_unary_operators, **_methods}.items():
        setattr(shaped_array, f"_{name}", staticmethod(fun))


# Operators forward to the aval, exactly as JAX's Tracer does: `x + y` -> aval._add(x, y).
_TRACER_OPERATORS = (
    "neg pos abs invert eq ne lt le gt ge add radd sub rsub mul rmul truediv rtruediv "
    "floordiv rfloordiv mod rmod divmod rdivmod pow rpow matmul rmatmul and rand or ror "
    "xor rxor lshift rlshift rshift rrshift getitem setitem contains"
).split()
_TRACER_METHODS = (
    "reshape transpose sum mean max min prod argmax argmin cumsum cumprod astype squeeze ravel "
    "flatten dot clip any all swapaxes round std var trace repeat diagonal conj conjugate "
    "sort argsort take nonzero"
).split()
_TRACER_PROPERTIES = ("T", "mT", "real", "imag")


def _forward_to_aval(name: str) -> Callable:
    """Tracer.__add__ is `self.aval._add(self, other)`: the aval says what `+` means."""

    def method(self, *args, **kwargs):
        aval_method = getattr(self.aval, name, None)
        if aval_method is None:
            raise TypeError(
                f"{type(self).__name__} does not support `{name.lstrip('_')}`: "
                f"{type(self.aval).__name__}.{name} is not installed (see array_methods.py)"
            )
        return aval_method(self, *args, **kwargs)

    method.__name__ = name
    return method


def _set_tracer_aval_forwarding(tracer: type) -> None:
    """Install `__add__`, ..., `sum`, ..., `T` on the tracer class, each forwarding to the aval."""
    for op in _TRACER_OPERATORS:
        setattr(tracer, f"__{op}__", _forward_to_aval(f"_{op}"))
    tracer.__round__ = _forward_to_aval("_operator_round")  # round(x), round(x, 1)
    for name in _TRACER_METHODS:
        setattr(tracer, name, _forward_to_aval(f"_{name}"))
    for name in _TRACER_PROPERTIES:  # x.T, x.real, x.imag
        setattr(tracer, name, property(_forward_to_aval(f"_{name}")))
    tracer.at = property(indexing.IndexUpdateHelper)  # x.at[idx].set(v): a scatter


def _through_ones(ufunc: Callable) -> Callable:
    """x.at[idx].divide(v), .power(v): x against ones that took v at idx by a scatter_mul
    (JAX: _IndexUpdateRef.divide and .power)."""
    def update(ref: indexing.IndexUpdateRef, values: Any, **kwargs: Any) -> Any:
        ones = indexing.IndexUpdateRef(lax_numpy.ones_like(ref.array), ref.index)
        return ufunc(ref.array, ones.mul(values, **kwargs))
    update.__name__ = ufunc.__name__
    return update


indexing.IndexUpdateRef.divide = _through_ones(ufuncs.divide)
indexing.IndexUpdateRef.power = _through_ones(ufuncs.power)
_set_shaped_array_attributes(core.ShapedArray)
_set_tracer_aval_forwarding(core.Tracer)
_set_tracer_aval_forwarding(Array)  # an eager Array's operators are a tracer's (JAX: the same)
