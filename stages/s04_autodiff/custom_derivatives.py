"""custom_jvp and custom_vjp: a function with its own derivative rule, as a call primitive.

JAX: jax/_src/custom_derivatives.py. Calling a decorated function binds one primitive,
`custom_jvp_call` or `custom_vjp_call`, carrying the function *and* its rule as `subfuns`.
Each trace decides what that means, through its `process_custom_jvp_call` /
`process_custom_vjp_call` method: the eval trace just calls the function, the jaxpr trace stages
one equation holding the function's jaxpr and the rule, and JVPTrace (ad.py) uses the rule
instead of differentiating the body. A later trace (vmap, jit) adds its own method.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

from stages.s01_pytrees import (
    PyTreeDef,
    keystr,
    tree_flatten,
    tree_flatten_with_path,
    tree_map,
    tree_unflatten,
    treedef_children,
)
from stages.s02_tracing import core
from stages.s02_tracing import linear_util as lu
from stages.s02_tracing.api_util import debug_info
from stages.s02_tracing.core import ClosedJaxpr, ShapedArray
from stages.s02_tracing.partial_eval import (
    DynamicJaxprTrace,
    convert_constvars_jaxpr,
    trace_to_closed_jaxpr,
    trace_to_jaxpr_dynamic,
)
from stages.s03_partial_eval import partial_eval as pe

from . import ad
from .ad_util import Zero, add_jaxvals, tangent_aval, zeros_like_aval

# ------------------------------------------------------------------ how each trace handles them


def _inline(trace: core.Trace, primitive: core.Primitive, fun: lu.WrappedFun, *rest: Any,
            **params: Any) -> list[Any]:
    """The default: call the function itself under `trace`; the custom rule is not needed."""
    # JAX: EvalTrace.process_custom_jvp_call (and JaxprTrace's, for unknown inputs)
    tracers = rest[-1]
    with core.set_current_trace(trace):
        return fun.call_wrapped(*tracers)


def _stage_custom_call(trace: DynamicJaxprTrace, primitive: core.Primitive,
                       fun: lu.WrappedFun, tracers: Sequence[Any], params: dict) -> list[Any]:
    """One equation holding fun's jaxpr (its constants become leading operands)."""
    tracers = [trace.to_jaxpr_tracer(t) for t in tracers]
    fun_jaxpr, _, consts = trace_to_jaxpr_dynamic(fun, [t.aval for t in tracers])
    call_jaxpr = ClosedJaxpr(convert_constvars_jaxpr(fun_jaxpr), [])
    params = dict(params, call_jaxpr=call_jaxpr, num_consts=len(consts))
    const_tracers = [trace.to_jaxpr_tracer(c) for c in consts]
    return trace.default_process_primitive(primitive, [*const_tracers, *tracers], params)


def _dynamic_process_custom_jvp_call(trace, primitive, fun, jvp, tracers, *, symbolic_zeros):
    # JAX: DynamicJaxprTrace.process_custom_jvp_call in interpreters/partial_eval.py
    in_avals = [core.get_aval(t) for t in tracers]
    jvp_avals = [*in_avals, *[tangent_aval(a) for a in in_avals]]
    jvp_jaxpr_fun = lu.wrap_init(_memoize(lambda: trace_to_closed_jaxpr(jvp, jvp_avals)),
                                 debug_info=jvp.debug_info)
    params = dict(jvp_jaxpr_fun=jvp_jaxpr_fun, symbolic_zeros=symbolic_zeros)
    return _stage_custom_call(trace, primitive, fun, tracers, params)


