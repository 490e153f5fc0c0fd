"""A custom_jvp/custom_vjp call's arguments: keywords bound to positions, the
non-differentiable ones (`nondiff_argnums`/`nondiff_argnames`) split off, tracers among them
made constants (custom_jvp) or refused (custom_vjp).

JAX: jax/_src/custom_derivatives.py (`custom_jvp.__call__`, `custom_vjp.__call__`,
`_check_for_tracers`, `_stop_gradient`) and api_util.py (`resolve_kwargs`, `argnums_partial`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

from stages.s01_pytrees import tree_flatten, tree_map
from stages.s02_tracing import core
from stages.s02_tracing.api_util import fun_name, fun_signature, infer_argnums_and_argnames
from stages.s02_tracing.errors import UnexpectedTracerError

from .ad_util import stop_gradient_p


def resolve_kwargs(kind: str, fun: Callable, args: tuple, kwargs: dict) -> tuple:
    """The arguments bound to fun's signature, keywords moved into their positions (the call
    primitives take positions); JAX's message when they do not bind."""
    # JAX: api_util.resolve_kwargs and its caller in custom_jvp/custom_vjp.__call__. A partial's
    # signature is opaque (*args, **kwargs), so a keyword passed to one has no position either
    opaque = isinstance(fun, functools.partial)
    try:
        bound = inspect.signature(_opaque if opaque else fun).bind(*args, **kwargs)
        bound.apply_defaults()
        passed = [k for k in bound.kwargs if k in kwargs]  # keyword-only, or caught by **kwargs
        if passed:
            raise TypeError("The following keyword arguments could not be resolved to "
                            f"positions: {', '.join(passed)}")
    except ValueError:  # no signature to read (a builtin): positions are positions
        return args
    except TypeError as err:
        raise TypeError(f"The input arguments to the {kind}-decorated function "
                        f"{fun_name(fun)} could not be resolved to positional-only arguments. "
                        f"Binding failed with the error:\n{err}") from err
    return bound.args


def _opaque(*args: Any, **kwargs: Any) -> None:
    """The signature JAX gives a functools.partial."""


def split_nondiff(fun: Callable, nondiff_argnums: tuple[int, ...], args: tuple
                  ) -> tuple[Callable, list[Any], tuple]:
    """fun of the differentiable arguments only, the static ones, and the dynamic ones."""
    static = [args[i] for i in nondiff_argnums]
    dyn = tuple(a for i, a in enumerate(args) if i not in nondiff_argnums)

    def fun_of_dyn(*dyn_args: Any) -> Any:
        it_dyn, it_static = iter(dyn_args), iter(static)
        full = [next(it_static) if i in nondiff_argnums else next(it_dyn)
                for i in range(len(args))]
        return fun(*full)

    functools.update_wrapper(fun_of_dyn, fun)
    return fun_of_dyn, static, dyn


def nondiff_argnums_of(fun: Callable, argnums: Sequence[int], argnames: Sequence[str]
                       ) -> tuple[int, ...]:
    """The positions of the non-differentiable arguments, named by number or by name."""
    names_at = infer_argnums_and_argnames(fun_signature(fun), None, argnames)[0]
    return tuple(sorted({*argnums, *(names_at if argnames else ())}))


# a tracer given as a non-differentiable argument to a custom_jvp is a constant of its rule
stop_gradient_tracers = functools.partial(
    tree_map, lambda x: stop_gradient_p.bind(x) if isinstance(x, core.Tracer) else x)


def check_for_tracers(x: Any) -> None:
    """custom_vjp's bwd gets its nondiff arguments outside any trace: none may be a tracer."""
    if any(isinstance(leaf, core.Tracer) for leaf in tree_flatten(x)[0]):
        raise UnexpectedTracerError(
            "Found a JAX Tracer object passed as an argument to a custom_vjp function in a "
            "position indicated by nondiff_argnums as non-differentiable. Tracers cannot be "
            "passed as non-differentiable arguments to custom_vjp functions; instead, "
            "nondiff_argnums should only be used for arguments that can't be or contain JAX "
            "tracers, e.g. function-valued arguments. In particular, array-valued arguments "
            "should typically not be indicated as nondiff_argnums.")
