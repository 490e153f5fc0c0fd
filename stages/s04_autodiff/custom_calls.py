"""The custom_jvp_call and custom_vjp_call primitives, and how each trace processes them.

JAX: `CustomJVPCallPrimitive` and `CustomVJPCallPrimitive` in jax/_src/custom_derivatives.py;
the `process_custom_jvp_call` / `process_custom_vjp_call` methods of EvalTrace (core.py),
DynamicJaxprTrace and JaxprTrace (interpreters/partial_eval.py) and JVPTrace (with
`custom_lin_p`, interpreters/ad.py). A decorated function binds one primitive carrying the
function *and* its rule as `subfuns`; what that means depends on the trace, so the primitive
looks the trace's type up in a table, `custom_jvp_call_rules` or `custom_vjp_call_rules`, and
every trace class has its entry: the eval trace calls the function, the jaxpr trace stages one
equation holding the function's jaxpr and the rule, JVPTrace uses the rule instead of
differentiating the body. Stages 2 and 3 predate custom derivatives, so their traces' rules are
here; stage 5 registers BatchTrace's. A trace with no entry fails, naming the table.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from stages.s02_tracing import core, dtypes
from stages.s02_tracing import linear_util as lu
from stages.s02_tracing.core import ClosedJaxpr
from stages.s02_tracing.partial_eval import (
    DynamicJaxprTrace,
    convert_constvars_jaxpr,
    trace_to_closed_jaxpr,
    trace_to_jaxpr_dynamic,
)
from stages.s03_partial_eval import partial_eval as pe

from . import ad
from .ad import JVPTrace, instantiate_zeros, maybe_jvp_tracer
from .ad_util import SymbolicZero, Zero, instantiate, tangent_aval

# A rule is rule(trace, primitive, fun, *rules, tracers, **params) -> the outputs, where rules
# are (jvp,) for custom_jvp_call and (fwd, bwd) for custom_vjp_call. Keyed by trace type.
CustomCallRule = Callable[..., list[Any]]
custom_jvp_call_rules: dict[type, CustomCallRule] = {}
custom_vjp_call_rules: dict[type, CustomCallRule] = {}


class CustomCallPrimitive(core.Primitive):
    """Bound as `prim.bind(*args, subfuns=(fun, *rules), **params)`; the trace's rule runs."""

    multiple_results = True

    def __init__(self, name: str, rules: dict[type, CustomCallRule], rule_params: tuple):
        super().__init__(name)
        self.rules = rules  # the table keyed by trace type
        self.rule_params = rule_params  # the params holding the staged rules (see lift_rules)

    def bind_with_trace(self, trace, args, params):
        params = dict(params)
        fun, *rules = params.pop("subfuns")
        rule = self.rules.get(type(trace))
        if rule is None:
            table = f"{self.name}_rules"
            raise NotImplementedError(f"'{self.name}' has no rule for {type(trace).__name__} "
                                      f"in {table}")
        # the user's functions see canonical values, as JAX's bind gives every primitive
        args = [dtypes.canonicalize_value(x) for x in args]
        return rule(trace, self, fun, *rules, args, **params)

    def abstract_eval(self, *avals, call_jaxpr, **params):
        return call_jaxpr.out_avals

    def get_bind_params(self, params):
        """A staged equation's params back to `subfuns`, for eval_jaxpr to bind again."""
        new_params = dict(params)
        call_jaxpr, num_consts = new_params.pop("call_jaxpr"), new_params.pop("num_consts")
        staged = [new_params.pop(name) for name in self.rule_params]
        # the traced function's debug info goes with it: bound again, it keeps its name
        fun = lu.wrap_init(core.jaxpr_as_fun(call_jaxpr), debug_info=call_jaxpr.jaxpr.debug_info)
        new_params["subfuns"] = (fun, *self.lift_rules(call_jaxpr, num_consts, *staged))
        return new_params

    def lift_rules(self, call_jaxpr: ClosedJaxpr, num_consts: int, *staged: Any) -> tuple:
        raise NotImplementedError  # each of the two primitives below says how


