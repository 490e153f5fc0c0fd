"""Creating arrays and shapes (reshape, transpose, stack, ...).

JAX: jax/_src/numpy/lax_numpy.py and array_creation.py. Where we differ from jnp, the
docstring says so.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import core, dtypes, lax
from ..array import Array
from ..errors import canonicalize_shape
from ..lax.utils import canonicalize_axis
from .util import broadcast_to, check_arraylike, promote_dtypes

__all__ = [
    "arange", "array", "asarray", "astype", "bfloat16", "bool_", "complex64", "concatenate",
    "empty", "expand_dims", "float16", "float32", "full", "full_like", "int16", "int32",
    "int8", "ndim", "ones", "ones_like", "promote_types", "ravel", "reshape",
    "result_type", "shape", "size", "squeeze", "stack", "swapaxes", "transpose", "uint16",
    "uint32", "uint8", "zeros", "zeros_like",
]


class _ScalarMeta(type):
    """jnp.float32 and the others: a dtype wherever numpy takes one (they compare and hash as
    numpy's type, and carry `.dtype`), and a function that makes a 0-d array of it, traced
    under a transformation (JAX: numpy/scalar_types.py)."""

    dtype: np.dtype

    def __hash__(self) -> int:
        return hash(self.dtype.type)

    def __eq__(self, other: Any) -> bool:
        return self is other or self.dtype.type == other

    def __call__(self, x: Any) -> Any:  # jnp.float32(x) is asarray(x, float32)
        return asarray(x, dtype=self.dtype)

    def __instancecheck__(self, instance: Any) -> bool:
        return isinstance(instance, self.dtype.type)


def _make_scalar_type(np_type: type) -> _ScalarMeta:
    return _ScalarMeta(np_type.__name__, (object,), {"dtype": np.dtype(np_type),
                                                     "__module__": __name__})


bool_, int8, int16, int32, uint8, uint16, uint32, float16, float32, complex64 = map(
    _make_scalar_type, (np.bool_, np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32,
                        np.float16, np.float32, np.complex64))
bfloat16 = _make_scalar_type(dtypes.bfloat16.type)  # ml_dtypes' type: numpy has none
promote_types = dtypes.promote_types
result_type = dtypes.result_type
ndim, shape, size = np.ndim, np.shape, np.size

# ------------------------------------------------------------------ creating arrays


def _user_dtype(dtype: Any, fun_name: str) -> Any:
    """A dtype argument as JAX takes it: None stays None; a 64-bit one is narrowed, warning."""
    return None if dtype is None else dtypes.check_and_canonicalize_user_dtype(dtype, fun_name)


def asarray(a: Any, dtype: Any = None) -> Any:
    """An array: Arrays and tracers pass through (converted if `dtype` says so); Python values,
    numpy values and lists become Arrays of the canonical dtype, a Python scalar weakly typed."""
    dtype = _user_dtype(dtype, "asarray")
    if isinstance(a, (core.Tracer, Array)):
        return a if dtype is None else lax.convert_element_type(a, dtype)
    if type(a) in (int, float, complex) and dtype is None:
        if type(a) is int:
            dtypes.check_python_int(a)
        return lax.convert_element_type(a, None, weak_type=True)  # stays weak, as in JAX
    leaves = _leaves(a)
    if any(x is None for x in leaves):
        raise ValueError("None is not a valid value for jnp.array")
    if dtype is None and isinstance(a, np.ndarray):
        return lax.convert_element_type(a, dtypes.dtype(a))  # the same array, one constant
    if dtype is None:  # the leaves' joined dtype: a list of Python ints is int32
        dtype = dtypes.lattice_result_type(*leaves)[0] if leaves else np.dtype(float32)
    if any(isinstance(x, (core.Tracer, Array)) for x in leaves):
        # JAX: each element converted to `dtype` (so made strong), then concatenated
        parts = [lax.expand_dims(asarray(x, dtype), (0,)) for x in a]
        while len(parts) > 16:  # a tree of concatenations, 16 at a time
            parts = [lax.concatenate(parts[i : i + 16], 0) for i in range(0, len(parts), 16)]
        return lax.concatenate(parts, 0)
    # numpy converts straight to the canonical dtype, refusing Python ints that do not fit
    arr = np.asarray(a, dtypes.canonicalize_dtype(dtype))
    # traced, a numpy value stays numpy (the trace makes it a constant); eager, an Array
    return lax.convert_element_type(arr, dtype)


def _leaves(a: Any) -> list[Any]:
    if isinstance(a, (list, tuple)):
        return [y for x in a for y in _leaves(x)]
    return [np.asarray(a) if isinstance(a, str) else a]  # a str is a dtype name to np.dtype


def array(object: Any, dtype: Any = None, copy: bool = True, order: str | None = "K",
          ndmin: int = 0) -> Any:
    """As asarray, with leading axes of size 1 added up to `ndmin`; with `copy`, a numpy value
    or an eager Array is copied (a later stage's device array can be deleted or donated, its
    copy not with it). A tracer is not: JAX stages a `copy` equation, which stage 2 lacks."""
    if order is not None and order != "K":
        raise NotImplementedError("Only implemented for order='K'")
    out = asarray(object, _user_dtype(dtype, "array"))
    if ndmin > np.ndim(out):
        out = lax.expand_dims(out, tuple(range(ndmin - np.ndim(out))))
    if copy and (isinstance(out, np.ndarray) or out is object and isinstance(out, Array)):
        return out.copy()
    return out


def _shape_tuple(shape: Any) -> tuple[int, ...]:
    return canonicalize_shape((shape,) if np.ndim(shape) == 0 else shape)


def zeros(shape: Any, dtype: Any = None) -> Any:
    """Zeros of `shape`; float32 unless `dtype` says otherwise."""
    dtype = _user_dtype(float32 if dtype is None else dtype, "zeros")
    return lax.full(_shape_tuple(shape), 0, dtype)


def empty(shape: Any, dtype: Any = None) -> Any:
    """Zeros, as JAX's: XLA has no uninitialized memory to hand out."""
    dtype = _user_dtype(float32 if dtype is None else dtype, "empty")
    return lax.full(_shape_tuple(shape), 0, dtype)


def ones(shape: Any, dtype: Any = None) -> Any:
    """Ones of `shape`; float32 unless `dtype` says otherwise."""
    dtype = _user_dtype(float32 if dtype is None else dtype, "ones")
    return lax.full(_shape_tuple(shape), 1, dtype)


def full(shape: Any, fill_value: Any, dtype: Any = None) -> Any:
    """`fill_value` broadcast to `shape`."""
    check_arraylike("full", fill_value)
    dtype = _user_dtype(dtype, "full")
    if np.ndim(fill_value) == 0:
        return lax.full(_shape_tuple(shape), fill_value, dtype)
    return broadcast_to(asarray(fill_value, dtype), _shape_tuple(shape))


def _check_like(name: str, a: Any, *fill_value: Any) -> None:
    # as JAX: anything with a shape and a dtype will do as `a` (duck typing)
    duck = hasattr(a, "shape") and hasattr(a, "dtype")
    check_arraylike(name, 0 if duck else a, *fill_value)


def zeros_like(a: Any, dtype: Any = None, shape: Any = None) -> Any:
    _check_like("zeros_like", a)
    return lax.full_like(a, 0, _user_dtype(dtype, "zeros_like"), shape)


def ones_like(a: Any, dtype: Any = None, shape: Any = None) -> Any:
    _check_like("ones_like", a)
    return lax.full_like(a, 1, _user_dtype(dtype, "ones_like"), shape)


def full_like(a: Any, fill_value: Any, dtype: Any = None, shape: Any = None) -> Any:
    """`fill_value` broadcast to `shape` (`a`'s by default), in `a`'s dtype unless given."""
    _check_like("full_like", a, fill_value)
    dtype = _user_dtype(dtype, "full_like")
    if np.ndim(fill_value) == 0:
        return lax.full_like(a, fill_value, dtype, shape)
    dtype = dtypes.dtype(a) if dtype is None else dtype
    return broadcast_to(asarray(fill_value, dtype), np.shape(a) if shape is None else shape)


def arange(start: Any, stop: Any = None, step: Any = None, dtype: Any = None) -> Any:
    """Evenly spaced values: an `iota`, then `mul` by step and `add` of start when given."""
    context = "It arose in the jnp.arange arguments"
    start, stop, step = (core.concrete_or_error(None, v, context) for v in (start, stop, step))
    if dtype is None:
        dtype = dtypes.result_type(start, *(v for v in (stop, step) if v is not None))
        dtype = dtypes.canonicalize_dtype(dtype)
    else:
        dtype = _user_dtype(dtype, "arange")
    if any(np.iscomplexobj(v) for v in (start, stop, step)):
        raise ValueError("Passing complex start/stop/step to jnp.arange is no longer supported"
                         " starting in JAX v0.10.0.")
    if stop is None:
        start, stop = 0, start
    if step is not None:  # a float narrower than 32 bits is stepped in float32, then rounded
        work = np.dtype(np.float32) if dtypes.issubdtype(dtype, np.floating) and \
            dtype.itemsize < 4 else dtype
        size = builtins.max(0, int(np.ceil((stop - start) / step)))
        iota = lax.broadcasted_iota(work, (size,), 0)
        scaled = lax.mul(lax.convert_element_type(step, work), iota)
        return lax.convert_element_type(lax.add(lax.convert_element_type(start, work), scaled),
                                        dtype)
    size = builtins.max(0, int(np.ceil(stop - start)))
    iota = lax.broadcasted_iota(dtype, (size,), 0)
    return iota if start == 0 else lax.add(lax.convert_element_type(start, dtype), iota)


# ------------------------------------------------------------------ shapes


def reshape(a: Any, shape: Any, order: str = "C", *, copy: Any = None) -> Any:
    """Row-major reshape (order="F": column-major); one size may be -1 (inferred). `copy`
    changes nothing, as in JAX: an array is immutable."""
    check_arraylike("reshape", a)
    new = list(_shape_tuple(shape))
    total = math.prod(np.shape(a))
    unknown = [i for i, d in enumerate(new) if d == -1]
    if len(unknown) > 1:
        raise TypeError(f"can only specify one unknown axis size with a `-1` value, got {shape}")
    if unknown:
        known = math.prod(d for d in new if d != -1)
        if known == 0 or total % known:
            raise TypeError(
                f"cannot reshape array of shape {np.shape(a)} (size {total}) into shape "
                f"{shape} because the product of specified axis sizes ({known}) does not "
                f"evenly divide {total}"
            )
        new[unknown[0]] = total // known
    elif math.prod(new) != total:
        raise TypeError(
            f"cannot reshape array of shape {np.shape(a)} (size {total}) into shape "
            f"{shape} (size {math.prod(new)})"
        )
    if order == "C":
        return lax.reshape(a, tuple(new))
    if order == "F":  # column-major: read with the axes reversed, write them reversed
        reversed_axes = tuple(range(np.ndim(a)))[::-1]
        return transpose(lax.reshape(a, tuple(new[::-1]), reversed_axes))
    if order == "A":
        raise NotImplementedError("np.reshape order=A is not implemented.")
    raise ValueError(f"Unexpected value for 'order' argument: {order}.")


def ravel(a: Any, order: str = "C") -> Any:
    if order == "K":
        raise NotImplementedError("Ravel not implemented for order='K'.")
    return reshape(a, (np.size(a),), order)


def transpose(a: Any, axes: Sequence[int] | None = None) -> Any:
    """Permute axes (reverse them by default)."""
    check_arraylike("transpose", a)
    ndim = np.ndim(a)
    perm = tuple(range(ndim))[::-1] if axes is None else axes
    return lax.transpose(a, tuple(canonicalize_axis(d, ndim) for d in perm))


def swapaxes(a: Any, axis1: int, axis2: int) -> Any:
    perm = list(range(np.ndim(a)))
    i, j = canonicalize_axis(axis1, len(perm)), canonicalize_axis(axis2, len(perm))
    perm[i], perm[j] = perm[j], perm[i]
    return lax.transpose(a, perm)


def expand_dims(a: Any, axis: int | Sequence[int]) -> Any:
    check_arraylike("expand_dims", a)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    return lax.expand_dims(a, axes)


def squeeze(a: Any, axis: int | Sequence[int] | None = None) -> Any:
    """Drop size-1 axes (all of them by default)."""
    check_arraylike("squeeze", a)
    if axis is None:
        axes = tuple(i for i, d in enumerate(np.shape(a)) if d == 1)
    else:
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
    return lax.squeeze(a, axes)


def concatenate(arrays: Sequence[Any], axis: int | None = 0, dtype: Any = None) -> Any:
    """Join arrays along an existing axis, after promoting them to one dtype (or to `dtype`)."""
    if not len(arrays):
        raise ValueError("Need at least one array to concatenate.")
    check_arraylike("concatenate", *arrays)
    if axis is None:  # raveled first, then promoted, as in JAX: any ranks will do
        return concatenate([ravel(x) for x in arrays], axis=0, dtype=dtype)
    if np.ndim(arrays[0]) == 0:  # other ranks that differ: lax.concatenate's error
        raise ValueError("Zero-dimensional arrays cannot be concatenated.")
    axis = canonicalize_axis(axis, np.ndim(arrays[0]))
    return lax.concatenate(_joined(arrays, dtype), axis)


def _joined(arrays: Sequence[Any], dtype: Any) -> list[Any]:
    """The arrays in one dtype: promoted together, or each converted to `dtype`."""
    return promote_dtypes(*arrays) if dtype is None else [asarray(x, dtype) for x in arrays]


def stack(arrays: Sequence[Any], axis: int = 0, out: None = None, dtype: Any = None) -> Any:
    """Join arrays along a new axis: expand_dims then concatenate.

    JAX 0.10.2 has a `stack` primitive for this; we keep to the primitives the stage builds,
    which is how JAX wrote jnp.stack before that primitive existed.
    """
    if not len(arrays):
        raise ValueError("Need at least one array to stack.")
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.stack is not supported.")
    check_arraylike("stack", *arrays)
    shapes = [np.shape(x) for x in arrays]
    shown = ", ".join(map(str, shapes))
    if len({len(s) for s in shapes}) != 1:
        raise ValueError(f"Cannot stack arrays with different numbers of dimensions: got {shown}.")
    if len(set(shapes)) != 1:
        raise ValueError(f"All input arrays must have the same shape. Got {shown}.")
    axis = canonicalize_axis(axis, np.ndim(arrays[0]) + 1)
    return lax.concatenate([lax.expand_dims(x, (axis,)) for x in _joined(arrays, dtype)], axis)


def astype(x: Any, dtype: Any, /, *, copy: bool = False, device: Any = None) -> Any:
    """x converted to `dtype` (no equation when it already is); with `copy`, an eager Array
    already of that dtype is copied, as `array` copies it."""
    if device is not None:
        raise NotImplementedError("astype(device=...): stage 2 has no devices (stage 9's "
                                  "device_put places an array)")
    dtype = dtypes.check_and_canonicalize_user_dtype(dtype, "astype")
    if dtype == np.bool_ and np.iscomplexobj(x):
        x = x != 0  # lax's conversion would read only the real part (as JAX's astype says)
    out = lax.convert_element_type(x, dtype)
    return out.copy() if copy and out is x and isinstance(out, Array) else out
