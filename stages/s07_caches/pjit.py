"""jit: a call that walks a stack of caches, and the `jit` primitive it binds when traced.

JAX: jax/_src/pjit.py. At the top level, a call of a jitted function asks, in order:

1. the *signature* cache (JAX: the C++ `PjitFunctionCache`); its key and what a hit skips are
   in `_signature_cache`'s description below: a hit runs the executable it holds.
2. the *trace* cache (JAX: `_infer_params_cached`, `pe.trace_to_jaxpr`), weakly keyed on the
   function. A miss runs the Python function on tracers: the only time a `print` in it fires.
3. the *lowering* and 4. the *executable* caches (pxla.py), keyed on the very jaxpr and program
   objects, and under them 5. the persistent cache on disk (compiler.py).

Inside a transformation the arguments are tracers and there is nothing to run: the call traces
(through the same trace cache) and binds `jit_p` with the jaxpr as a parameter; each
transformation's rule for `jit_p` (pjit_rules.py) takes it from there."""

from __future__ import annotations

import contextlib
import functools
import types
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from stages.s01_pytrees import PyTreeDef, tree_leaves, tree_structure, tree_unflatten
from stages.s02_tracing import config, core, dtypes
from stages.s02_tracing import linear_util as lu
from stages.s02_tracing import partial_eval as pe
from stages.s02_tracing.api_util import (
    argnums_partial,
    check_callable,
    debug_info,
    flatten_fun,
    result_paths,
    wraps,
)
from stages.s02_tracing.array import Array
from stages.s02_tracing.core import ClosedJaxpr

from . import api_util, dispatch, explain, pxla, stages
from .api_util import Static, abstractify, donation_vector, fun_name, fun_signature, resolve_argnums
from .sharding_impls import UNSPECIFIED
from .util import MISSING, CacheInfo, Stats, WeakrefCache, attribute_to

_signature_cache = WeakrefCache(
    "signature", "jit options, argument treedef, each leaf's shape, dtype and weak type, "
    "static arguments, trace context (JAX: the C++ PjitFunctionCache)", sizes_failed=True)
count_signature_hit = _signature_cache.count_hit  # (stats): how a backend's fast path counts
_trace_cache = WeakrefCache(
    "trace", "the function (weakly), trace context, argument treedef with static values, "
    "leaf avals, debug info (JAX: pe.trace_to_jaxpr)", explain=explain.explain_tracing_cache_miss)


class JitInfo(NamedTuple):  # what is known of a jitted function before a call (JAX: PjitInfo)
    static_argnums: tuple[int, ...]
    static_argnames: tuple[str, ...]
    donate_argnums: tuple[int, ...]
    donate_argnames: tuple[str, ...]
    keep_unused: bool
    compiler_options_kvs: tuple[tuple[str, Any], ...]
    inline: bool  # staged as the function's own equations, not a jit equation


class InType(NamedTuple):  # the trace cache's view of the arguments: tree (statics in), avals
    tree: PyTreeDef
    avals: tuple[core.ShapedArray, ...]


class PjitParams(NamedTuple):
    consts: list[Any]  # values closed over that are tracers of an enclosing trace: leading args
    params: dict[str, Any]  # the jit equation's params
    in_avals: tuple[core.ShapedArray, ...]
    in_tree: PyTreeDef  # of (dynamic args, dynamic kwargs)
    out_tree: PyTreeDef
    arg_names: tuple[str, ...]


class _FastpathEntry(NamedTuple):
    executable: pxla.MeshExecutable
    out_tree: PyTreeDef
    out_is_leaf: bool  # one array out: returned as it is, no tree to rebuild