class CustomJVPCallPrimitive(CustomCallPrimitive):
    """custom_jvp_call: subfuns=(fun, jvp)."""

    def lift_rules(self, call_jaxpr, num_consts, jvp_jaxpr_fun):
        return (lift_jvp(num_consts, jvp_jaxpr_fun),)


class CustomVJPCallPrimitive(CustomCallPrimitive):
    """custom_vjp_call: subfuns=(fun, fwd, bwd)."""

    def lift_rules(self, call_jaxpr, num_consts, fwd_jaxpr_thunk, bwd):
        const_avals = tuple(call_jaxpr.in_avals[:num_consts])
        return lift_fwd(num_consts, fwd_jaxpr_thunk), _handle_consts_in_bwd(bwd, const_avals)


custom_jvp_call_p = CustomJVPCallPrimitive("custom_jvp_call", custom_jvp_call_rules,
                                           ("jvp_jaxpr_fun",))
custom_vjp_call_p = CustomVJPCallPrimitive("custom_vjp_call", custom_vjp_call_rules,
                                           ("fwd_jaxpr_thunk", "bwd"))


def lift_jvp(num_consts: int, jvp_jaxpr_fun: lu.WrappedFun) -> lu.WrappedFun:
    """The staged jvp rule as a function of (consts, primals, consts' tangents, tangents); a
    SymbolicZero tangent (symbolic_zeros) selects the rule traced with that zero."""
    def jvp(*xs: Any) -> list[Any]:
        n = len(xs) // 2
        primals, tangents = xs[num_consts:n], xs[n + num_consts:]
        zeros = [type(t) is SymbolicZero for t in tangents]
        closed, out_zeros = jvp_jaxpr_fun.call_wrapped(*zeros)
        nonzero = [t for t in tangents if type(t) is not SymbolicZero]
        out = core.eval_jaxpr(closed.jaxpr, closed.consts, *primals, *nonzero)
        primals_out, nonzero_out = out[:len(out_zeros)], iter(out[len(out_zeros):])
        tangents_out = [SymbolicZero.from_primal_value(p) if zero else next(nonzero_out)
                        for p, zero in zip(primals_out, out_zeros, strict=True)]
        return [*primals_out, *tangents_out]

    return lu.wrap_init(jvp, debug_info=jvp_jaxpr_fun.debug_info)


def lift_fwd(num_consts: int, fwd_jaxpr_thunk: lu.WrappedFun) -> lu.WrappedFun:
    """The staged fwd rule as a function of (value, perturbed) pairs for (consts, args)."""
    def fwd(*args: Any) -> list[Any]:
        vals, perturbed = args[::2], args[1::2]
        closed = fwd_jaxpr_thunk.call_wrapped(*perturbed[num_consts:])
        return core.eval_jaxpr(closed.jaxpr, closed.consts, *vals[num_consts:])

    return lu.wrap_init(fwd, debug_info=fwd_jaxpr_thunk.debug_info)


@lu.transformation2
def _handle_consts_in_bwd(f: Callable, const_avals: tuple, *args: Any) -> list[Any]:
    # constants of the primal function get no cotangent (JAX raises if they needed one)
    return [Zero(tangent_aval(a)) for a in const_avals] + list(f(*args))


# ------------------------------------------------------------------ the eval trace


def _inline(trace: core.Trace, primitive: core.Primitive, fun: lu.WrappedFun, *rest: Any,
            **params: Any) -> list[Any]:
    """Call the function itself under `trace`; the custom rule is not needed."""
    # JAX: EvalTrace.process_custom_jvp_call (and JaxprTrace's, for unknown inputs)
    tracers = rest[-1]
    with core.set_current_trace(trace):
        return fun.call_wrapped(*tracers)


# ------------------------------------------------------------------ the jaxpr-building trace


def _stage_custom_call(trace: DynamicJaxprTrace, primitive: core.Primitive,
                       fun: lu.WrappedFun, tracers: Sequence[Any], params: dict) -> list[Any]:
    """One equation holding fun's jaxpr (its constants become leading operands)."""
    tracers = [trace.to_jaxpr_tracer(t) for t in tracers]
    fun_jaxpr, _, consts = trace_to_jaxpr_dynamic(fun, [t.aval for t in tracers])
    call_jaxpr = ClosedJaxpr(convert_constvars_jaxpr(fun_jaxpr), [])
    params = dict(params, call_jaxpr=call_jaxpr, num_consts=len(consts))
    const_tracers = [trace.to_jaxpr_tracer(c) for c in consts]
    return trace.default_process_primitive(primitive, [*const_tracers, *tracers], params)


