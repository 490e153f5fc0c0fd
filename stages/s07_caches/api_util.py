"""What jit needs from its arguments: static ones boxed, donated ones marked, the rest abstracted.

JAX: jax/_src/api_util.py (`resolve_argnums`, `donation_vector`, `fun_name`) and
tree_util.py's `Static`. A static argument is part of the treedef of the arguments (a `Static`
node with the value as its metadata), so a new static value is a new tree, hence a new trace,
and the tracing-cache-miss explanation reports it as a pytree difference, as JAX's does.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import traceback
import weakref
from collections.abc import Callable, Collection, Sequence
from typing import Any

from stages.s01_pytrees import (
    PyTreeDef,
    default_registry,
    register_static,
    tree_flatten,
    tree_structure,
)
from stages.s02_tracing import core
from stages.s02_tracing.api_util import (  # noqa: F401  (fun_name, fun_signature: jit's)
    check_static_args_hashable,
    fun_name,
    fun_signature,
    infer_argnums_and_argnames,
    shaped_abstractify,
)
from stages.s02_tracing.dtypes import canonicalize_dtype
from stages.s02_tracing.eval_shape import ShapeDtypeStruct


@register_static
@dataclasses.dataclass(frozen=True)
class Static:
    """A static argument inside the argument tree: equal only to the same type and value."""

    val: Any
    # hashed once, when a call boxes it: a value mutated after the call cannot change the
    # hash of a cache key already stored (which would corrupt the cache's table)
    _hash: int = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash(self.val))

    def __eq__(self, other: object) -> bool:
        if type(other) is not Static or type(self.val) is not type(other.val):
            return False
        if self.val is other.val:  # identity first, as a tuple compares: a NaN equals itself
            return True
        try:
            return bool(self.val == other.val)
        except Exception as e:
            raise ValueError(
                "static arguments should be comparable using __eq__.The following error was "
                f"raised when comparing two objects of types {type(self.val)} and "
                f"{type(other.val)}. The error was:\n{_format_error(e)}") from e

    def __hash__(self) -> int:
        return self._hash


def _format_error(e: Exception) -> str:
    """`e` as JAX's C++ prints it: the frames it came through past `Static.__eq__`, without
    their source lines (no header when there are none), then the exception itself."""
    frames = traceback.extract_tb(e.__traceback__.tb_next if e.__traceback__ else None)
    lines = [f'  File "{f.filename}", line {f.lineno}, in {f.name}' for f in frames]
    head = ["Traceback (most recent call last):", *lines] if lines else []
    return "\n".join([*head, *traceback.format_exception_only(e)]).rstrip()


_P = inspect.Parameter


def _validate_argnums(sig: inspect.Signature, argnums: tuple[int, ...], what: str) -> None:
    """Each number names a positional parameter, unless the function takes *args."""
    kinds = [p.kind for p in sig.parameters.values()]
    if _P.VAR_POSITIONAL in kinds:
        return
    n = sum(k in (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD) for k in kinds)
    if argnums and (-min(argnums) > n or max(argnums) >= n):
        raise ValueError(f"Jitted function has {what}={argnums}, "
                         f"but only accepts {n} positional arguments.")


def _validate_argnames(sig: inspect.Signature, argnames: tuple[str, ...], what: str) -> None:
    """Each name is a parameter that can be passed by keyword, or the function takes **kw."""
    params = sig.parameters
    if bad := {n for n in argnames
               if n in params and params[n].kind in (_P.POSITIONAL_ONLY, _P.VAR_POSITIONAL)}:
        raise ValueError(f"Jitted function has invalid argnames {bad} in {what}. These are "
                         "positional-only")
    if any(p.kind is _P.VAR_KEYWORD for p in params.values()):
        return
    if bad := set(argnames) - {n for n, p in params.items()
                               if p.kind in (_P.POSITIONAL_OR_KEYWORD, _P.KEYWORD_ONLY)}:
        raise ValueError(f"Jitted function has invalid argnames {bad} in {what}. Function "
                         "does not take these args.")


def resolve_argnums(fun: Callable, sig: inspect.Signature | None, donate_argnums: Any,
                    donate_argnames: Any, static_argnums: Any, static_argnames: Any
                    ) -> tuple[tuple[int, ...], tuple[str, ...], tuple[int, ...], tuple[str, ...]]:
    """(donate_argnums, donate_argnames, static_argnums, static_argnames), each inferred from
    the other through the signature and checked against it, as JAX resolves them once, when
    jit is called (a function without a signature is not checked)."""
    if sig is None and donate_argnames is not None:
        raise ValueError(f"Getting the signature of function {fun} failed. Pass donate_argnums "
                         "instead of donate_argnames.")
    static_argnums, static_argnames = infer_argnums_and_argnames(sig, static_argnums,
                                                                 static_argnames)
    donate_argnums, donate_argnames = infer_argnums_and_argnames(sig, donate_argnums,
                                                                 donate_argnames)
    if sig is not None:
        _validate_argnums(sig, static_argnums, "static_argnums")
        _validate_argnames(sig, static_argnames, "static_argnames")
        _validate_argnums(sig, donate_argnums, "donate_argnums")
        _validate_argnames(sig, donate_argnames, "donate_argnames")
    if set(static_argnames) & set(donate_argnames):
        raise ValueError(f"static_argnames and donate_argnames cannot intersect. Argument names "
                         f"{set(static_argnames) & set(donate_argnames)} appear in both "
                         "static_argnames and donate_argnames")
    if set(static_argnums) & set(donate_argnums):
        raise ValueError(f"`static_argnums` {sorted(set(static_argnums))} and "
                         f"`donate_argnums` {sorted(set(donate_argnums))} cannot intersect.")
    return donate_argnums, donate_argnames, static_argnums, static_argnames


def check_weakly_keyable(fun: Callable) -> None:
    """jit's caches key on the function weakly: one that cannot be hashed or weakly referenced
    is refused with Python's TypeError, as JAX's weakref_lru_cache refuses it."""
    hash(fun)
    weakref.ref(fun)


def shares_cpp_cache(a: Any, b: Any) -> bool:
    """Whether two jits of one function share JAX's C++ cache (`_cache_size`, `clear_cache`):
    the same donation and compiler options (JitGlobalCppCacheKeys); statics, `keep_unused` and
    `inline` are not in that key."""
    return (a.donate_argnums, a.donate_argnames, a.compiler_options_kvs) == \
        (b.donate_argnums, b.donate_argnames, b.compiler_options_kvs)


def donation_vector(donate_argnums: Sequence[int], donate_argnames: Sequence[str],
                    args: Sequence[Any], kwargs: dict[str, Any], num_leaves: Callable[[Any], int]
                    ) -> tuple[bool, ...]:
    """One bool per leaf of the dynamic arguments (positional, then kwargs by sorted name)."""
    res: list[bool] = []
    for i, arg in enumerate(args):
        if not isinstance(arg, Static):
            res.extend([i in donate_argnums] * num_leaves(arg))
    for name in sorted(kwargs):
        if not isinstance(kwargs[name], Static):
            res.extend([name in donate_argnames] * num_leaves(kwargs[name]))
    return tuple(res)


def static_entries(args: tuple, kwargs: dict, static_nums: Sequence[int],
                   static_names: Sequence[str]) -> tuple[tuple[int | str, Static], ...]:
    """The signature key's statics: (position or name, boxed value), each checked hashable."""
    check_static_args_hashable(args, static_nums)
    check_static_args_hashable(kwargs, static_names)
    return (*((i, Static(args[i])) for i in static_nums),
            *((k, Static(kwargs[k])) for k in static_names))


