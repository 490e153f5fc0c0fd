"""WrappedFun: a Python function plus the stack of transformations to apply around it.

JAX: jax/_src/linear_util.py. Every JAX transform wraps the function it transforms. A WrappedFun
keeps the raw function `f`, the tuple `transforms` of (transformation, static args), and one
write-once `Store` per transformation for what it learns while running (e.g. the output
pytree). Arguments meet the last-applied transformation first; results leave through the
first-applied one first. A WrappedFun hashes on its transformation stack, never on its stores,
so `cache` can memoize a traced call: a weak dictionary keyed on the raw function holds a dict
keyed on (transforms, params, in_type, extra args).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable
from functools import partial
from typing import Any, NamedTuple

from . import _jax_compat


class StoreException(Exception):
    pass


class EmptyStoreValue:
    pass


_EMPTY_STORE_VALUE = EmptyStoreValue()


# --8<-- [start:store]
class Store:
    """A write-once cell: a transformation writes into it while the function runs."""

    __slots__ = ("_val",)

    def __init__(self):
        self._val = _EMPTY_STORE_VALUE

    def store(self, val: Any) -> None:
        if self._val is not _EMPTY_STORE_VALUE:
            raise StoreException("Store occupied")
        self._val = val

    def reset(self) -> None:
        self._val = _EMPTY_STORE_VALUE

    @property
    def val(self) -> Any:
        if not self:
            raise StoreException("Store empty")
        return self._val

    def __bool__(self) -> bool:
        return self._val is not _EMPTY_STORE_VALUE
# --8<-- [end:store]


class EqualStore:
    """A Store that accepts a second write of an equal value."""

    __slots__ = ("_store",)

    def __init__(self):
        self._store = Store()

    @property
    def val(self) -> Any:
        return self._store.val

    def store(self, val: Any) -> None:
        try:
            self._store.store(val)
        except StoreException as e:
            if not self._store._val == val:
                raise StoreException("Store occupied with not-equal value") from e

    def reset(self) -> None:
        self._store.reset()


class DebugInfo(NamedTuple):
    """What a traced function was: for error messages (JAX: lu.DebugInfo)."""

    traced_for: str  # e.g. "make_jaxpr", "jit"
    func_src_info: str  # e.g. "f at /path/file.py:12"
    arg_names: tuple[str, ...] | None  # one per flattened non-static argument
    result_paths: tuple[str, ...] | None = None

    @property
    def func_name(self) -> str:
        return self.func_src_info.split(" ")[0]


# --8<-- [start:wrapped_fun]
class WrappedFun:
    """`f` with `transforms` to apply around it; `f_transformed` is the composed callable."""

    __slots__ = ("f", "f_transformed", "transforms", "stores", "params", "in_type", "debug_info")

    def __init__(self, f: Callable, f_transformed: Callable,
                 transforms: tuple[tuple[Callable, tuple[Hashable, ...]], ...],
                 stores: tuple[Store | EqualStore | None, ...],
                 params: tuple[tuple[str, Any], ...], in_type: Any, debug_info: DebugInfo | None):
        self.f = f
        self.f_transformed = f_transformed
        self.transforms = transforms
        self.stores = stores
        self.params = params
        self.in_type = in_type
        self.debug_info = debug_info

    @property
    def __name__(self) -> str:
        return getattr(self.f, "__name__", "<unnamed wrapped function>")

    def wrap(self, gen: Callable, gen_static_args: tuple, out_store: Store | EqualStore | None
             ) -> WrappedFun:
        """Push one transformation: it becomes the outermost call, and transforms[0]."""
        if out_store is None:
            f_transformed = partial(gen, self.f_transformed, *gen_static_args)
        else:
            f_transformed = partial(gen, self.f_transformed, out_store, *gen_static_args)
        return WrappedFun(self.f, f_transformed, ((gen, gen_static_args),) + self.transforms,
                          (out_store,) + self.stores, self.params, None, self.debug_info)

    def call_wrapped(self, *args: Any, **kwargs: Any) -> Any:
        return self.f_transformed(*args, **kwargs)

    def populate_stores(self, stores: tuple[Store | EqualStore | None, ...]) -> None:
        """Copy values from another WrappedFun's stores (a cache hit did not run us)."""
        for self_store, other_store in zip(self.stores, stores, strict=True):
            if self_store is not None:
                self_store.store(other_store.val)

    __repr__ = _jax_compat.wrapped_fun_repr  # the stack, one transformation a line, as JAX's

    # Identity is the transformation stack, never the stores (they are outputs, not inputs).
    def __hash__(self) -> int:
        return hash((self.f, self.transforms, self.params, self.in_type, self.debug_info))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, WrappedFun) and self.f == other.f
                and self.transforms == other.transforms and self.params == other.params
                and self.in_type == other.in_type and self.debug_info == other.debug_info)
