"""The jaxpr-building trace: run a Python function on tracers and record each primitive.

JAX: the DynamicJaxprTrace half of jax/_src/interpreters/partial_eval.py. (Stage 3 writes the
other half, the known/unknown split, in its own partial_eval.py.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from stages.s01_pytrees import PyTreeDef, tree_flatten

from . import _jax_compat, core, source_info_util
from . import linear_util as lu
from .api_util import argnums_partial, flatten_fun, result_paths, shaped_abstractify
from .api_util import debug_info as api_debug_info
from .core import ShapedArray
from .jaxpr import Atom, ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var, new_jaxpr_eqn

# Rules that compute an equation while staging, when its operands are constants, instead of
# recording it: rule(consts, params) -> the outputs, or None to record the equation after all.
# A const is None where the operand is a tracer; the outputs become constants of the trace.
# JAX: pe.const_fold_rules (its rules also get the output avals).
ConstFoldRule = Callable[[list[Any], dict[str, Any]], list[Any] | None]
const_fold_rules: dict[core.Primitive, ConstFoldRule] = {}

# Staging otherwise than as one equation (stage 7's inline jit). JAX: pe.custom_staging_rules
custom_staging_rules: dict[core.Primitive, Callable[..., Any]] = {}


class JaxprStackFrame:
    """What one trace records: its invars, constants, and equations, in order."""

    def __init__(self, debug_info: lu.DebugInfo | None):
        self.invars: list[Var] = []
        self.eqns: list[JaxprEqn] = []
        self.constvar_to_val: dict[Var, Any] = {}  # insertion order is constvar order
        # one constvar per constant object: id -> (object, tracer); the object is kept alive so
        # its id cannot be reused. JAX: constid_to_tracer, a WeakValueDictionary.
        self.constid_to_tracer: dict[int, tuple[Any, DynamicJaxprTracer]] = {}
        self.debug_info = debug_info

    def newvar(self, aval: ShapedArray) -> Var:
        return Var(aval)

    def add_eqn(self, eqn: JaxprEqn) -> None:
        eqn.source_info = eqn.source_info or source_info_util.current()  # for errors (stage 11)
        self.eqns.append(eqn)

    def to_jaxpr(self, out_tracers: Sequence[DynamicJaxprTracer],
                 debug_info: lu.DebugInfo | None = None) -> tuple[Jaxpr, list[Any]]:
        constvars, constvals = list(self.constvar_to_val), list(self.constvar_to_val.values())
        outvars = [t.val for t in out_tracers]
        jaxpr = Jaxpr(constvars, self.invars, outvars, self.eqns, debug_info=debug_info)
        return jaxpr, constvals

    def find_progenitors(self, tracer: DynamicJaxprTracer) -> list[int]:
        """Positions of the invars `tracer` was computed from (for error messages)."""
        if isinstance(tracer.val, Literal):
            return []
        active = {id(tracer.val)}
        for eqn in reversed(self.eqns):
            if any(id(v) in active for v in eqn.outvars):
                active.update(id(v) for v in eqn.invars if isinstance(v, Var))
        return [i for i, v in enumerate(self.invars) if id(v) in active]


# --8<-- [start:tracer]
class DynamicJaxprTracer(core.Tracer):
    """A tracer that is a variable (or literal) of the jaxpr being built."""

    __slots__ = ("val",)

    def __init__(self, trace: DynamicJaxprTrace, aval: ShapedArray, val: Atom):
        super().__init__(trace, aval)
        self.val = val  # the Var or Literal this tracer stands for in the jaxpr

    _short_repr = _jax_compat.jit_tracer_repr  # printed as JAX's are: JitTracer(f32[3])

    def _origin_msg(self) -> str:
        dbg = self._trace.frame.debug_info
        if dbg is None:
            return ""
        msg = f"\nThe error occurred while tracing the function {dbg.func_src_info} " \
              f"for {dbg.traced_for}. "
        positions = self._trace.frame.find_progenitors(self)
        if positions and dbg.arg_names is not None:
            names = list(dict.fromkeys(dbg.arg_names[i] for i in positions))
            if len(names) == 1:
                what = f"the value of the argument {names[0]}"
            else:
                what = f"the values of the arguments {', '.join(names[:-1])} and {names[-1]}"
            msg += f"This concrete value was not available in Python because it depends on {what}."
        return msg
# --8<-- [end:tracer]


# --8<-- [start:trace]
class DynamicJaxprTrace(core.Trace):
    """Each primitive bound while this trace is current becomes one equation of a jaxpr."""

    def __init__(self, debug_info: lu.DebugInfo | None = None):
        super().__init__()
        self.frame = JaxprStackFrame(debug_info)

    def new_arg(self, aval: ShapedArray) -> DynamicJaxprTracer:
        """A tracer for one input of the function: a new invar."""
        var = self.frame.newvar(aval)
        self.frame.invars.append(var)
        return DynamicJaxprTracer(self, aval, var)

    def to_jaxpr_tracer(self, x: Any) -> DynamicJaxprTracer:
        """Our tracers pass through; anything else is a constant reaching the trace."""
        if isinstance(x, DynamicJaxprTracer) and x._trace is self:
            return x
        return self.new_const(x)

    def new_const(self, c: Any) -> DynamicJaxprTracer:
        """A scalar becomes an inline Literal; an array (or another trace's tracer) a constvar."""
        known = self.frame.constid_to_tracer.get(id(c))
        if known is not None:
            return known[1]
        c_canon = core.canonicalize_value(c)
        aval = core.get_aval(c_canon)
        if core.is_literalable(c_canon):
            return DynamicJaxprTracer(self, aval, Literal(c_canon, aval))
        var = self.frame.newvar(aval)
        tracer = DynamicJaxprTracer(self, aval, var)
        self.frame.constvar_to_val[var] = c_canon
        self.frame.constid_to_tracer[id(c)] = (c, tracer)
        return tracer

    lift = new_const  # JAX: `pure = lift = new_const`

    def process_primitive(self, primitive, tracers, params):
        if primitive in const_fold_rules:
            # the rule sees the constant operands (None for a tracer, a literal's value for
            # one that is a literal: JAX's get_const) and may compute now
            consts = [x.val.val if isinstance(x, DynamicJaxprTracer) and isinstance(
                x.val, Literal) else None if isinstance(x, core.Tracer) else x for x in tracers]
            folded = const_fold_rules[primitive](consts, params)
            if folded is not None:  # constants of this trace: literals, or constvars
                folded = [self.new_const(c) for c in folded]
                return folded if primitive.multiple_results else folded[0]
        tracers = [self.to_jaxpr_tracer(x) for x in tracers]
        if primitive in custom_staging_rules:  # rule(trace, *tracers, **params) -> out tracers
            return custom_staging_rules[primitive](self, *tracers, **params)
        return self.default_process_primitive(primitive, tracers, params)

    def default_process_primitive(self, primitive: core.Primitive,
                                  tracers: list[DynamicJaxprTracer], params: dict) -> Any:
        """Abstract-evaluate, make out tracers on fresh vars, record the equation."""
        # EXERCISE 2.3 (stage-an-equation): out avals, out tracers, and one recorded equation
        out_avals = primitive.abstract_eval(*[t.aval for t in tracers], **params)
        if isinstance(out_avals, (tuple, list)) != primitive.multiple_results:
            raise ValueError(f"{primitive}.abstract_eval() method should return "
                             f"a tuple or a list iff {primitive}.multiple_results.")
        out_avals = list(out_avals) if primitive.multiple_results else [out_avals]
        outvars = [self.frame.newvar(aval) for aval in out_avals]
        invars = [t.val for t in tracers]
        self.frame.add_eqn(new_jaxpr_eqn(invars, outvars, primitive, params))
        out_tracers = [DynamicJaxprTracer(self, v.aval, v) for v in outvars]
        return out_tracers if primitive.multiple_results else out_tracers[0]
        # END EXERCISE

    def to_jaxpr(self, out_tracers: Sequence[DynamicJaxprTracer],
                 debug_info: lu.DebugInfo | None = None) -> tuple[Jaxpr, list[Any]]:
        return self.frame.to_jaxpr(out_tracers, debug_info)
# --8<-- [end:trace]


# --8<-- [start:trace_to_jaxpr]
def trace_to_jaxpr_dynamic(fun: lu.WrappedFun, in_avals: Sequence[ShapedArray]
                           ) -> tuple[Jaxpr, list[ShapedArray], list[Any]]:
    """Run `fun` (flat in, flat out) on one tracer per aval; return (jaxpr, out_avals, consts)."""
    trace = DynamicJaxprTrace(fun.debug_info)
    try:
        in_tracers = [trace.new_arg(aval) for aval in in_avals]
        with core.set_current_trace(trace):
            ans = fun.call_wrapped(*in_tracers)
        _check_returned_jaxtypes(fun, ans)
        out_tracers = [trace.to_jaxpr_tracer(x) for x in ans]
        jaxpr, consts = trace.to_jaxpr(out_tracers, fun.debug_info)
    finally:
        trace.invalidate()  # a tracer that escaped now fails loudly when used
    return jaxpr, [v.aval for v in jaxpr.outvars], consts


def trace_to_jaxpr(fun: Callable, args: Sequence[Any], kwargs: dict[str, Any],
                   debug_info: lu.DebugInfo | None, static_argnums: Sequence[int] = (),
                   require_static_args_hashable: bool = True
                   ) -> tuple[ClosedJaxpr, list[Any], PyTreeDef]:
    """Trace `fun(*args, **kwargs)` once: the arguments at `static_argnums` reach it as the
    Python values they are, every leaf of the others as a tracer.

    Returns the closed jaxpr, the leaves it takes (the flat non-static arguments), and the
    treedef of fun's output.
    """
    # JAX: pe.trace_to_jaxpr, which takes the arguments' avals (statics inside) as a FlatTree
    if debug_info is None:  # a caller with nothing to say about the function: jit's words
        debug_info = api_debug_info("jit", fun, args, kwargs, static_argnums)
    f = lu.wrap_init(fun, debug_info=debug_info)
    if static_argnums:
        dyn_argnums = [i for i in range(len(args)) if i not in static_argnums]
        f, args = argnums_partial(f, dyn_argnums, args, require_static_args_hashable)
    args_flat, in_tree = tree_flatten((args, kwargs))
    flat_fun, out_tree = flatten_fun(f, in_tree)
    in_avals = [shaped_abstractify(fun, x, path)
                for x, path in zip(args_flat, debug_info.arg_names, strict=True)]
    jaxpr, _, consts = trace_to_jaxpr_dynamic(flat_fun, in_avals)
    return ClosedJaxpr(jaxpr, consts), args_flat, out_tree()
# --8<-- [end:trace_to_jaxpr]


# --8<-- [start:cached]
@lu.cache
def _cached_trace_to_jaxpr(fun: lu.WrappedFun, in_type: tuple[ShapedArray, ...]
                           ) -> tuple[Jaxpr, list[ShapedArray], list[Any]]:
    """trace_to_jaxpr_dynamic, memoized on fun's transformation stack and the input avals.

    A new shape, dtype or weak type is a new key, so a new trace: the jaxpr is specialized to
    its avals. (JAX's jit now uses its own weakref cache here; stage 7 builds jit on this.)
    """
    return trace_to_jaxpr_dynamic(fun, in_type)
# --8<-- [end:cached]


def _check_returned_jaxtypes(fun: lu.WrappedFun, ans: Sequence[Any]) -> None:
    for i, x in enumerate(ans):
        try:
            core.get_aval(x)
        except TypeError:
            dbg = fun.debug_info
            where = f"function {dbg.func_src_info} traced for {dbg.traced_for}" if dbg else \
                "the traced function"
            path = _result_path(fun, i, len(ans))
            raise TypeError(f"{where} returned a value of type {type(x)}"
                            f"{f' at output component {path}' if path else ''}, which is not "
                            "a valid JAX type") from None


def _result_path(fun: lu.WrappedFun, i: int, n: int) -> str:
    """Where output leaf i sits in what the function returned (`[1]['k']`), read from the
    tree its flattening stored; nothing for a lone leaf (JAX: resolve_result_paths)."""
    trees = [s.val for s in fun.stores if s and isinstance(s.val, PyTreeDef)]
    if not trees or trees[0].num_leaves != n:
        return f"{i}" if n > 1 else ""
    return result_paths(trees[0])[i].removeprefix("result")


def convert_constvars_jaxpr(jaxpr: Jaxpr) -> Jaxpr:
    """The same jaxpr with its constvars moved to the front of its invars."""
    return jaxpr.replace(constvars=[], invars=[*jaxpr.constvars, *jaxpr.invars])


def trace_to_closed_jaxpr(fun: lu.WrappedFun, in_avals: Sequence[ShapedArray]) -> ClosedJaxpr:
    """trace_to_jaxpr_dynamic, its constants closed over: for a flat function's jaxpr."""
    jaxpr, _, consts = trace_to_jaxpr_dynamic(fun, in_avals)
    return ClosedJaxpr(jaxpr, consts)