def box_statics(args: tuple, kwargs: dict, static_nums: Collection[int],
                static_names: Collection[str]) -> tuple[tuple, dict]:
    """The arguments with each static one boxed in `Static`, once all are checked hashable."""
    check_static_args_hashable(args, sorted(static_nums))
    check_static_args_hashable(kwargs, static_names)
    return (tuple(Static(a) if i in static_nums else a for i, a in enumerate(args)),
            {k: Static(v) if k in static_names else v for k, v in kwargs.items()})


def abstractify(fun: Callable, x: Any, arg_name: str) -> core.ShapedArray:
    """The aval jit traces an argument leaf with; JAX's error for a non-array, or an int that
    does not fit int32."""
    if isinstance(x, ShapeDtypeStruct):  # float64 stands for float32, as an array's would
        return core.ShapedArray(x.shape, canonicalize_dtype(x.dtype), x.weak_type)
    return shaped_abstractify(fun, x, arg_name)


def check_has_values(leaves: Sequence[Any], arg_names: Sequence[str],
                     avals: Sequence[core.ShapedArray]) -> None:
    """A call needs values: a `ShapeDtypeStruct`, which `lower` takes for an argument, is
    refused with JAX's message (JAX finds it when it runs the traced call)."""
    for x, name, aval in zip(leaves, arg_names, avals, strict=True):
        if isinstance(x, ShapeDtypeStruct):
            raise TypeError(f"Argument '{name}' of shape {aval.str_short()} of type {type(x)} "
                            "is not a valid JAX type.")


def flatten_args(args: tuple, kwargs: dict) -> tuple[list[Any], PyTreeDef]:
    """Stage 1's `tree_flatten((args, kwargs))`. A call without keywords whose every argument
    is a leaf has one treedef per argument count, taken from a table: flattening in Python is
    the largest part of a cache hit (JAX flattens in C++)."""
    if not kwargs:
        lookup = default_registry.lookup
        for a in args:
            if lookup(a) is not None:
                break
        else:
            return list(args), leaf_args_treedef(len(args))
    return tree_flatten((args, kwargs))


@functools.lru_cache(maxsize=64)
def leaf_args_treedef(n: int) -> PyTreeDef:
    """The treedef of `(args, {})` for `n` positional leaves (a fast path keys with it too)."""
    return tree_structure((tuple(range(n)), {}))


def check_donate_alias(donate: Any, may_alias: Any) -> None:
    """device_put's two buffer hints, which JAX refuses together."""
    if donate and may_alias:
        raise ValueError("may_alias and donate cannot be True at the same time.")


# A backend's cache hit in one function (stage 9's fastpath.py; JAX: the C++ PjitFunction, which
# serves a hit before any Python runs). jit tries it first on a call without keywords, with the
# arguments, the jit options, the function's signature table and its stats; it returns the
# outputs (a hit it counted with pjit.count_signature_hit), or MISSING, and the layers run. Set
# with `set_fastpath`; None: the layers only.
fastpath: Callable[[tuple, Any, Any, Any], Any] | None = None


def set_fastpath(fn: Callable[[tuple, Any, Any, Any], Any] | None) -> Callable | None:
    """Make `fn` jit's fast path (None: none); return the one it replaces."""
    global fastpath
    previous, fastpath = fastpath, fn
    return previous
