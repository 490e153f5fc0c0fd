"""make_jaxpr: a function and example arguments in, its ClosedJaxpr out.

JAX: jax/_src/api.py (`make_jaxpr`, which today goes through `jit(fun).trace(...)`; ours calls
the tracing machinery directly, so our tracers say "for make_jaxpr" where JAX's say "for jit").
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from stages.s01_pytrees import tree_unflatten

from . import partial_eval as pe
from .api_util import check_static_args_hashable, debug_info
from .axis_env import extend_axis_env_nd
from .eval_shape import ShapeDtypeStruct
from .jaxpr import ClosedJaxpr


def _normalize_argnums(static_argnums: int | Sequence[int], nargs: int, name: str
                       ) -> tuple[int, ...]:
    argnums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    out = []
    for i in argnums:
        if not -nargs <= i < nargs:
            raise ValueError(f"{name} has static_argnums={argnums}, but only accepts {nargs} "
                             "positional arguments.")
        out.append(i % nargs)
    return tuple(sorted(set(out)))


# --8<-- [start:make_jaxpr]
def make_jaxpr(fun: Callable, static_argnums: int | Sequence[int] = (),
               axis_env: Sequence[tuple[Any, int]] | None = None, return_shape: bool = False
               ) -> Callable[..., Any]:
    """A function that traces `fun` on example arguments and returns its ClosedJaxpr.

    Arguments may be pytrees; each leaf becomes one invar. Arguments in `static_argnums` are
    not traced: they reach `fun` as the Python values they are. `axis_env`: (name, size)
    pairs bound while tracing, for collectives over named axes (stage 5). With
    `return_shape`, also the output's pytree of ShapeDtypeStructs.
    """

    @functools.wraps(fun)
    def make_jaxpr_f(*args: Any, **kwargs: Any) -> ClosedJaxpr | tuple[ClosedJaxpr, Any]:
        static = _normalize_argnums(static_argnums, len(args), getattr(fun, "__name__", "fun"))
        check_static_args_hashable(args, static)
        dbg = debug_info("make_jaxpr", fun, args, kwargs, static)
        with extend_axis_env_nd(axis_env or ()):
            closed_jaxpr, _args_flat, out_tree = pe.trace_to_jaxpr(fun, args, kwargs, dbg,
                                                                   static)
        if return_shape:
            shapes = [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
                      for a in closed_jaxpr.out_avals]
            return closed_jaxpr, tree_unflatten(out_tree, shapes)
        return closed_jaxpr

    make_jaxpr_f.__name__ = f"make_jaxpr({getattr(fun, '__name__', 'fun')})"
    make_jaxpr_f.__qualname__ = f"make_jaxpr({getattr(fun, '__qualname__', 'fun')})"
    return make_jaxpr_f
# --8<-- [end:make_jaxpr]