def _dynamic_process_custom_vjp_call(trace, primitive, fun, fwd, bwd, tracers, *, out_trees,
                                     symbolic_zeros):
    # JAX: DynamicJaxprTrace.process_custom_vjp_call in interpreters/partial_eval.py
    in_avals = [core.get_aval(t) for t in tracers]
    fwd_jaxpr_thunk = lu.wrap_init(_memoize(lambda: trace_to_closed_jaxpr(fwd, in_avals)),
                                   debug_info=fwd.debug_info)
    params = dict(fwd_jaxpr_thunk=fwd_jaxpr_thunk, bwd=bwd, out_trees=out_trees,
                  symbolic_zeros=symbolic_zeros)
    return _stage_custom_call(trace, primitive, fun, tracers, params)


def _jaxpr_trace_process_custom_jvp_call(trace, primitive, fun, jvp, tracers, *,
                                         symbolic_zeros):
    # JAX: JaxprTrace.process_custom_jvp_call in interpreters/partial_eval.py
    tracers = [trace.to_jaxpr_tracer(t) for t in tracers]
    if all(t.is_known() for t in tracers):
        vals = [t.pval.get_known() for t in tracers]
        with core.set_current_trace(trace.parent_trace):
            return primitive.bind(*vals, subfuns=(fun, jvp), symbolic_zeros=symbolic_zeros)
    # partial eval with unknown inputs builds a linear function: the rule is not needed there
    with core.set_current_trace(trace):
        return fun.call_wrapped(*tracers)


def _jaxpr_trace_process_custom_vjp_call(trace, primitive, fun, fwd, bwd, tracers, *,
                                         out_trees, symbolic_zeros):
    # JAX: JaxprTrace.process_custom_vjp_call (which also stages the unknown case whole)
    tracers = [trace.to_jaxpr_tracer(t) for t in tracers]
    if all(t.is_known() for t in tracers):
        vals = [t.pval.get_known() for t in tracers]
        with core.set_current_trace(trace.parent_trace):
            return primitive.bind(*vals, subfuns=(fun, fwd, bwd), out_trees=out_trees,
                                  symbolic_zeros=symbolic_zeros)
    with core.set_current_trace(trace):
        return fun.call_wrapped(*tracers)


# Stage 2's and 3's traces predate custom derivatives, so their methods live here, keyed by
# trace type (JAX: methods of EvalTrace, DynamicJaxprTrace and JaxprTrace). A trace class of a
# later stage defines the method itself; a trace with neither just calls the function.
custom_jvp_call_rules: dict[type, Callable] = {
    DynamicJaxprTrace: _dynamic_process_custom_jvp_call,
    pe.JaxprTrace: _jaxpr_trace_process_custom_jvp_call,
}
custom_vjp_call_rules: dict[type, Callable] = {
    DynamicJaxprTrace: _dynamic_process_custom_vjp_call,
    pe.JaxprTrace: _jaxpr_trace_process_custom_vjp_call,
}


def _trace_rule(trace: core.Trace, method: str, table: dict[type, Callable]) -> Callable:
    own = getattr(trace, method, None)
    if own is not None:
        return own
    for cls in type(trace).__mro__:
        if cls in table:
            return functools.partial(table[cls], trace)
    return functools.partial(_inline, trace)


def _memoize(thunk: Callable[[], Any]) -> Callable[[], Any]:
    cell: list[Any] = []

    def memoized() -> Any:
        if not cell:
            cell.append(thunk())
        return cell[0]

    return memoized


# ------------------------------------------------------------------ the two call primitives


class CustomJVPCallPrimitive(core.Primitive):
    """Bound as `custom_jvp_call_p.bind(*args, subfuns=(fun, jvp), symbolic_zeros=...)`."""

    multiple_results = True

    def bind_with_trace(self, trace, args, params):
        params = dict(params)
        fun, jvp = params.pop("subfuns")
        rule = _trace_rule(trace, "process_custom_jvp_call", custom_jvp_call_rules)
        return rule(self, fun, jvp, args, **params)

    def abstract_eval(self, *avals, call_jaxpr, **params):
        return call_jaxpr.out_avals

    def get_bind_params(self, params):
        """A staged equation's params back to `subfuns`, for eval_jaxpr to bind again."""
        new_params = dict(params)
        call_jaxpr = new_params.pop("call_jaxpr")
        num_consts = new_params.pop("num_consts")
        jvp_jaxpr_fun = new_params.pop("jvp_jaxpr_fun")
        fun = lu.wrap_init(core.jaxpr_as_fun(call_jaxpr))
        new_params["subfuns"] = (fun, lift_jvp(num_consts, jvp_jaxpr_fun))
        return new_params


