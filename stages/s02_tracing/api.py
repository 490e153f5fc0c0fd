"""make_jaxpr: a function and example arguments in, its ClosedJaxpr out; eval_shape: its output
shapes and dtypes, as ShapeDtypeStructs.

JAX: jax/_src/api.py (`make_jaxpr`, which today goes through `jit(fun).trace(...)`; ours calls
the tracing machinery directly, so our tracers say "for make_jaxpr" where JAX's say "for jit").
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from stages.s01_pytrees import tree_flatten, tree_unflatten

from . import linear_util as lu
from . import partial_eval as pe
from .api_util import check_static_args_hashable, debug_info, flatten_fun, shaped_abstractify
from .axis_env import extend_axis_env_nd
from .core import ShapedArray
from .jaxpr import ClosedJaxpr


def _normalize_argnums(static_argnums: int | Sequence[int], nargs: int, name: str
                       ) -> tuple[int, ...]:
    argnums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    out = []
    for i in argnums:
        if not -nargs <= i < nargs:
            raise ValueError(
                f"{name} has static_argnums={argnums}, but only accepts {nargs} positional "
                "arguments."
            )
        out.append(i % nargs)
    return tuple(sorted(set(out)))


# --8<-- [start:make_jaxpr]
def make_jaxpr(fun: Callable, static_argnums: int | Sequence[int] = (),
               axis_env: Sequence[tuple[Any, int]] | None = None
               ) -> Callable[..., ClosedJaxpr]:
    """A function that traces `fun` on example arguments and returns its ClosedJaxpr.

    Arguments may be pytrees; each leaf becomes one invar. Arguments in `static_argnums` are
    not traced: they reach `fun` as the Python values they are. `axis_env`: (name, size)
    pairs bound while tracing, for collectives over named axes (stage 5).
    """

    @functools.wraps(fun)
    def make_jaxpr_f(*args: Any, **kwargs: Any) -> ClosedJaxpr:
        static = _normalize_argnums(static_argnums, len(args), getattr(fun, "__name__", "fun"))
        check_static_args_hashable(args, static)
        dbg = debug_info("make_jaxpr", fun, args, kwargs, static)
        # JAX reads the output treedef for make_jaxpr(..., return_shape=True), which ours lacks
        with extend_axis_env_nd(axis_env or ()):
            closed_jaxpr, _args_flat, _out_tree = pe.trace_to_jaxpr(fun, args, kwargs, dbg,
                                                                    static)
        return closed_jaxpr

    make_jaxpr_f.__name__ = f"make_jaxpr({getattr(fun, '__name__', 'fun')})"
    make_jaxpr_f.__qualname__ = f"make_jaxpr({getattr(fun, '__qualname__', 'fun')})"
    return make_jaxpr_f
# --8<-- [end:make_jaxpr]


# --------------------------------------------------------------------- eval_shape


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
    if isinstance(x, ShapeDtypeStruct):
        return ShapedArray(x.shape, x.dtype, x.weak_type)
    if hasattr(x, "shape") and hasattr(x, "dtype") and not hasattr(x, "__array__"):
        return ShapedArray(x.shape, x.dtype, getattr(x, "weak_type", False))
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
