"""Partial evaluation: one traced call split into a known program and an unknown one.

JAX: jax/_src/interpreters/partial_eval.py. Stage 2 wrote that file's DynamicJaxprTrace half;
this is its known/unknown half. Every value carries one bit, known or unknown, and one rule
moves the bit through a program: an operation is known only if every one of its inputs is
known. Known operations run while tracing (on the parent trace); unknown ones are recorded as
equations of a second jaxpr. The known values that second jaxpr reads are its residuals.

Here: `PartialVal`, `JaxprTracer` and `JaxprTrace` (the trace-level form, which stage 4's
`linearize` runs over a jvp), `trace_to_jaxpr_nounits`, and `partial_eval_jaxpr_nounits` (the
same trace applied to an existing jaxpr). The equation-level passes live beside this file,
dce.py and partial_eval_custom.py, and are re-exported below under JAX's `pe.` names.
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from stages.s02_tracing import core
from stages.s02_tracing import linear_util as lu
from stages.s02_tracing.core import ClosedJaxpr, Jaxpr, Literal, ShapedArray, Var
from stages.s02_tracing.partial_eval import convert_constvars_jaxpr, trace_to_jaxpr_dynamic

# JAX keeps these in partial_eval.py too; ours are split out by concept and re-exported here.
from .dce import dce_jaxpr, dce_rules, has_effects  # noqa: F401
from .partial_eval_custom import (  # noqa: F401
    Recompute,
    Saveable,
    call_partial_eval_custom_rule,
    default_partial_eval_custom_rule,
    ensure_enum,
    everything_saveable,
    partial_eval_jaxpr_custom,
    partial_eval_jaxpr_custom_rules,
)


# --8<-- [start:partial_val]
class PartialVal(tuple):
    """A value that is known, `(None, value)`, or unknown, `(aval, None)`: one bit, plus data."""

    def __new__(cls, xs: tuple[ShapedArray | None, Any]) -> PartialVal:
        aval, const = xs
        if (aval is None) == (const is None):
            raise ValueError(f"a PartialVal is (aval, None) or (None, value), got {xs!r}")
        return tuple.__new__(cls, xs)

    @classmethod
    def known(cls, const: Any) -> PartialVal:
        return PartialVal((None, const))

    @classmethod
    def unknown(cls, aval: ShapedArray) -> PartialVal:
        return PartialVal((aval, None))

    def is_known(self) -> bool:
        return self[0] is None

    def get_known(self) -> Any:
        """The value if known, else None."""
        return self[1] if self[0] is None else None

    def get_aval(self) -> ShapedArray:
        """The aval: given when unknown, read off the value when known."""
        known = self.get_known()
        return self[0] if known is None else core.get_aval(known)
# --8<-- [end:partial_val]


# A tracer's recipe says how the unknown jaxpr will compute it (JAX: JaxprTracerRecipe).
class LambdaBinding(NamedTuple):
    """An unknown input: an invar of the unknown jaxpr."""


class ConstVar(NamedTuple):
    """A known value the unknown side reads: a constvar of the unknown jaxpr, i.e. a residual."""

    val: Any


class JaxprEqnRecipe(NamedTuple):
    """An unknown value some recorded equation computes."""

    eqn_id: int  # recording order; equations come out of tracers_to_jaxpr in this order
    in_tracers: tuple[JaxprTracer, ...]
    out_tracer_refs: list[weakref.ref]  # weak: an output nobody holds becomes a DropVar `_`
    out_avals: list[ShapedArray]
    primitive: core.Primitive
    params: dict[str, Any]


class JaxprTracer(core.Tracer):
    """A tracer with a PartialVal; if unknown, a recipe for it in the unknown jaxpr."""

    __slots__ = ("pval", "recipe")

    def __init__(self, trace: JaxprTrace, pval: PartialVal,
                 recipe: LambdaBinding | ConstVar | JaxprEqnRecipe | Literal | None):
        super().__init__(trace, pval.get_aval())
        self.pval = pval
        self.recipe = recipe

    def __repr__(self) -> str:
        return f"Traced<{self.aval}:{self._trace}>"

    @property
    def parents(self) -> list[JaxprTracer]:
        """The tracers this one is computed from (the edges toposort walks)."""
        if isinstance(self.recipe, JaxprEqnRecipe):
            return list(self.recipe.in_tracers)
        return []

    def is_known(self) -> bool:
        return self.pval.is_known()


# Rules for primitives that split themselves (JAX: custom_partial_eval_rules). A rule is
# rule(trace, *tracers, **params) -> out tracer(s). Empty here; stage 6 and later fill it.
custom_partial_eval_rules: dict[core.Primitive, Callable] = {}


# --8<-- [start:jaxpr_trace]
class JaxprTrace(core.Trace):
    """Runs known operations on `parent_trace`; records unknown ones as equation recipes."""

    # JAX: JaxprTrace(parent_trace, name_stack, tag); we keep no name stack and no tag.
    def __init__(self, parent_trace: core.Trace):
        super().__init__()
        self.parent_trace = parent_trace  # eager evaluation, or the trace of the known jaxpr
        self.counter = itertools.count()

    def to_jaxpr_tracer(self, x: Any) -> JaxprTracer:
        """Our tracers pass through; any other value is a known constant."""
        if isinstance(x, JaxprTracer) and x._trace is self:
            return x
        return self.new_const(x)

    def new_const(self, val: Any) -> JaxprTracer:
        return JaxprTracer(self, PartialVal.known(val), None)

    def new_arg(self, pval: PartialVal) -> JaxprTracer:
        """A tracer for one input. A known input is a plain constant: the unknown jaxpr never
        binds it as an input, it reaches that jaxpr only as a residual."""
        const = pval.get_known()
        if const is None:
            return JaxprTracer(self, PartialVal.unknown(pval.get_aval()), LambdaBinding())
        return self.new_const(const)

    def new_instantiated_literal(self, val: Any) -> JaxprTracer:
        aval = core.get_aval(val)
        return JaxprTracer(self, PartialVal.unknown(aval), Literal(val, aval))

    def new_instantiated_const(self, val: Any) -> JaxprTracer:
        return JaxprTracer(self, PartialVal.unknown(core.get_aval(val)), ConstVar(val))

    def instantiate_const(self, tracer: JaxprTracer) -> JaxprTracer:
        """Make a known tracer usable by the unknown jaxpr: a scalar constant is inlined as a
        Literal, anything else becomes a ConstVar, i.e. a residual (what known work computed
        is an Array or a tracer, never inlined, even 0-d: as in JAX)."""
        const = tracer.pval.get_known()
        if const is None:
            return tracer
        if core.is_literalable(const):
            return self.new_instantiated_literal(const)
        return self.new_instantiated_const(const)

    def process_primitive(self, primitive, tracers, params):
        # Known work is bound on the parent trace (JAX does the same, under set_current_trace).
        with core.set_current_trace(self.parent_trace):
            rule = custom_partial_eval_rules.get(primitive)
            if rule is not None:
                out = rule(self, *[self.to_jaxpr_tracer(t) for t in tracers], **params)
            else:
                out = self.default_process_primitive(primitive, tracers, params)
        return out

    def default_process_primitive(self, primitive: core.Primitive, tracers: Sequence[Any],
                                  params: dict) -> Any:
        """The one rule: known only if every input is known; otherwise record an equation."""
        tracers = [self.to_jaxpr_tracer(t) for t in tracers]
        # EXERCISE 3.1 (known-rule): if every input is known, bind on the parent trace and return
        consts = [t.pval.get_known() for t in tracers]
        if all(c is not None for c in consts):
            return primitive.bind_with_trace(self.parent_trace, consts, params)
        # END EXERCISE
        # EXERCISE 3.2 (record-unknown): instantiate inputs, make unknown out tracers, one recipe
        tracers = [self.instantiate_const(t) for t in tracers]
        out = primitive.abstract_eval(*[t.aval for t in tracers], **params)
        out_avals = list(out) if primitive.multiple_results else [out]
        out_tracers = [JaxprTracer(self, PartialVal.unknown(a), None) for a in out_avals]
        recipe = new_eqn_recipe(self, tracers, out_tracers, primitive, params)
        for t in out_tracers:
            t.recipe = recipe
        return out_tracers if primitive.multiple_results else out_tracers[0]
        # END EXERCISE
# --8<-- [end:jaxpr_trace]


def new_eqn_recipe(trace: JaxprTrace, in_tracers: Sequence[JaxprTracer],
                   out_tracers: Sequence[JaxprTracer], primitive: core.Primitive,
                   params: dict[str, Any]) -> JaxprEqnRecipe:
    return JaxprEqnRecipe(next(trace.counter), tuple(in_tracers),
                          [weakref.ref(t) for t in out_tracers],
                          [t.aval for t in out_tracers], primitive, params)


def toposort(end_nodes: Sequence[JaxprTracer]) -> list[JaxprTracer]:
    """Every node reachable from `end_nodes` through `.parents`, parents before children.

    JAX: util.toposort (C++ in jaxlib today); same algorithm, so residuals come out in
    JAX's order: count each node's children, then peel childless nodes off the ends.
    """
    ends = list({id(n): n for n in end_nodes}.values())
    child_counts: dict[int, int] = {}
    stack = list(ends)
    while stack:
        node = stack.pop()
        if id(node) in child_counts:
            child_counts[id(node)] += 1
        else:
            child_counts[id(node)] = 1
            stack.extend(node.parents)
    for node in ends:
        child_counts[id(node)] -= 1
    order: list[JaxprTracer] = []
    childless = [n for n in ends if child_counts[id(n)] == 0]
    while childless:
        node = childless.pop()
        order.append(node)
        for parent in node.parents:
            if child_counts[id(parent)] == 1:
                childless.append(parent)
            else:
                child_counts[id(parent)] -= 1
    return order[::-1]


# --8<-- [start:tracers_to_jaxpr]
def tracers_to_jaxpr(in_tracers: Sequence[JaxprTracer], out_tracers: Sequence[JaxprTracer]
                     ) -> tuple[Jaxpr, list[Any]]:
    """The unknown jaxpr: what `out_tracers` need, from `in_tracers` and constants.

    Returns (jaxpr, consts): one constvar per distinct ConstVar value, i.e. the residuals.
    Only recipes reachable from the outputs are visited, so unused unknown work is dropped.
    """
    # JAX also returns an `env` for tracers of an enclosing JaxprTrace; we never nest them.
    t_to_var: dict[int, Var] = {}
    consts: dict[Var, Any] = {}
    constid_to_var: dict[int, Var] = {}  # one residual per value, however often it is read
    processed_eqn_ids: set[int] = set()
    eqns: list[core.JaxprEqn] = []

    def get_atom(t: JaxprTracer) -> core.Atom:
        return t.recipe if isinstance(t.recipe, Literal) else t_to_var[id(t)]

    def newvar(t: JaxprTracer) -> Var:
        var = t_to_var[id(t)] = Var(t.aval)
        return var

    def sort_key(t: JaxprTracer) -> int:
        return t.recipe.eqn_id if isinstance(t.recipe, JaxprEqnRecipe) else -1

    for t in sorted(toposort([*in_tracers, *out_tracers]), key=sort_key):
        r = t.recipe
        if isinstance(r, JaxprEqnRecipe):
            if r.eqn_id not in processed_eqn_ids:
                in_atoms = [get_atom(x) for x in r.in_tracers]
                outvars = [core.DropVar(a) if ref() is None else newvar(ref())
                           for a, ref in zip(r.out_avals, r.out_tracer_refs, strict=True)]
                eqns.append(core.new_jaxpr_eqn(in_atoms, outvars, r.primitive, r.params))
                processed_eqn_ids.add(r.eqn_id)
        elif isinstance(r, LambdaBinding):
            if not any(t is x for x in in_tracers):
                raise core.escaped_tracer_error(t)
            newvar(t)
        elif isinstance(r, ConstVar):
            var = constid_to_var.get(id(r.val))
            if var is None:
                var = constid_to_var[id(r.val)] = newvar(t)
                consts[var] = r.val
            t_to_var[id(t)] = var
        elif not isinstance(r, Literal):
            raise TypeError(f"tracer {t!r} has no recipe for the unknown jaxpr")
    jaxpr = Jaxpr(list(consts), [get_atom(t) for t in in_tracers],
                  [get_atom(t) for t in out_tracers], eqns)
    return jaxpr, list(consts.values())
# --8<-- [end:tracers_to_jaxpr]


def _trace_to_subjaxpr_nounits(f: Callable, trace: JaxprTrace,
                               instantiate: bool | Sequence[bool], in_pvals: Sequence[PartialVal]
                               ) -> tuple[list[JaxprTracer], Jaxpr, list[Any]]:
    """Run `f` under `trace`: known inputs as plain values, unknown ones as tracers."""
    known_vals = iter([p.get_known() for p in in_pvals if p.is_known()])
    in_tracers = [trace.new_arg(p) for p in in_pvals if not p.is_known()]
    unknown_tracers = iter(in_tracers)
    in_args = [next(known_vals) if p.is_known() else next(unknown_tracers) for p in in_pvals]
    with core.set_current_trace(trace):
        ans = f(*in_args)
    if isinstance(instantiate, bool):
        instantiate = [instantiate] * len(ans)
    out_tracers = [trace.to_jaxpr_tracer(x) for x in ans]
    # an instantiated output is forced onto the unknown side, even if it is known
    out_tracers = [trace.instantiate_const(t) if inst else t
                   for t, inst in zip(out_tracers, instantiate, strict=True)]
    jaxpr, consts = tracers_to_jaxpr(in_tracers, [t for t in out_tracers if not t.is_known()])
    return out_tracers, jaxpr, consts


# --8<-- [start:trace_to_jaxpr_nounits]
def trace_to_jaxpr_nounits(fun: lu.WrappedFun, pvals: Sequence[PartialVal],
                           instantiate: bool | Sequence[bool] = False
                           ) -> tuple[Jaxpr, list[PartialVal], list[Any]]:
    """Partially evaluate `fun` (flat in, flat out) on partial values.

    Known operations run on the current trace (eagerly at top level). Returns the unknown
    jaxpr (its constvars are the residuals), every output's PartialVal, and the residuals.
    This is what the classic `linearize` runs over a jvp: primals known, tangents unknown.
    """
    with core.take_current_trace() as parent_trace:
        trace = JaxprTrace(parent_trace)
        try:
            out_tracers, jaxpr, consts = _trace_to_subjaxpr_nounits(
                fun.call_wrapped, trace, instantiate, pvals)
        finally:
            trace.invalidate()  # a JaxprTracer that escaped now fails loudly when used
    return jaxpr, [t.pval for t in out_tracers], consts
# --8<-- [end:trace_to_jaxpr_nounits]


# --8<-- [start:partial_eval_jaxpr_nounits]
def partial_eval_jaxpr_nounits(jaxpr: ClosedJaxpr, unknowns: Sequence[bool],
                               instantiate: bool | Sequence[bool]
                               ) -> tuple[ClosedJaxpr, ClosedJaxpr, list[bool], list[ShapedArray]]:
    """Split `jaxpr` into (jaxpr_known, jaxpr_unknown, out_unknowns, res_avals).

    jaxpr_known takes the known inputs and returns [known outputs..., residuals...];
    jaxpr_unknown takes [residuals..., unknown inputs...] and returns the unknown outputs.
    An output in `instantiate` is returned by jaxpr_unknown even when it is known.
    """
    # JAX caches this on the jaxpr (weakref_lru_cache); we recompute.
    unknowns = list(unknowns)
    if len(unknowns) != len(jaxpr.in_avals):
        raise ValueError(f"got {len(unknowns)} unknowns for a jaxpr of {len(jaxpr.in_avals)} "
                         "inputs")
    f = core.jaxpr_as_fun(jaxpr)
    cell = []  # what tracing the known side learns about the unknown side

    def fun(*known_vals_in: Any) -> list[Any]:
        # EXERCISE 3.4 (residuals): trace f over PartialVals; return known outs + residuals
        known_vals = iter(known_vals_in)
        in_pvals = [PartialVal.unknown(aval) if uk else PartialVal.known(next(known_vals))
                    for aval, uk in zip(jaxpr.in_avals, unknowns, strict=True)]
        # the current trace is the one building jaxpr_known: known work is staged into it
        with core.take_current_trace() as parent_trace:
            trace = JaxprTrace(parent_trace)
            out_tracers, jaxpr_unknown_, residuals = _trace_to_subjaxpr_nounits(
                f, trace, instantiate, in_pvals)
        # the residuals are jaxpr_unknown_'s constvars: make them its leading invars
        jaxpr_unknown = convert_constvars_jaxpr(jaxpr_unknown_)
        out_unknowns = [not t.is_known() for t in out_tracers]
        cell.append((jaxpr_unknown, out_unknowns, [core.get_aval(r) for r in residuals]))
        known_vals_out = [t.pval.get_known() for t in out_tracers if t.is_known()]
        return [*known_vals_out, *residuals]
        # END EXERCISE

    known_avals = [a for a, uk in zip(jaxpr.in_avals, unknowns, strict=True) if not uk]
    jaxpr_known, _, consts_known = trace_to_jaxpr_dynamic(
        lu.wrap_init(fun, debug_info=jaxpr.jaxpr.debug_info), known_avals)
    (jaxpr_unknown, out_unknowns, res_avals), = cell
    return (ClosedJaxpr(jaxpr_known, consts_known), ClosedJaxpr(jaxpr_unknown, []),
            out_unknowns, res_avals)
# --8<-- [end:partial_eval_jaxpr_nounits]
