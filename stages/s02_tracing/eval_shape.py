"""eval_shape: what a function would return, as shapes and dtypes (ShapeDtypeStructs), found by
tracing it on abstract values; nothing is computed.

JAX: jax/_src/api.py (`eval_shape`, `ShapeDtypeStruct`).
"""

from __future__ import annotations

import math
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
    """A shape and a dtype standing for an array that is never built (JAX: api.ShapeDtypeStruct).
    Immutable, as JAX's: it is hashed by its fields, so a field changed after would lose it in
    every cache keyed on it."""

    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape: Sequence[int], dtype: Any, *, sharding: Any = None,
                 weak_type: bool = False):
        if dtype is None:
            raise ValueError("ShapeDtypeStruct: dtype must be specified.")
        if sharding is not None:  # JAX keeps it for lowering; nothing before stage 11 places
            raise NotImplementedError(
                f"ShapeDtypeStruct(sharding={sharding!r}): this course's ShapeDtypeStruct holds "
                "no sharding; give jit in_shardings instead")
        object.__setattr__(self, "shape", tuple(shape))
        object.__setattr__(self, "dtype", np.dtype(dtype))
        object.__setattr__(self, "weak_type", weak_type)

    def __setattr__(self, name: str, value: Any) -> None:
        if getattr(self, name) == value:  # JAX allows an equal value (two threads racing)
            return
        raise RuntimeError(f"Cannot reassign attributes ({name}) of immutable ShapeDtypeStruct"
                           " objects")

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))
    sharding = property(lambda self: None)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")  # numpy's words, as JAX's
        return self.shape[0]

    def __repr__(self) -> str:
        weak = f", weak_type={self.weak_type}" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{weak})"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ShapeDtypeStruct) and \
            (self.shape, self.dtype, self.weak_type) == (other.shape, other.dtype, other.weak_type)

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.weak_type))

    def update(self, **kwargs: Any) -> ShapeDtypeStruct:
        """A copy with some fields replaced."""
        fields = dict(shape=self.shape, dtype=self.dtype, weak_type=self.weak_type)
        return ShapeDtypeStruct(**{**fields, **kwargs})


# A later stage's callable that traces itself answers eval_shape its own way: stage 7's jit
# traces with its static arguments and through its trace cache (JAX: `fun.trace(...).out_info`
# for a PjitFunction). Keyed by the callable's type.
eval_shape_rules: dict[type, Callable[..., Any]] = {}


def _abstract(fun: Callable, x: Any, arg_name: str) -> ShapedArray:
    if hasattr(x, "shape") and hasattr(x, "dtype") and not hasattr(x, "__array__"):
        # a ShapeDtypeStruct, or a look-alike; float64 stands for float32, as an array would
        return ShapedArray(x.shape, canonicalize_dtype(x.dtype), getattr(x, "weak_type", False))
    return shaped_abstractify(fun, x, arg_name)


def eval_shape(fun: Callable, *args: Any, **kwargs: Any) -> Any:
    """The shapes and dtypes `fun` would return, as ShapeDtypeStructs: traced, never run.

    Arguments may be arrays or ShapeDtypeStructs (anything with `.shape` and `.dtype`). JAX
    traces `jit(fun)`, so its errors speak of jit; so do ours."""
    rule = eval_shape_rules.get(type(fun))
    if rule is not None:
        return rule(fun, *args, **kwargs)
    args_flat, in_tree = tree_flatten((args, kwargs))
    dbg = debug_info("jit", fun, args, kwargs)
    names = dbg.arg_names if len(dbg.arg_names) == len(args_flat) else ("",) * len(args_flat)
    avals = [_abstract(fun, x, name) for x, name in zip(args_flat, names, strict=True)]
    flat_fun, out_tree = flatten_fun(lu.wrap_init(fun, debug_info=dbg), in_tree)
    closed = pe.trace_to_closed_jaxpr(flat_fun, avals)
    outs = [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) for a in closed.out_avals]
    return tree_unflatten(out_tree(), outs)