def _memoize(thunk: Callable[..., Any]) -> Callable[..., Any]:
    """thunk(*flags), computed once per flags."""
    cells: dict[tuple, Any] = {}

    def memoized(*args: Any) -> Any:
        if args not in cells:
            cells[args] = thunk(*args)
        return cells[args]

    return memoized


@lu.transformation2
def _interleave_fun(f: Callable, every_others: tuple, *args: Any) -> Any:
    """f of (arg, flag) pairs as a function of the args alone, the flags fixed."""
    return f(*[x for pair in zip(args, every_others, strict=True) for x in pair])


@lu.transformation_with_aux2
def _jvp_jaxpr_zeros(f: Callable, store: lu.Store, in_zeros: tuple, zero_avals: tuple,
                     *primals_and_tangents: Any) -> list[Any]:
    """The rule as a function of the primals and the nonzero tangents (a SymbolicZero for each
    of the others); its zero output tangents are dropped, their positions stored."""
    n = len(in_zeros)
    primals, nonzero = primals_and_tangents[:n], iter(primals_and_tangents[n:])
    zeros = iter(SymbolicZero(a) for a in zero_avals)
    tangents = [next(zeros) if z else next(nonzero) for z in in_zeros]
    out = f(*primals, *tangents)
    primals_out, tangents_out = out[:len(out) // 2], out[len(out) // 2:]
    out_zeros = [type(t) is SymbolicZero for t in tangents_out]
    store.store(out_zeros)
    return [*primals_out, *[t for t, z in zip(tangents_out, out_zeros, strict=True) if not z]]


def _dynamic_custom_jvp_call(trace, primitive, fun, jvp, tracers, *, symbolic_zeros):
    # JAX: DynamicJaxprTrace.process_custom_jvp_call in interpreters/partial_eval.py
    in_avals = [core.get_aval(t) for t in tracers]
    tangent_avals = [tangent_aval(a) for a in in_avals]

    def jvp_jaxpr(*in_zeros: bool) -> tuple[ClosedJaxpr, list[bool]]:
        # the rule traced for one pattern of zero tangents (it may branch on them)
        zero_avals = tuple(a for a, z in zip(tangent_avals, in_zeros, strict=True) if z)
        nonzero_avals = [a for a, z in zip(tangent_avals, in_zeros, strict=True) if not z]
        rule, out_zeros = _jvp_jaxpr_zeros(jvp, in_zeros, zero_avals)
        return trace_to_closed_jaxpr(rule, [*in_avals, *nonzero_avals]), out_zeros()
    jvp_jaxpr_fun = lu.wrap_init(_memoize(jvp_jaxpr), debug_info=jvp.debug_info)
    params = dict(jvp_jaxpr_fun=jvp_jaxpr_fun, symbolic_zeros=symbolic_zeros)
    return _stage_custom_call(trace, primitive, fun, tracers, params)


def _dynamic_custom_vjp_call(trace, primitive, fun, fwd, bwd, tracers, *, out_trees,
                             symbolic_zeros):
    # JAX: DynamicJaxprTrace.process_custom_vjp_call in interpreters/partial_eval.py
    in_avals = [core.get_aval(t) for t in tracers]

    def fwd_jaxpr(*perturbed: bool) -> ClosedJaxpr:
        # fwd traced for one pattern of perturbed arguments (it may branch on them)
        return trace_to_closed_jaxpr(_interleave_fun(fwd, perturbed), in_avals)
    fwd_jaxpr_thunk = lu.wrap_init(_memoize(fwd_jaxpr), debug_info=fwd.debug_info)
    params = dict(fwd_jaxpr_thunk=fwd_jaxpr_thunk, bwd=bwd, out_trees=out_trees,
                  symbolic_zeros=symbolic_zeros)
    return _stage_custom_call(trace, primitive, fun, tracers, params)


# ------------------------------------------------------------------ the partial-eval trace


def _jaxpr_trace_custom_call(trace, primitive, fun, *rest, **params):
    """Known inputs: bind on the parent trace, rules and all. Unknown ones, for a custom_jvp:
    partial eval is building a linear function, where the rule is not needed: call the
    function. For a custom_vjp the unknown call is recorded whole, `bwd` kept: a later grad of
    the unknown jaxpr must still use it."""
    # JAX: JaxprTrace.process_custom_jvp_call and process_custom_vjp_call
    *rules, tracers = rest
    tracers = [trace.to_jaxpr_tracer(t) for t in tracers]
    if all(t.is_known() for t in tracers):
        vals = [t.pval.get_known() for t in tracers]
        with core.set_current_trace(trace.parent_trace):
            return primitive.bind(*vals, subfuns=(fun, *rules), **params)
    if primitive is custom_vjp_call_p:
        return _dynamic_custom_vjp_call(trace, primitive, fun, *rules, tracers, **params)
    with core.set_current_trace(trace):
        return fun.call_wrapped(*tracers)


# ------------------------------------------------------------------ the jvp trace


def _jvp_custom_jvp_call(trace: JVPTrace, primitive: core.Primitive, fun: lu.WrappedFun,
                         jvp: lu.WrappedFun, tracers: Sequence[Any], *,
                         symbolic_zeros: bool) -> list[Any]:
    """A custom_jvp function: its own rule replaces differentiating its body."""
    # JAX: JVPTrace.process_custom_jvp_call in interpreters/ad.py
    primals_in, tangents_in = zip(*map(trace.to_primal_tangent_pair, tracers), strict=True)
    if all(type(t) is Zero for t in tangents_in):
        params = dict(subfuns=(fun, jvp), symbolic_zeros=symbolic_zeros)
        return primitive.bind_with_trace(trace.parent_trace, primals_in, params)
    with core.set_current_trace(trace.parent_trace):
        # symbolic_zeros: the rule sees a zero as SymbolicZero, and may answer with one
        tangents_in = [SymbolicZero(t.aval) if symbolic_zeros and type(t) is Zero else
                       instantiate_zeros(t) for t in tangents_in]
        outs = jvp.call_wrapped(*primals_in, *tangents_in)
    primals_out, tangents_out = outs[: len(outs) // 2], outs[len(outs) // 2 :]
    tangents_out = [Zero(t.aval) if isinstance(t, SymbolicZero) else t for t in tangents_out]
    return [maybe_jvp_tracer(trace, p, t)
            for p, t in zip(primals_out, tangents_out, strict=True)]


def _jvp_custom_vjp_call(trace: JVPTrace, primitive: core.Primitive, fun: lu.WrappedFun,
                         fwd: lu.WrappedFun, bwd: lu.WrappedFun, tracers: Sequence[Any], *,
                         out_trees: Callable, symbolic_zeros: bool) -> list[Any]:
    """A custom_vjp function: run fwd for outputs and residuals; the tangents are one
    `custom_lin` equation whose transpose is bwd."""
    # JAX: JVPTrace.process_custom_vjp_call in interpreters/ad.py
    primals_in, tangents_in = zip(*map(trace.to_primal_tangent_pair, tracers), strict=True)
    if all(type(t) is Zero for t in tangents_in):
        params = dict(subfuns=(fun, fwd, bwd), out_trees=out_trees,
                      symbolic_zeros=symbolic_zeros)
        return primitive.bind_with_trace(trace.parent_trace, primals_in, params)
    # EXERCISE 4.7 (custom-vjp): run fwd, then bind custom_lin on the residuals and tangents
    # fwd takes (primal, perturbed) pairs: perturbed where the tangent is not a symbolic zero
    fwd_in = [x for p, t in zip(primals_in, tangents_in, strict=True)
              for x in (p, type(t) is not Zero)]
    with core.set_current_trace(trace.parent_trace):
        res_and_primals_out = fwd.call_wrapped(*fwd_in)
    _, res_tree = out_trees()
    res, primals_out = (res_and_primals_out[: res_tree.num_leaves],
                        res_and_primals_out[res_tree.num_leaves :])
    in_zeros = [type(t) is Zero for t in tangents_in]
    nz_tangents = [t for t in tangents_in if type(t) is not Zero]
    out_avals = [tangent_aval(core.get_aval(p)) for p in primals_out]
    with core.set_current_trace(trace.parent_trace):
        tangents_out = custom_lin_p.bind(
            *res, *nz_tangents, num_res=len(res), bwd=bwd, out_avals=out_avals,
            symbolic_zeros=symbolic_zeros, in_zeros=in_zeros)
    # END EXERCISE
    return [maybe_jvp_tracer(trace, p, t)
            for p, t in zip(primals_out, tangents_out, strict=True)]


def raise_custom_vjp_error_on_jvp(*args: Any, **params: Any) -> Any:
    raise TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.")


# The tangent half of a custom_vjp function under differentiation: it can only be transposed
# (into the user's bwd), never evaluated, so forward mode through a custom_vjp fails.
custom_lin_p = core.Primitive("custom_lin")
custom_lin_p.multiple_results = True
custom_lin_p.def_impl(raise_custom_vjp_error_on_jvp)
custom_lin_p.def_abstract_eval(lambda *avals, out_avals, **params: list(out_avals))


def _custom_lin_transpose(cts_out: list[Any], *invals: Any, num_res: int, bwd: lu.WrappedFun,
                          out_avals: Any, symbolic_zeros: bool, in_zeros: Sequence[bool]
                          ) -> list[Any]:
    res = invals[:num_res]
    # with symbolic_zeros bwd sees a zero cotangent as SymbolicZero, else as zeros
    cts_out = [SymbolicZero(ct.aval) if symbolic_zeros and type(ct) is Zero else instantiate(ct)
               for ct in cts_out]
    cts_in = bwd.call_wrapped(*res, *cts_out)
    nonzero_cts_in = [ct for ct, zero in zip(cts_in, in_zeros, strict=True) if not zero]
    return [None] * num_res + nonzero_cts_in


def _custom_jvp_call_transpose(cts: list[Any], *args: Any, call_jaxpr: ClosedJaxpr,
                               num_consts: int, jvp_jaxpr_fun: lu.WrappedFun,
                               symbolic_zeros: bool) -> list[Any]:
    """A custom_jvp function in a linear jaxpr (under linear_transpose): transpose its body.

    The custom rule says how to go forward; going backwards needs only the body, linear here.
    """
    # JAX: _custom_jvp_call_transpose_fancy (in ad.fancy_transposes; ours is an ordinary rule)
    return ad.backward_pass(call_jaxpr.jaxpr, call_jaxpr.consts, args, cts)


# ------------------------------------------------------------------ printing


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


def _custom_lin_pp_rule(eqn: core.JaxprEqn, context: Any, settings: Any) -> Any:
    params = dict(eqn.params)
    del params["out_avals"]
    params["bwd"] = params["bwd"].__name__
    return core.default_pp_eqn(eqn.replace(params=params), context, settings)


# ------------------------------------------------------------------ registrations

for _trace_type, _jvp_rule, _vjp_rule in [
    (core.EvalTrace, _inline, _inline),
    (DynamicJaxprTrace, _dynamic_custom_jvp_call, _dynamic_custom_vjp_call),
    (pe.JaxprTrace, _jaxpr_trace_custom_call, _jaxpr_trace_custom_call),
    (JVPTrace, _jvp_custom_jvp_call, _jvp_custom_vjp_call),
]:
    custom_jvp_call_rules[_trace_type] = _jvp_rule
    custom_vjp_call_rules[_trace_type] = _vjp_rule

ad.primitive_transposes[custom_lin_p] = _custom_lin_transpose
ad.primitive_transposes[custom_jvp_call_p] = _custom_jvp_call_transpose
core.pp_eqn_rules[custom_lin_p] = _custom_lin_pp_rule
core.pp_eqn_rules[custom_jvp_call_p] = functools.partial(
    _custom_call_pp_rule, (), {"jvp_jaxpr_fun": "jvp"})
core.pp_eqn_rules[custom_vjp_call_p] = functools.partial(
    _custom_call_pp_rule, ("out_trees",), {"fwd_jaxpr_thunk": "fwd", "bwd": "bwd"})
