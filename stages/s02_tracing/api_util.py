"""Transformations every API function uses: pytrees in and out, static arguments, debug info.

JAX: jax/_src/api_util.py.
"""

from __future__ import annotations

import functools
import inspect
import operator
import re
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from stages.s01_pytrees import (
    PyTreeDef,
    keystr,
    tree_flatten,
    tree_flatten_with_path,
    tree_leaves_with_path,
    tree_structure,
    tree_unflatten,
    treedef_tuple,
)

from . import core
from . import linear_util as lu


# --8<-- [start:flatten_fun]
@lu.transformation_with_aux2
def flatten_fun(f: Callable, store: lu.Store, in_tree: PyTreeDef, *args_flat: Any) -> list:
    """Call `f(*args, **kwargs)` from flat leaves; return flat results, store their treedef."""
    # EXERCISE 2.2 (transformation): rebuild (args, kwargs), call f, flatten and store its tree
    py_args, py_kwargs = tree_unflatten(in_tree, args_flat)
    ans = f(*py_args, **py_kwargs)
    ans_flat, out_tree = tree_flatten(ans)
    store.store(out_tree)
    return ans_flat
    # END EXERCISE
# --8<-- [end:flatten_fun]


def flatten_fun_nokwargs(f: lu.WrappedFun, in_tree: PyTreeDef) -> tuple[lu.WrappedFun, Callable]:
    """flatten_fun for a function of positional arguments only (in_tree is of args): the same
    transformation, its kwargs an empty dict (JAX writes it out as a transformation of its own)."""
    return flatten_fun(f, treedef_tuple([in_tree, tree_structure({})]))


def check_callable(fun: Any) -> None:
    """Every transformation refuses a non-function when it is made, not when called."""
    if isinstance(fun, staticmethod):  # JAX's C++ cache holds functions by weak reference
        raise TypeError(f"staticmethod arguments are not supported, got {fun}")
    if not callable(fun):
        raise TypeError(f"Expected a callable value, got {fun}")
    if inspect.isgeneratorfunction(fun):  # its body would run only when iterated
        raise TypeError(f"Expected a function, got a generator function: {fun}")


def check_static_args_hashable(args: Sequence[Any] | Mapping[str, Any],
                               static: Iterable[int] | Iterable[str]) -> None:
    """A static argument becomes part of a cache key, so it must hash. `args` are positional
    arguments indexed by `static` numbers, or keyword arguments indexed by names."""
    # JAX: jit's C++ dispatch hashes static arguments with this message, once the others are
    # keyed; the one in argnums_partial (ours too) is older wording that jit no longer reaches
    for i in static:
        try:
            hash(args[i])
        except TypeError as err:
            raise ValueError(
                "Non-hashable static arguments are not supported. An error occurred while "
                f"trying to hash an object of type {type(args[i])}, {args[i]}. The error "
                f"was:\n{type(err).__name__}: {err}\n"
            ) from None


class _HashableWithStrictTypeEquality:
    """A static argument as part of a cache key: 1 and 1.0 and True are different keys."""

    __slots__ = ("val",)

    def __init__(self, val: Hashable):
        self.val = val

    def __hash__(self) -> int:
        return hash(self.val)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, _HashableWithStrictTypeEquality)
                and type(self.val) is type(other.val) and self.val == other.val)


class Unhashable:
    """A static argument kept out of every cache key (a tracer, say): it has no hash."""

    __slots__ = ("val",)

    def __init__(self, val: Any):
        self.val = val

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Unhashable) and self.val == other.val


@lu.transformation2
def _argnums_partial(f: Callable, dyn_argnums: tuple[int, ...],
                     fixed_args: tuple[_HashableWithStrictTypeEquality | Unhashable, ...],
                     *dyn_args: Any, **kwargs: Any) -> Any:
    # put the static arguments back between the dynamic ones
    n = len(dyn_argnums) + len(fixed_args)
    dyn = dict(zip(dyn_argnums, dyn_args, strict=True))
    fixed = iter(fixed_args)
    args = [dyn[i] if i in dyn else next(fixed).val for i in range(n)]
    return f(*args, **kwargs)


def argnums_partial(f: lu.WrappedFun, dyn_argnums: Sequence[int], args: Sequence[Any],
                    require_static_args_hashable: bool = True
                    ) -> tuple[lu.WrappedFun, tuple[Any, ...]]:
    """Close `f` over the arguments not in `dyn_argnums`; return it and the dynamic ones."""
    dyn_argnums = tuple(dyn_argnums)
    fixed_args: list[_HashableWithStrictTypeEquality | Unhashable] = []
    for i, arg in enumerate(args):
        if i in dyn_argnums:
            continue
        if not require_static_args_hashable:  # a function that is never cached (checkpoint)
            fixed_args.append(Unhashable(arg))
            continue
        try:
            hash(arg)
        except TypeError:
            raise ValueError(
                "Non-hashable static arguments are not supported, as this can lead to "
                f"unexpected cache-misses. Static argument (index {i}) of type {type(arg)} "
                f"for function {f.__name__} is non-hashable."
            ) from None
        fixed_args.append(_HashableWithStrictTypeEquality(arg))
    dyn_args = tuple(args[i] for i in dyn_argnums)
    return _argnums_partial(f, dyn_argnums, tuple(fixed_args)), dyn_args