def lift_jvp(num_consts: int, jvp_jaxpr_fun: lu.WrappedFun) -> lu.WrappedFun:
    """The staged jvp rule as a function of (consts, primals, consts' tangents, tangents)."""
    def jvp(*xs: Any) -> list[Any]:
        n = len(xs) // 2
        primals, tangents = xs[num_consts:n], xs[n + num_consts:]
        closed = jvp_jaxpr_fun.call_wrapped()
        return core.eval_jaxpr(closed.jaxpr, closed.consts, *primals, *tangents)

    return lu.wrap_init(jvp, debug_info=jvp_jaxpr_fun.debug_info)


class CustomVJPCallPrimitive(core.Primitive):
    """Bound as `custom_vjp_call_p.bind(*args, subfuns=(fun, fwd, bwd), out_trees=..., ...)`."""

    multiple_results = True

    def bind_with_trace(self, trace, args, params):
        params = dict(params)
        fun, fwd, bwd = params.pop("subfuns")
        rule = _trace_rule(trace, "process_custom_vjp_call", custom_vjp_call_rules)
        return rule(self, fun, fwd, bwd, args, **params)

    def abstract_eval(self, *avals, call_jaxpr, **params):
        return call_jaxpr.out_avals

    def get_bind_params(self, params):
        new_params = dict(params)
        call_jaxpr = new_params.pop("call_jaxpr")
        num_consts = new_params.pop("num_consts")
        fwd_jaxpr_thunk = new_params.pop("fwd_jaxpr_thunk")
        const_avals = call_jaxpr.in_avals[:num_consts]
        fun = lu.wrap_init(core.jaxpr_as_fun(call_jaxpr))
        fwd = lift_fwd(num_consts, fwd_jaxpr_thunk)
        bwd = _handle_consts_in_bwd(new_params.pop("bwd"), tuple(const_avals))
        new_params["subfuns"] = (fun, fwd, bwd)
        return new_params


def lift_fwd(num_consts: int, fwd_jaxpr_thunk: lu.WrappedFun) -> lu.WrappedFun:
    def fwd(*args: Any) -> list[Any]:
        closed = fwd_jaxpr_thunk.call_wrapped()
        return core.eval_jaxpr(closed.jaxpr, closed.consts, *args[num_consts:])

    return lu.wrap_init(fwd, debug_info=fwd_jaxpr_thunk.debug_info)


@lu.transformation2
def _handle_consts_in_bwd(f: Callable, const_avals: tuple, *args: Any) -> list[Any]:
    # constants of the primal function get no cotangent (JAX raises if they needed one)
    return [Zero(tangent_aval(a)) for a in const_avals] + list(f(*args))


custom_jvp_call_p = CustomJVPCallPrimitive("custom_jvp_call")
custom_vjp_call_p = CustomVJPCallPrimitive("custom_vjp_call")


def _custom_call_pp_rule(hidden: tuple[str, ...], renamed: dict[str, str], eqn, context,
                         settings):
    """`custom_jvp_call[name=f call_jaxpr={...} jvp=f_jvp symbolic_zeros=False]`, as JAX."""
    params = {k: v for k, v in eqn.params.items() if k not in hidden}
    if not params["num_consts"]:
        del params["num_consts"]
    for old, new in renamed.items():
        fun = params.pop(old)
        params[new] = fun.debug_info.func_name if fun.debug_info else fun.__name__
    names = sorted(params)
    params["name"] = eqn.params["call_jaxpr"].jaxpr.debug_info.func_name \
        if eqn.params["call_jaxpr"].jaxpr.debug_info else "fun"
    return core.default_pp_eqn(eqn.replace(params=params), context, settings,
                        params=["name", *names])


