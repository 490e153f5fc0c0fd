"""eval_shape: what a function would return, as shapes and dtypes (ShapeDtypeStructs), found by
tracing it on abstract values; nothing is computed.

JAX: jax/_src/api.py (`eval_shape`, `ShapeDtypeStruct`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from stages.s01_pytrees import tree_flatten, tree_unflatten

from . import linear_util as lu
from . import partial_eval as pe
from .api_util import debug_info, flatten_fun, shaped_abstractify
from .core import ShapedArray
from .dtypes import canonicalize_dtype


class ShapeDtypeStruct:
    """A shape and a dtype standing for an array that is never built (JAX: api.ShapeDtypeStruct)."""

    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape: Sequence[int], dtype: Any, weak_type: bool = False):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = bool(weak_type)

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape)))

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{weak})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ShapeDtypeStruct) and \
            (self.shape, self.dtype, self.weak_type) == (other.shape, other.dtype, other.weak_type)

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.weak_type))


def _abstract(x: Any) -> ShapedArray:
    if hasattr(x, "shape") and hasattr(x, "dtype") and not hasattr(x, "__array__"):
        # a ShapeDtypeStruct, or a look-alike; float64 stands for float32, as an array would
        return ShapedArray(x.shape, canonicalize_dtype(x.dtype), getattr(x, "weak_type", False))
    return shaped_abstractify(eval_shape, x, "")


def eval_shape(fun: Callable, *args: Any, **kwargs: Any) -> Any:
    """The shapes and dtypes `fun` would return, as ShapeDtypeStructs: traced, never run.

    Arguments may be arrays or ShapeDtypeStructs (anything with `.shape` and `.dtype`)."""
    args_flat, in_tree = tree_flatten((args, kwargs))
    avals = [_abstract(x) for x in args_flat]
    f = lu.wrap_init(fun, debug_info=debug_info("eval_shape", fun, args, kwargs))
    flat_fun, out_tree = flatten_fun(f, in_tree)
    closed = pe.trace_to_closed_jaxpr(flat_fun, avals)
    outs = [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type) for a in closed.out_avals]
    return tree_unflatten(out_tree(), outs)