def argnums_partial2(fun: Callable, dyn_argnums: int | Sequence[int], args: Sequence[Any],
                     kwargs: dict[str, Any]) -> tuple[Callable, tuple[Any, ...]]:
    """argnums_partial for a plain callable: `fun` as a function of the arguments at
    `dyn_argnums` only (the others and kwargs closed over), and those arguments."""
    # a Python closure, not a WrappedFun: grad and the Jacobians hand it to vjp and jvp
    nums = _ensure_index_tuple(dyn_argnums)
    for i in nums:
        if not -len(args) <= i < len(args):
            raise ValueError(
                "Positional argument indices, e.g. for `static_argnums`, must have value "
                "greater than or equal to -len(args) and less than len(args), but got value "
                f"{i} for len(args) == {len(args)}.")

    def f_partial(*dyn_args: Any) -> Any:
        full = list(args)
        for i, a in zip(nums, dyn_args, strict=True):
            full[i] = a
        return fun(*full, **kwargs)

    f_partial.__name__ = getattr(fun, "__name__", "fun")
    f_partial.__wrapped__ = fun  # error messages name fun's source, not this closure's
    # as JAX's: each argument is taken out of its slot, so an index given twice finds it empty
    # and passes None (fun then fails on it, as under JAX)
    slots = [i % len(args) for i in nums]
    return f_partial, tuple(None if i in slots[:k] else args[i] for k, i in enumerate(slots))


def fun_sourceinfo(fun: Callable) -> str:
    """`f at /path/file.py:12`; a builtin's bare name; `<unknown>` for an object with no code
    (a callable instance). The name holds no space: `DebugInfo.func_name` is its first word."""
    while isinstance(fun, functools.partial):  # a partial is named after the function it wraps
        fun = fun.func
    fun = inspect.unwrap(fun)
    code = getattr(fun, "__code__", None)
    if code is not None and hasattr(fun, "__name__"):
        return f"{fun.__name__} at {code.co_filename}:{code.co_firstlineno}"
    try:
        text = str(fun)
    except Exception:
        return "<unknown>"
    builtin = re.match(r"<built-in function (\S+)>", text)
    return builtin.group(1) if builtin else "<unknown>"


def result_paths(out_tree: PyTreeDef) -> tuple[str, ...]:
    """Each output leaf's key path: `result`, `result[0]`, `result['a']` (JAX: pjit.py's
    `result_paths`, kept in the jaxpr's debug info; lowering names `@main`'s results by them)."""
    placeholders = tree_unflatten(out_tree, [object() for _ in range(out_tree.num_leaves)])
    return tuple("result" + keystr(path) for path, _ in tree_leaves_with_path(placeholders))


def save_wrapped_fun_debug_info(wrapper: Callable, dbg: lu.DebugInfo) -> None:
    """Make `debug_info` of `wrapper` answer `dbg`: a library's wrapper of a user's function
    (fori_loop's body) is then named in errors as the user's function."""
    wrapper.__fun_debug_info__ = dbg  # type: ignore[attr-defined]


def debug_info(traced_for: str, fun: Callable, args: Sequence[Any], kwargs: dict[str, Any],
               static_argnums: Sequence[int] = ()) -> lu.DebugInfo:
    """What error messages say about a traced function: its source and its argument names."""
    saved = getattr(fun, "__fun_debug_info__", None)
    if saved is not None:
        return saved
    try:
        sig = inspect.signature(fun)
        bound = sig.bind(*args, **kwargs)
        # a *args parameter covers several positions: name them args[0], args[1], ...
        positional, var_kw = [], "kwargs"
        for name, val in bound.arguments.items():
            kind = sig.parameters[name].kind
            if kind is inspect.Parameter.VAR_POSITIONAL:
                positional += [f"{name}[{i}]" for i in range(len(val))]
            elif kind is not inspect.Parameter.VAR_KEYWORD:
                positional.append(name)
            else:
                var_kw = name
        # a keyword collected by **kw is named kw['name']
        names = positional[: len(args)] + [k if k in bound.arguments else f"{var_kw}['{k}']"
                                           for k in sorted(kwargs)]
    except (TypeError, ValueError):
        names = [f"args[{i}]" for i in range(len(args))] + [f"kwargs['{k}']"
                                                            for k in sorted(kwargs)]
    # one name per flattened leaf of each non-static argument: d['a'], d['b'][0], ...
    arg_names: list[str] = []
    values = list(args) + [kwargs[k] for k in sorted(kwargs)]
    for i, (name, val) in enumerate(zip(names, values, strict=True)):
        if i < len(args) and i in static_argnums:
            continue
        paths, _ = tree_flatten_with_path(val)
        arg_names += [f"{name}{keystr(path)}" for path, _ in paths]
    return lu.DebugInfo(traced_for, fun_sourceinfo(fun), tuple(arg_names))