def _custom_jvp_call_transpose(cts: list[Any], *args: Any, call_jaxpr: ClosedJaxpr,
                               num_consts: int, jvp_jaxpr_fun: lu.WrappedFun,
                               symbolic_zeros: bool) -> list[Any]:
    """A custom_jvp function in a linear jaxpr (under linear_transpose): transpose its body.

    The custom rule says how to go forward; going backwards needs only the body, linear here.
    """
    # JAX: _custom_jvp_call_transpose_fancy (in ad.fancy_transposes; ours is an ordinary rule)
    return ad.backward_pass(call_jaxpr.jaxpr, call_jaxpr.consts, args, cts)


ad.primitive_transposes[custom_jvp_call_p] = _custom_jvp_call_transpose


core.pp_eqn_rules[custom_jvp_call_p] = functools.partial(
    _custom_call_pp_rule, (), {"jvp_jaxpr_fun": "jvp"})
core.pp_eqn_rules[custom_vjp_call_p] = functools.partial(
    _custom_call_pp_rule, ("out_trees",), {"fwd_jaxpr_thunk": "fwd", "bwd": "bwd"})

# ------------------------------------------------------------------ flattening the rules


@lu.transformation_with_aux2
def _flatten_fun_nokwargs(f: Callable, store: lu.Store, in_tree: PyTreeDef, *args: Any
                          ) -> list[Any]:
    ans_flat, out_tree = tree_flatten(f(*tree_unflatten(in_tree, args)))
    store.store((out_tree, [core.get_aval(x) for x in ans_flat]))
    return ans_flat