class JitWrapped:
    """`jit(f)`: call it, or stop at a station: `.trace(...)`, `.lower(...)`, `.eval_shape`."""

    def __init__(self, fun: Callable, jit_info: JitInfo):
        wraps(fun)(self)  # named as JAX names it, a partial or a callable object too
        self._fun, self._jit_info, self._stats = fun, jit_info, Stats()
        self._signatures = _signature_cache.table(fun)  # held, as JAX's PjitFunction holds it
        self._own = lambda key: api_util.shares_cpp_cache(jit_info, key[0])  # this jit's keys

    def __repr__(self) -> str:
        return f"<PjitFunction of {self._fun!r}>"  # as JAX's C++ object prints

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else types.MethodType(self, obj)  # jit on a method

    # --8<-- [start:call]
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if api_util.fastpath is not None and not kwargs:  # a backend's hit in one function
            outs = api_util.fastpath(args, self._jit_info, self._signatures, self._stats)
            if outs is not MISSING:
                return outs
        if config.disable_jit.value:
            return self._fun(*args, **kwargs)
        if isinstance(core.trace_ctx.trace, core.EvalTrace):
            found = self._signature(args, kwargs)
            if found is not None:  # layer 1: every leaf is a concrete array or scalar
                key, leaves = found
                entry = _signature_cache.hit(self._signatures, key, self._stats)
                if entry is MISSING:  # layers 2-5, their lookups counted for this function
                    with attribute_to(self._stats):
                        entry = _signature_cache.get_or_compute(
                            self._fun, key, lambda: self._cache_miss(args, kwargs))
                if leaves is not None:  # None: an int beyond int32, refused by the slow path
                    try:
                        outs = entry.executable.unsafe_call(*leaves)
                    except stages.DeviceAssignmentMismatchError as e:  # named as JAX names it
                        raise stages.device_mismatch(e, self, args, kwargs) from None
                    return outs[0] if entry.out_is_leaf else tree_unflatten(entry.out_tree, outs)
        with attribute_to(self._stats):
            p, args_flat = _infer_params(self._fun, self._jit_info, args, kwargs)
            api_util.check_has_values(args_flat[len(p.consts):], p.arg_names, p.in_avals)
            out_flat = jit_p.bind(*args_flat, **p.params)  # a transformation decides
        return tree_unflatten(p.out_tree, out_flat)
    # --8<-- [end:call]

    def _signature(self, args: tuple, kwargs: dict) -> tuple[tuple, list[Any] | None] | None:
        """The key and the dynamic leaves (None: an int past int32), or None if one is no array."""
        # EXERCISE 7.2 (signature): statics boxed, one (shape, dtype) or scalar type per leaf
        ji, dyn_args, dyn_kwargs = self._jit_info, args, kwargs
        static_nums, static_names = [], []
        if ji.static_argnums:
            n = len(args)
            static_nums = sorted({i % n for i in ji.static_argnums if -n <= i < n})
            dyn_args = tuple(a for i, a in enumerate(args) if i not in static_nums)
        if kwargs and ji.static_argnames:
            dyn_kwargs = {k: v for k, v in kwargs.items() if k not in ji.static_argnames}
            static_names = sorted(set(kwargs) - set(dyn_kwargs))
        leaves, treedef = api_util.flatten_args(dyn_args, dyn_kwargs)
        sig, overflow = [], False
        for x in leaves:
            t = type(x)
            if t is np.ndarray:  # a 64-bit array is traced as its 32-bit form: one entry
                sig.append((x.shape, dtypes.canonicalize_dtype(x.dtype)))
            elif isinstance(x, Array):  # eager, or a later stage's device array
                sig.append(x.aval)  # its shape, dtype and weak type (and sharding)
            elif t in (int, float, complex, bool):
                sig.append(t)  # the type decides the dtype, and whether it is weak
                overflow = overflow or (t is int and not -(2**31) <= x < 2**31)
            elif isinstance(x, np.generic):  # a numpy scalar: a 0-d array, as JAX keys it
                sig.append(((), dtypes.canonicalize_dtype(x.dtype)))
            elif t in core.pytype_aval_mappings:  # a later stage's array: its aval says all
                sig.append(core.pytype_aval_mappings[t](x))
            else:  # a tracer, a string, no array: the slow path says what is wrong
                return None
        # every leaf has a signature (an int of any size too): only now are statics hashed
        statics = (api_util.static_entries(args, kwargs, static_nums, static_names)
                   if static_nums or static_names else ())
        key = (ji, treedef, tuple(sig), statics, config.trace_context())
        return key, None if overflow else leaves  # an int beyond int32 is keyed, never run
        # END EXERCISE

    def _cache_miss(self, args: tuple, kwargs: dict) -> _FastpathEntry:
        """Layers 2-5: trace (or reuse a trace), lower, compile; what layer 1 will hold."""
        p, _ = _infer_params(self._fun, self._jit_info, args, kwargs)
        assert not p.consts, "a tracer was closed over at the top level"
        is_leaf = p.out_tree.num_leaves == p.out_tree.num_nodes == 1
        return _FastpathEntry(_lower(p.params).compile(), p.out_tree, is_leaf)

    def trace(self, *args: Any, **kwargs: Any) -> stages.Traced:
        """The first AOT station: the traced jaxpr and what it returns."""
        with attribute_to(self._stats):
            p, _ = _infer_params(self._fun, self._jit_info, args, kwargs)
        return stages.Traced(p, _lower)

    def lower(self, *args: Any, **kwargs: Any) -> stages.Lowered:
        return self.trace(*args, **kwargs).lower()

    def eval_shape(self, *args: Any, **kwargs: Any) -> Any:
        return self.trace(*args, **kwargs).out_info

    def clear_cache(self) -> None:
        """Forget this function's signatures and traces (JAX: jit_evict_fn)."""
        _signature_cache.evict(self._fun, self._own)  # a jit with other options keeps its own
        _trace_cache.evict(self._fun)

    def cache_info(self) -> dict[str, CacheInfo]:
        """Each layer's hits and misses for this function; currsize: its signature/trace entries."""
        own = {"signature": _signature_cache, "trace": _trace_cache}
        out = {}
        for layer in ("signature", "trace", "lowering", "executable", "persistent"):
            hits, misses = self._stats.counts.get(layer, (0, 0))
            size = own[layer].size_of(self._fun, self._own if layer == "signature" else None) \
                if layer in own else 0
            out[layer] = CacheInfo(hits, misses, size)
        return out

    def _cache_size(self) -> int:
        return _signature_cache.size_of(self._fun, self._own)


