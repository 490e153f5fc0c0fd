"""The eager Array: a concrete value that knows its dtype and weak type, as JAX's arrays do.

JAX: `ArrayImpl` in jax/_src/array.py (over device buffers; ours holds a numpy array). Every
primitive applied outside a transformation returns one (core.EvalTrace makes them), and its
operators and methods are installed by numpy/array_methods.py exactly as a tracer's are: `x + y`
is `x.aval._add(x, y)`, so eager and traced code follow one set of promotion rules. The numpy
storage sits behind one seam, `_value` and `make_array`: stage 9 backs the same interface with
PJRT buffers.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any

import numpy as np

from . import dtypes
from .errors import check_bool_conversion, check_integer_conversion, check_scalar_conversion

if TYPE_CHECKING:  # annotations only: core.py imports this module
    from .core import ShapedArray


# --8<-- [start:array]
class Array:
    """A concrete array: its aval (shape, dtype, weak type) and the value it holds."""

    # JAX: ArrayImpl; `_value` is the host copy JAX fetches lazily (ours is the storage itself)
    __slots__ = ("aval", "_value")
    __array_priority__ = 100  # numpy defers `ndarray * array` to our __rmul__, as to JAX's

    def __init__(self, aval: ShapedArray, value: np.ndarray):
        self.aval = aval
        self._value = value

    dtype = property(lambda self: self.aval.dtype)
    shape = property(lambda self: self.aval.shape)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)
    weak_type = property(lambda self: self.aval.weak_type)
    itemsize = property(lambda self: self.aval.dtype.itemsize)
    nbytes = property(lambda self: self.aval.size * self.aval.dtype.itemsize)
    __hash__ = None  # __eq__ compares elementwise, as for numpy arrays

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        # the array's own read-only values unless a copy is asked for (np.array(x) asks, to
        # write to it) or a dtype needs one; copy=False with a new dtype: numpy's ValueError
        kwargs = {} if copy is None else {"copy": copy}
        return np.asarray(self._value, dtype=dtype, **kwargs)

    # Python asks for a plain value: numpy's checks of the shape, then the value itself.
    def __bool__(self) -> bool:
        check_bool_conversion(self)
        return bool(self._value)

    def __int__(self) -> int:
        check_scalar_conversion(self)
        return int(self._value)

    def __float__(self) -> float:
        check_scalar_conversion(self)
        return float(self._value)

    def __complex__(self) -> complex:
        check_scalar_conversion(self)
        return complex(self._value)

    def __index__(self) -> int:
        check_integer_conversion(self)
        return operator.index(self._value[()])

    def __len__(self) -> int:
        return self.aval._len(self)

    def __iter__(self):
        # row by row, each row an Array (lax/slicing.py installs aval._iter)
        return iter(self.aval._iter(self))

    def item(self, *args: Any) -> Any:
        return self._value.item(*args)

    def tolist(self) -> Any:
        return self._value.tolist()

    def copy(self) -> Array:
        return make_array(self._value.copy(), self.aval)

    def block_until_ready(self) -> Array:
        return self  # numpy computed it already

    def __reduce__(self) -> tuple:
        return make_array, (self._value, self.aval)

    # Printed as JAX prints: `Array([1., 2.], dtype=float32)`; str() is numpy's.
    def __repr__(self) -> str:
        return array_repr(self)

    def __str__(self) -> str:
        return str(self._value)

    def __format__(self, format_spec: str) -> str:
        return format(self._value if self.ndim else self._value[()], format_spec)
# --8<-- [end:array]


def make_array(value: Any, aval: ShapedArray) -> Array:
    """An Array holding `value` (converted to `aval`'s dtype). The one constructor: stage 9
    replaces it (and `_value`) to hold device buffers instead."""
    value = np.asarray(value, dtype=aval.dtype).view()
    value.flags.writeable = False  # an Array is immutable; a view leaves the caller's data be
    return Array(aval, value)


def to_array(value: Any, aval: ShapedArray) -> Any:
    """An impl's result as an Array of `aval` (a float0 value, which no Array holds, as is)."""
    if type(value) is Array and value.aval == aval:
        return value
    if aval.dtype not in dtypes.jax_dtypes:
        return value
    return make_array(value, aval)


def to_numpy(x: Any) -> np.ndarray:
    """What an impl computes on: the numpy value of an Array; a Python scalar or 64-bit numpy
    value as an array of the dtype JAX would give it."""
    if type(x) is Array:
        return x._value
    if type(x) is np.ndarray:  # the common case, kept cheap: eval_jaxpr runs it per operand
        dtype = dtypes.canonicalize_dtype(x.dtype)
        return x if dtype == x.dtype else x.astype(dtype)
    if type(x) in (bool, int, float, complex):
        return np.asarray(x, dtype=dtypes.python_scalar_dtype(type(x)))
    return np.asarray(x, dtype=dtypes.canonicalize_dtype(np.asarray(x).dtype))


def array_repr(x: Array) -> str:
    """`Array([1., 2.], dtype=float32)`, `Array(2., dtype=float32, weak_type=True)`."""
    # JAX: ArrayImpl.__repr__ (the same layout rules, numpy's line width)
    prefix = "Array("
    dtype_str = f"dtype={x.dtype.name}" + (", weak_type=True" if x.weak_type else "")
    line_width = np.get_printoptions()["linewidth"]
    if x.size == 0:
        s = f"[], shape={x.shape}"
    else:
        s = np.array2string(x._value, prefix=prefix, suffix=",", separator=", ",
                            max_line_width=line_width)
    last_line_len = len(s) - s.rfind("\n") + 1
    sep = " " * len(prefix) if last_line_len + len(dtype_str) + 2 > line_width else " "
    return f"{prefix}{s},{sep}{dtype_str})"