@lu.transformation_with_aux2
def _flatten_jvp(f: Callable, store: lu.Store, primal_name: str, jvp_name: str,
                 in_tree: PyTreeDef, *args: Any) -> list[Any]:
    """The user's jvp(primals, tangents) -> (primal_out, tangent_out), flat, with JAX's checks."""
    primals_in, tangents_in = args[: len(args) // 2], args[len(args) // 2 :]
    pair_out = f(tree_unflatten(in_tree, primals_in), tree_unflatten(in_tree, tangents_in))
    if not isinstance(pair_out, (list, tuple)) or len(pair_out) != 2:
        raise TypeError(f"Custom JVP rule {jvp_name} for function {primal_name} must produce a "
                        "pair (list or tuple of length two) representing primal and tangent "
                        f"outputs, but got {pair_out}.")
    primals_out, out_tree = tree_flatten(pair_out[0])
    tangents_out, out_tree2 = tree_flatten(pair_out[1])
    if out_tree != out_tree2:
        raise TypeError(f"Custom JVP rule {jvp_name} for function {primal_name} must produce "
                        "primal and tangent outputs with equal container (pytree) structures, "
                        f"but got {out_tree} and {out_tree2} respectively.")
    store.store((out_tree, [core.get_aval(x) for x in primals_out]))
    return [*primals_out, *tangents_out]


@lu.transformation_with_aux2
def _flatten_fwd(f: Callable, store: lu.Store, primal_name: str, fwd_name: str,
                 in_tree: PyTreeDef, *args: Any) -> list[Any]:
    """The user's fwd(*args) -> (out, residuals), flat as [*residuals, *outs]."""
    pair_out = f(*tree_unflatten(in_tree, args))
    if not isinstance(pair_out, (list, tuple)) or len(pair_out) != 2:
        raise TypeError(
            f"Custom VJP fwd rule {fwd_name} for function {primal_name} must produce a pair "
            "(list or tuple of length two) where the first element represents the primal "
            f"output (equal to those of the custom_vjp-decorated function {primal_name}) and "
            "the second element represents residuals (i.e. values stored from the forward "
            "pass for use on the backward pass), but instead of a pair the fwd rule "
            f"{fwd_name} produced {pair_out}.")
    primals_out, out_tree = tree_flatten(pair_out[0])
    res, res_tree = tree_flatten(pair_out[1])
    store.store((out_tree, res_tree))
    return [*res, *primals_out]


# --8<-- [start:flatten_bwd]
@lu.transformation2
def _flatten_bwd(f: Callable, in_tree: PyTreeDef, in_avals: tuple[ShapedArray, ...],
                 out_trees: Callable, *args: Any) -> list[Any]:
    """The user's bwd(res, ct_out) -> one cotangent per primal argument (None: zeros), flat."""
    out_tree, res_tree = out_trees()
    res, cts_out = args[: res_tree.num_leaves], args[res_tree.num_leaves :]
    py_cts_in = f(tree_unflatten(res_tree, res), tree_unflatten(out_tree, cts_out))
    arg_trees = treedef_children(in_tree)
    if isinstance(py_cts_in, list) and len(py_cts_in) == len(arg_trees):
        py_cts_in = tuple(py_cts_in)
    structure_ok = isinstance(py_cts_in, tuple) and len(py_cts_in) == len(arg_trees)
    flat: list[Any] = []
    for ct, arg_tree in zip(py_cts_in if structure_ok else (), arg_trees, strict=False):
        if ct is None:
            flat += [None] * arg_tree.num_leaves  # no cotangent for this argument
            continue
        leaves, ct_tree = tree_flatten(ct)
        if ct_tree != arg_tree:
            structure_ok = False
            break
        flat += leaves
    if not structure_ok:
        raise TypeError(
            "Custom VJP bwd rule must produce an output with the same container (pytree) "
            "structure as the args tuple of the primal function, and in particular must "
            "produce a tuple of length equal to the number of arguments to the primal "
            f"function, but got bwd output structure {tree_flatten(py_cts_in)[1]} for primal "
            f"input structure {in_tree}.")
    paths = [p for p, _ in tree_flatten_with_path(tree_unflatten(in_tree, range(len(flat))))[0]]
    results = []
    for path, aval, ct in zip(paths, in_avals, flat, strict=True):
        expected = tangent_aval(aval)
        if ct is None or type(ct) is Zero:
            results.append(Zero(expected))
            continue
        got = core.get_aval(ct)
        if got.shape != expected.shape or got.dtype != expected.dtype:
            raise ValueError(
                "Custom VJP bwd rule must produce an output with the same type as the args "
                f"tuple of the primal function, but at output{keystr(path)} the bwd rule "
                f"produced an output of type {got.str_short()} corresponding to an input of "
                f"type {aval.str_short()}")
        results.append(ct)
    return results
# --8<-- [end:flatten_bwd]


# ------------------------------------------------------------------ the decorators


def _resolve_kwargs(fun: Callable, args: tuple, kwargs: dict) -> tuple:
    """Keyword arguments moved into their positions (the call primitives take positions)."""
    if not kwargs:
        return args
    bound = inspect.signature(fun).bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.args


def _split_nondiff(fun: Callable, nondiff_argnums: tuple[int, ...], args: tuple
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


class custom_jvp:
    """A function with its own forward-mode rule: `@custom_jvp` then `@f.defjvp`."""

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp: Callable | None = None
        self.symbolic_zeros = False

    def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
        """jvp(primals, tangents) -> (primal_out, tangent_out), primals a tuple of arguments."""
        if symbolic_zeros:
            raise NotImplementedError("symbolic_zeros=True is not built in this course")
        self.jvp = jvp
        return jvp

    def defjvps(self, *jvps: Callable | None) -> None:
        """One rule per argument, rule(g, ans, *primals) -> its tangent contribution."""

        def jvp(primals: tuple, tangents: tuple) -> tuple[Any, Any]:
            primal_out = self(*primals)
            contributions = [rule(g, primal_out, *primals)
                             for rule, g in zip(jvps, tangents, strict=True) if rule is not None]
            zeros = tree_map(lambda x: zeros_like_aval(tangent_aval(core.get_aval(x))),
                             primal_out)
            return primal_out, functools.reduce(
                lambda a, b: tree_map(add_jaxvals, a, b), contributions, zeros)

        self.defjvp(jvp)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        name = getattr(self.fun, "__name__", "fun")
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {name} using defjvp.")
        args = _resolve_kwargs(self.fun, args, kwargs)
        fun, static, dyn_args = _split_nondiff(self.fun, self.nondiff_argnums, args)
        rule = self.jvp
        if static:
            rule = functools.update_wrapper(functools.partial(self.jvp, *static), self.jvp)
        args_flat, in_tree = tree_flatten(dyn_args)
        f = lu.wrap_init(fun, debug_info=debug_info("custom_jvp fun", fun, dyn_args, {}))
        jvp_name = getattr(self.jvp, "__name__", "jvp")
        jvp = lu.wrap_init(rule, debug_info=debug_info("custom_jvp jvp", rule,
                                                       (dyn_args, dyn_args), {}))
        flat_fun, out_type1 = _flatten_fun_nokwargs(f, in_tree, use_eq_store=True)
        flat_jvp, out_type2 = _flatten_jvp(jvp, name, jvp_name, in_tree, use_eq_store=True)
        out_flat = custom_jvp_call_p.bind(*args_flat, subfuns=(flat_fun, flat_jvp),
                                          symbolic_zeros=self.symbolic_zeros)
        _, (out_tree, _) = lu.merge_linear_aux(out_type1, out_type2)
        return tree_unflatten(out_tree, out_flat)


class custom_vjp:
    """A function with its own reverse-mode rule: `@custom_vjp` then `f.defvjp(fwd, bwd)`."""

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None
        self.symbolic_zeros = False

    def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False) -> None:
        """fwd(*args) -> (out, residuals); bwd(*nondiff_args, residuals, ct_out) -> a tuple
        of one cotangent per differentiable argument."""
        if symbolic_zeros:
            raise NotImplementedError("symbolic_zeros=True is not built in this course")
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        name = getattr(self.fun, "__name__", "fun")
        if self.fwd is None or self.bwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function {name} using defvjp.")
        args = _resolve_kwargs(self.fun, args, kwargs)
        fun, static, dyn_args = _split_nondiff(self.fun, self.nondiff_argnums, args)
        fwd, _, _ = _split_nondiff(self.fwd, self.nondiff_argnums, args)
        bwd = self.bwd
        if static:
            bwd = functools.update_wrapper(functools.partial(self.bwd, *static), self.bwd)
        args_flat, in_tree = tree_flatten(dyn_args)
        in_avals = tuple(core.get_aval(x) for x in args_flat)
        f = lu.wrap_init(fun, debug_info=debug_info("custom_vjp fun", fun, dyn_args, {}))
        fwd_w = lu.wrap_init(fwd, debug_info=debug_info("custom_vjp fwd", fwd, dyn_args, {}))
        flat_fun, out_type = _flatten_fun_nokwargs(f, in_tree, use_eq_store=True)
        flat_fwd, out_trees = _flatten_fwd(fwd_w, name, getattr(self.fwd, "__name__", "fwd"),
                                           in_tree, use_eq_store=True)
        flat_bwd = _flatten_bwd(lu.wrap_init(bwd), in_tree, in_avals, out_trees)
        out_flat = custom_vjp_call_p.bind(*args_flat, subfuns=(flat_fun, flat_fwd, flat_bwd),
                                          out_trees=out_trees,
                                          symbolic_zeros=self.symbolic_zeros)
        _, (out_tree, _) = lu.merge_linear_aux(out_type, out_trees)
        return tree_unflatten(out_tree, out_flat)