# --8<-- [end:wrapped_fun]


# --8<-- [start:transformation]
def transformation2(gen: Callable) -> Callable[..., WrappedFun]:
    """Decorator: `gen(f, *static_args, *args)` calls `f` and may change args and results.

    `gen` becomes `lambda fun, *static_args: fun.wrap(gen, static_args, None)`.
    """

    def apply(fun: WrappedFun, *gen_static_args: Hashable) -> WrappedFun:
        return fun.wrap(gen, gen_static_args, None)

    apply.__name__ = getattr(gen, "__name__", "transformation")
    apply.__wrapped__ = gen
    return apply


def transformation_with_aux2(gen: Callable) -> Callable[..., tuple[WrappedFun, Callable]]:
    """Decorator: like transformation2, but `gen(f, store, *static_args, *args)` also
    gets a Store; applying it returns (wrapped, thunk), and thunk() reads the store."""

    def apply(fun: WrappedFun, *gen_static_args: Hashable, use_eq_store: bool = False
              ) -> tuple[WrappedFun, Callable[[], Any]]:
        out_store = EqualStore() if use_eq_store else Store()
        return fun.wrap(gen, gen_static_args, out_store), lambda: out_store.val

    apply.__name__ = getattr(gen, "__name__", "transformation_with_aux")
    apply.__wrapped__ = gen
    return apply
# --8<-- [end:transformation]


# --8<-- [start:generator_style]
def transformation(gen: Callable) -> Callable[..., WrappedFun]:
    """The older style: `gen(*static_args, *args)` is a generator that yields (args, kwargs),
    is sent the results of the inner function, and yields the transformed results."""

    def gen2(f, *args, **kwargs):
        gen_inst = gen(*args, **kwargs)
        args_, kwargs_ = next(gen_inst)
        return gen_inst.send(f(*args_, **kwargs_))

    gen2.__name__ = getattr(gen, "__name__", "transformation")
    return transformation2(gen2)


def transformation_with_aux(gen: Callable) -> Callable[..., tuple[WrappedFun, Callable]]:
    """The older style with aux output: the generator's last yield is (results, aux)."""

    def gen2(f, store, *args, **kwargs):
        gen_inst = gen(*args, **kwargs)
        args_, kwargs_ = next(gen_inst)
        ans, aux = gen_inst.send(f(*args_, **kwargs_))
        store.store(aux)
        return ans

    gen2.__name__ = getattr(gen, "__name__", "transformation_with_aux")
    return transformation_with_aux2(gen2)
# --8<-- [end:generator_style]


def wrap_init(f: Callable, params: dict[str, Any] | None = None, *,
              debug_info: DebugInfo | None = None) -> WrappedFun:
    """A WrappedFun with no transformations; `params` become keyword arguments of `f`."""
    params_dict = {} if params is None else params
    params_tuple = tuple(sorted(params_dict.items()))
    return WrappedFun(f, partial(f, **params_dict), (), (), params_tuple, None, debug_info)


# --8<-- [start:cache]
def cache(call: Callable) -> Callable:
    """Memoize `call(fun: WrappedFun, *args)` on fun's stack and args, weakly on fun.f.

    When the raw function dies, its whole inner dict goes with it. A hit copies the
    stores of the call that filled the entry, so thunks from transformation_with_aux2 work.
    """
    fun_caches: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def memoized_fun(fun: WrappedFun, *args: Hashable) -> Any:
        cache = fun_caches.setdefault(fun.f, {})
        # JAX adds config.trace_context() to the key; we have no configuration state.
        key = (fun.transforms, fun.params, fun.in_type, args)
        result = cache.get(key, None)
        if result is not None:
            ans, stores = result
            fun.populate_stores(stores)
        else:
            ans = call(fun, *args)
            cache[key] = (ans, fun.stores)
        return ans

    memoized_fun.cache_clear = fun_caches.clear
    memoized_fun.evict_function = lambda f: fun_caches.pop(f, None)
    return memoized_fun
# --8<-- [end:cache]


def merge_linear_aux(aux1: Callable, aux2: Callable) -> tuple[bool, Any]:
    """Which of two aux thunks was filled: (True, aux1()) or (False, aux2())."""
    try:
        out1 = aux1()
    except StoreException:
        try:
            out2 = aux2()
        except StoreException:
            raise StoreException("neither store occupied") from None
        return False, out2
    try:
        aux2()
    except StoreException:
        return True, out1
    raise StoreException("both stores occupied")
