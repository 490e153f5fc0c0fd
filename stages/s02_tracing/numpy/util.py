"""NumPy-style dtype promotion and broadcasting, spelled in lax ops, for the numpy facade.

JAX: jax/_src/numpy/util.py (promote_dtypes, promote_shapes, promote_args) and the broadcasting
helpers of jax/_src/numpy/lax_numpy.py. lax itself never promotes: these functions insert the
`convert_element_type` and `broadcast_in_dim` equations a jaxpr shows before the op.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import core, dtypes, lax
from ..array import Array
from ..errors import canonicalize_shape

__all__ = ["broadcast_arrays", "broadcast_shapes", "broadcast_to"]

_SCALARS = (bool, int, float, complex)


def check_arraylike(fun_name: str, *args: Any) -> None:
    """Arrays, tracers and scalars only: a list would hide a silent conversion (as in JAX)."""
    for pos, arg in enumerate(args):
        if type(arg) is int:
            dtypes.check_python_int(arg)  # a weak int32 to be: refused if it does not fit
        elif not isinstance(arg, (core.Tracer, Array, np.ndarray, np.generic, *_SCALARS)) and \
                type(arg) not in core.pytype_aval_mappings:  # a later stage's array type
            raise TypeError(
                f"{fun_name} requires ndarray or scalar arguments, got {type(arg)} at "
                f"position {pos}."
            )


# --8<-- [start:promote]
def promote_dtypes(*args: Any) -> list[Any]:
    """Convert every argument to the joined dtype; a Python scalar stays weak (a literal)."""
    if len(args) < 2:
        return list(args)
    to_dtype, weak_type = dtypes.lattice_result_type(*args)
    return [lax.convert_element_type(x, to_dtype, weak_type) for x in args]


def _to_inexact(dtype: np.dtype) -> np.dtype:
    # ints and bools compute in the default float (float32); float16 and complex stay
    return dtype if dtypes.issubdtype(dtype, np.inexact) else np.dtype("float32")


def promote_dtypes_inexact(*args: Any) -> list[Any]:
    """As promote_dtypes, then ints and bools become float32 (for exp, divide, mean, ...)."""
    to_dtype, weak_type = dtypes.lattice_result_type(*args)
    return [lax.convert_element_type(x, _to_inexact(to_dtype), weak_type) for x in args]


def promote_dtypes_numeric(*args: Any) -> list[Any]:
    """As promote_dtypes, then bool becomes int32 (for floor_divide, remainder, power)."""
    to_dtype, weak_type = dtypes.lattice_result_type(*args)
    if to_dtype == np.bool_:
        to_dtype = np.dtype("int32")
    return [lax.convert_element_type(x, to_dtype, weak_type) for x in args]


def promote_shapes(fun_name: str, *args: Any) -> list[Any]:
    """Give lower-rank arguments leading size-1 axes; lax broadcasts size-1 axes and scalars."""
    if len(args) < 2:
        return list(args)
    shapes = [np.shape(x) for x in args]
    if all(len(s) == len(shapes[0]) for s in shapes[1:]):
        return list(args)
    if len({len(s) for s in shapes if s}) < 2:
        return list(args)  # rank-0 operands broadcast inside lax
    rank = len(broadcast_shapes(*shapes))
    return [_broadcast_to_rank(x, rank) for x in args]
# --8<-- [end:promote]


def _broadcast_to_rank(x: Any, rank: int) -> Any:
    ndim = np.ndim(x)
    if ndim == rank:
        return x
    return lax.broadcast(x, (1,) * (rank - ndim))


def promote_args(fun_name: str, *args: Any) -> list[Any]:
    """Dtypes, then ranks, as jnp.add and friends prepare their operands."""
    check_arraylike(fun_name, *args)
    return promote_shapes(fun_name, *promote_dtypes(*args))


def promote_args_inexact(fun_name: str, *args: Any) -> list[Any]:
    check_arraylike(fun_name, *args)
    return promote_shapes(fun_name, *promote_dtypes_inexact(*args))


def promote_args_numeric(fun_name: str, *args: Any) -> list[Any]:
    check_arraylike(fun_name, *args)
    return promote_shapes(fun_name, *promote_dtypes_numeric(*args))


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """NumPy's rule: align from the right; each size equal or 1."""
    rank = max((len(s) for s in shapes), default=0)
    padded = [(1,) * (rank - len(s)) + tuple(s) for s in shapes]
    out = []
    for sizes in zip(*padded, strict=False):
        not_one = {d for d in sizes if d != 1}
        if len(not_one) > 1:
            shown = [tuple(s) for s in shapes]
            raise ValueError(f"Incompatible shapes for broadcasting: shapes={shown}")
        out.append(not_one.pop() if not_one else 1)
    return tuple(out)


def broadcast_to(array: Any, shape: Sequence[int]) -> Any:
    """`array` broadcast to `shape` with one broadcast_in_dim (no eqn when already there)."""
    if not isinstance(shape, tuple) and np.ndim(shape) == 0:
        shape = (shape,)
    shape = canonicalize_shape(shape)  # a float or None among the sizes: JAX's TypeError
    arr_shape = tuple(np.shape(array))
    if arr_shape == shape:
        return array
    nlead = len(shape) - len(arr_shape)
    if nlead < 0:
        raise ValueError(f"Cannot broadcast to shape with fewer dimensions: {arr_shape=} {shape=}")
    if not all(a in (1, s) for a, s in zip(arr_shape, shape[nlead:], strict=False)):
        aval = core.get_aval(array)
        raise ValueError(f"Incompatible types for broadcasting: input type={aval} and requested "
                         f"type={core.ShapedArray(shape, aval.dtype)}")
    return lax.broadcast_in_dim(array, shape, tuple(range(nlead, len(shape))))


def broadcast_arrays(*args: Any) -> list[Any]:
    """Every argument broadcast to their common shape."""
    shapes = [np.shape(x) for x in args]
    if all(s == shapes[0] for s in shapes):
        return list(args)
    result_shape = broadcast_shapes(*shapes)
    return [broadcast_to(x, result_shape) for x in args]