def jit(fun: Callable | None = None, *, static_argnums: Any = None, static_argnames: Any = None,
        donate_argnums: Any = None, donate_argnames: Any = None, keep_unused: bool = False,
        compiler_options: dict[str, Any] | None = None, inline: bool = False) -> Any:
    """`fun`, traced once per signature, compiled once per trace, cached at every step."""
    if fun is None:  # @jit(static_argnums=...): the options, kept for the function
        return functools.partial(jit, static_argnums=static_argnums,
                                 static_argnames=static_argnames, donate_argnums=donate_argnums,
                                 donate_argnames=donate_argnames, keep_unused=keep_unused,
                                 compiler_options=compiler_options, inline=inline)
    check_callable(fun)
    donate_nums, donate_names, static_nums, static_names = resolve_argnums(
        fun, fun_signature(fun), donate_argnums, donate_argnames, static_argnums,
        static_argnames)
    kvs = tuple(sorted((compiler_options or {}).items()))
    return JitWrapped(fun, JitInfo(static_nums, static_names, donate_nums, donate_names,
                                   bool(keep_unused), kvs, bool(inline)))


# --8<-- [start:infer_params]
def _infer_params(fun: Callable, ji: JitInfo, args: tuple, kwargs: dict
                  ) -> tuple[PjitParams, list[Any]]:
    """Layer 2: the jit equation's params for these arguments, traced once per key."""
    n = len(args)
    static_nums = {i % n for i in ji.static_argnums if -n <= i < n}
    static_names = [k for k in kwargs if k in ji.static_argnames]
    # dynamic leaves are abstracted before statics are hashed, as in JAX (a None: no leaves)
    names_only = {k: None if k in static_names else v for k, v in kwargs.items()}
    leaves = tree_leaves(([None if i in static_nums else a for i, a in enumerate(args)],
                          names_only))
    dbg = debug_info("jit", fun, args, names_only, tuple(sorted(static_nums)))
    names = dbg.arg_names if len(dbg.arg_names) == len(leaves) else ("",) * len(leaves)
    avals = tuple(abstractify(fun, x, name) for x, name in zip(leaves, names, strict=True))
    args_ft, kwargs_ft = api_util.box_statics(args, kwargs, static_nums, static_names)
    tree = tree_structure((args_ft, kwargs_ft))
    key = (config.trace_context(), InType(tree, avals), dbg)
    api_util.check_weakly_keyable(fun)  # the caches hold it weakly, as JAX's
    closed, out_tree = _trace_cache.get_or_compute(
        fun, key, lambda: _trace_for_jit(fun, dbg, args_ft, kwargs_ft, avals),
        explain=config.explain_cache_misses.value)
    consts: list[Any] = []
    if any(isinstance(c, core.Tracer) for c in closed.consts):
        # it closed over a tracer of an enclosing trace: pass it as an argument, cache nothing
        _trace_cache.forget(fun, key)
        consts = list(closed.consts)
        closed = ClosedJaxpr(pe.convert_constvars_jaxpr(closed.jaxpr), [])
    dyn_args = tuple(a for a in args_ft if not isinstance(a, Static))
    dyn_kwargs = {k: v for k, v in kwargs_ft.items() if not isinstance(v, Static)}
    donated = donation_vector(ji.donate_argnums, ji.donate_argnames, args_ft, kwargs_ft,
                              lambda x: tree_structure(x).num_leaves)
    params = dict(jaxpr=closed, in_shardings=(UNSPECIFIED,) * len(closed.in_avals),
                  out_shardings=(UNSPECIFIED,) * len(closed.out_avals),
                  donated_invars=(False,) * len(consts) + donated, name=fun_name(fun),
                  keep_unused=ji.keep_unused, inline=ji.inline,
                  compiler_options_kvs=ji.compiler_options_kvs)
    in_tree = tree_structure((dyn_args, dyn_kwargs))
    return PjitParams(consts, params, avals, in_tree, out_tree, names), [*consts, *leaves]


