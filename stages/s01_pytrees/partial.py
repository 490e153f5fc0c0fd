"""Partial: a functools.partial that is a pytree, what a transformation can return.

JAX: tree_util.Partial (what linearize and linear_transpose return). Its arguments are the
children and its function is the aux data, so two Partials of one function with different arrays
share a treedef.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .registration import register_pytree_node


class _HashableCallableShim:
    """A partial held as a Partial's function, out of functools.partial's sight: given a partial,
    functools.partial would merge the two argument lists, and the inner arguments would become
    leaves (JAX: the same shim)."""

    def __init__(self, fun: Callable):
        self.fun = fun

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fun(*args, **kwargs)

    def __hash__(self) -> int:
        return hash(self.fun)

    def __eq__(self, other: object) -> bool:
        return self.fun == (other.fun if isinstance(other, _HashableCallableShim) else other)

    def __repr__(self) -> str:
        return f"_HashableCallableShim({self.fun!r})"


class Partial(functools.partial):
    """A functools.partial that is a pytree: its arguments are the children, the function
    is the aux data; a Partial of a partial keeps the inner one whole, as its function."""

    def __new__(cls, func: Callable, *args: Any, **kwargs: Any) -> Partial:
        if not isinstance(func, functools.partial):
            return super().__new__(cls, func, *args, **kwargs)
        shim = _HashableCallableShim(func)
        out = super().__new__(cls, shim, *args, **kwargs)
        # Only now does the shim show the inner partial's parts, as JAX's does.
        shim.func, shim.args, shim.keywords = func.func, func.args, func.keywords
        return out


register_pytree_node(
    Partial,
    lambda partial_: ((partial_.args, partial_.keywords), partial_.func),
    lambda func, xs: Partial(func, *xs[0], **xs[1]),
)