def check_arg(arg: Any) -> None:
    """An argument a transformation can take: a tracer or a value with an aval (JAX:
    dispatch.check_arg, which grad and the Jacobians call on every input)."""
    if isinstance(arg, core.Tracer):
        return
    try:
        core.get_aval(arg)
    except TypeError:
        raise TypeError(f"Argument '{arg}' of type {type(arg)} is not a valid JAX type.") from None


def check_not_masked(arg: Any) -> None:
    """A numpy masked array is refused where JAX abstracts (jit) or places (device_put) one:
    its mask would be dropped without a word."""
    if isinstance(arg, np.ma.MaskedArray):
        raise ValueError("numpy masked arrays are not supported as direct inputs to JAX "
                         "functions. Use arr.filled() to convert the value to a standard numpy "
                         "array.")


def shaped_abstractify(fun: Any, arg: Any, path: str) -> Any:
    """The aval of an argument of a function being traced, or JAX's error naming its path."""
    # JAX: the message jit's (and so make_jaxpr's) argument abstraction gives
    check_not_masked(arg)
    try:
        return core.get_aval(arg)
    except OverflowError:
        raise OverflowError(
            "An overflow was encountered while parsing an argument to a jitted computation, "
            f"whose argument path is {path}. Got {type(arg)} with value {arg}") from None
    except TypeError:
        raise TypeError(
            f"Error interpreting argument to {fun} as an abstract array. The problematic value "
            f"is of type {type(arg)} and was passed to the function at path {path}.\nThis "
            "typically means that a jit-wrapped function was called with a non-array argument, "
            "and this argument was not marked as static using the static_argnums or "
            "static_argnames parameters of jax.jit.") from None


def fun_signature(fun: Callable) -> inspect.Signature | None:
    try:
        return inspect.signature(fun)
    except (ValueError, TypeError):
        return None


def ensure_index(x: Any) -> int | tuple[int, ...]:
    """An index, or a tuple of them: numpy integers too (JAX: _ensure_index)."""
    try:
        return operator.index(x)
    except TypeError:
        return tuple(map(operator.index, x))


def _ensure_index_tuple(x: Any) -> tuple[int, ...]:
    if x is None:
        return ()
    try:
        return (operator.index(x),)
    except TypeError:
        return tuple(map(operator.index, x))


def _ensure_str_tuple(x: Any) -> tuple[str, ...]:
    if x is None:
        return ()
    if isinstance(x, str):
        return (x,)
    for name in (x := tuple(x)):
        if not isinstance(name, str):
            raise TypeError(f"argument is not a string: {name}")
    return x


def infer_argnums_and_argnames(sig: inspect.Signature | None, argnums: Any, argnames: Any
                               ) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """Given one of argnums or argnames, the other from the signature (JAX: same name)."""
    if (argnums is None and argnames is None) or sig is None:
        return _ensure_index_tuple(argnums), _ensure_str_tuple(argnames)
    if argnums is not None and argnames is not None:
        return _ensure_index_tuple(argnums), _ensure_str_tuple(argnames)
    params = list(sig.parameters.items())
    positional = inspect.Parameter.POSITIONAL_OR_KEYWORD
    if argnums is None:
        argnames = _ensure_str_tuple(argnames)
        argnums = tuple(i for i, (k, p) in enumerate(params)
                        if p.kind == positional and k in argnames)
        return argnums, argnames
    argnums = _ensure_index_tuple(argnums)
    argnames = tuple(k for i, (k, p) in enumerate(params) if p.kind == positional and i in argnums)
    return argnums, argnames


def fun_name(fun: Callable, default_name: str = "<unnamed function>") -> str:
    name = getattr(fun, "__name__", None)
    if name is not None:
        return name
    if isinstance(fun, functools.partial):
        return fun_name(fun.func)
    return default_name


def wraps(wrapped: Callable, docstr: str | None = None, **kwargs: Any
          ) -> Callable[[Callable], Callable]:
    """Name a transformed function after the function it transforms, as JAX's transformations
    do: `grad(f).__name__` is "f", so `jit(grad(f))` prints `name=f`. `docstr` is formatted
    with `fun` (that name), `doc` (its docstring) and `kwargs` (JAX: util.wraps)."""
    def wrapper(fun: Callable) -> Callable:
        name, doc = fun_name(wrapped), getattr(wrapped, "__doc__", "") or ""
        fun.__dict__.update(getattr(wrapped, "__dict__", {}))
        fun.__annotations__ = getattr(wrapped, "__annotations__", {})
        fun.__name__, fun.__qualname__ = name, getattr(wrapped, "__qualname__", name)
        fun.__module__ = getattr(wrapped, "__module__", "<unknown module>")
        fun.__doc__ = doc if docstr is None else docstr.format(fun=name, doc=doc, **kwargs)
        fun.__wrapped__ = wrapped
        return fun
    return wrapper