def _trace_for_jit(fun: Callable, dbg: lu.DebugInfo, args_ft: tuple, kwargs_ft: dict,
                   avals: tuple[core.ShapedArray, ...]) -> tuple[ClosedJaxpr, PyTreeDef]:
    """Run `fun` on one tracer per dynamic leaf, the statics as the values they are."""
    static_kwargs = {k: v.val for k, v in kwargs_ft.items() if isinstance(v, Static)}
    f = lu.wrap_init(functools.partial(fun, **static_kwargs) if static_kwargs else fun,
                     debug_info=dbg)
    dyn_args = args_ft
    if any(isinstance(a, Static) for a in args_ft):
        dyn_nums = [i for i, a in enumerate(args_ft) if not isinstance(a, Static)]
        values = [a.val if isinstance(a, Static) else a for a in args_ft]
        f, dyn_args = argnums_partial(f, dyn_nums, values)
    dyn_kwargs = {k: v for k, v in kwargs_ft.items() if not isinstance(v, Static)}
    flat_fun, out_tree = flatten_fun(f, tree_structure((tuple(dyn_args), dyn_kwargs)))
    at_top = isinstance(core.trace_ctx.trace, core.EvalTrace)
    timer = dispatch.log_elapsed_time(
        "Finished tracing {fun_name} for jit in {elapsed_time:.9f} sec", fun_name(fun),
        event=dispatch.JAXPR_TRACE_EVENT) if at_top else contextlib.nullcontext()
    with timer:
        jaxpr, _, consts = pe.trace_to_jaxpr_dynamic(flat_fun, avals)
    jaxpr = jaxpr.replace(debug_info=dbg._replace(result_paths=result_paths(out_tree())))
    return ClosedJaxpr(jaxpr, consts), out_tree()
# --8<-- [end:infer_params]


def _lower(params: dict[str, Any]) -> pxla.MeshComputation:
    return pxla.lower_jaxpr(
        params["jaxpr"], name=params["name"], donated_invars=params["donated_invars"],
        keep_unused=params["keep_unused"], compiler_options_kvs=params["compiler_options_kvs"],
        in_shardings=params["in_shardings"])


# ------------------------------------------------------------------ the jit primitive

# --8<-- [start:jit_p]
jit_p = core.Primitive("jit")  # JAX: jit_p, printed `jit[name=f jaxpr={ ... }]`
jit_p.multiple_results = True


def _pjit_call_impl(*args: Any, jaxpr: ClosedJaxpr, **params: Any) -> list[Any]:
    """A jit equation run eagerly: lowered and compiled through layers 3-5, then called."""
    if dispatch.in_compiled_program() or config.disable_jit.value:  # XLA inlines a nested one
        return core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *args)
    return _lower(dict(params, jaxpr=jaxpr)).compile().unsafe_call(*args)


jit_p.def_impl(_pjit_call_impl)
jit_p.def_abstract_eval(lambda *avals, jaxpr, **_: list(jaxpr.out_avals))  # the jaxpr's outputs
# --8<-- [end:jit_p]
