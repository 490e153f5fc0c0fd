"""Autodiff: forward mode as a trace, reverse mode as jvp + partial eval + transpose.

JAX: jax/_src/interpreters/ad.py. Three pieces, in the file's order:

1. `JVPTrace`: every value is a (primal, tangent) pair and every primitive is pushed forward by
   its rule in `primitive_jvps` (jvp_rules.py fills the table).
2. `linearize`: run that jvp with the primals known and the tangents unknown (stage 3's
   `JaxprTrace`): the primal half runs now, the tangent half is recorded as a *linear* jaxpr
   whose constants are the residuals.
3. `backward_pass`: run a linear jaxpr backwards, each linear primitive through its rule in
   `primitive_transposes` (transpose_rules.py), summing cotangents as they arrive.

vjp = linearize, then backward_pass on the linear jaxpr. There is no separate reverse-mode tape.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from stages.s02_tracing import core
from stages.s02_tracing import linear_util as lu
from stages.s02_tracing.core import ClosedJaxpr, Jaxpr, Literal, ShapedArray, Var
from stages.s02_tracing.partial_eval import trace_to_closed_jaxpr
from stages.s03_partial_eval import partial_eval as pe

from .ad_util import Zero, add_jaxvals, float0, instantiate, tangent_aval

# The two tables stage 4 adds. A jvp rule is rule(primals, tangents, **params) ->
# (primal_out, tangent_out); a transpose rule is rule(ct, *invals, **params) -> one cotangent
# (or None) per input, where the linear inputs arrive as UndefinedPrimal.
primitive_jvps: dict[core.Primitive, Callable] = {}
primitive_transposes: dict[core.Primitive, Callable] = {}


def instantiate_zeros(tangent: Any) -> Any:
    """A symbolic Zero made into real zeros (JAX: ad.instantiate_zeros)."""
    return instantiate(tangent)


# ------------------------------------------------------------------ forward mode


# --8<-- [start:jvp_trace]
class JVPTracer(core.Tracer):
    """A value being differentiated: its primal and its tangent (never a symbolic Zero)."""

    __slots__ = ("primal", "tangent")

    def __init__(self, trace: JVPTrace, primal: Any, tangent: Any):
        super().__init__(trace, core.get_aval(primal))
        if np.shape(tangent) != self.aval.shape:
            raise ValueError(f"tangent of shape {np.shape(tangent)} for a primal of "
                             f"shape {self.aval.shape}: a jvp rule returned the wrong shape")
        self.primal = primal
        self.tangent = tangent

    def to_concrete_value(self) -> Any:
        if isinstance(self.primal, core.Tracer):
            return self.primal.to_concrete_value()
        return self.primal

    def _short_repr(self) -> str:
        return f"JVPTracer(primal={self.primal!r}, tangent={self.tangent!r})"


def maybe_jvp_tracer(trace: JVPTrace, primal: Any, tangent: Any) -> Any:
    """A value with a zero tangent is not differentiated any further: return it bare."""
    if type(tangent) is Zero:
        return primal
    return JVPTracer(trace, primal, tangent)


class JVPTrace(core.Trace):
    """Pushes (primal, tangent) pairs through primitives; both halves run on `parent_trace`."""

    # JAX: JVPTrace(parent_trace, tag). JAX compares tags so a call's sub-trace can recognise
    # its parent's tracers; we create no sub-traces, so the trace's identity is enough.
    def __init__(self, parent_trace: core.Trace):
        super().__init__()
        self.parent_trace = parent_trace

    def to_primal_tangent_pair(self, val: Any) -> tuple[Any, Any]:
        """Our tracers split in two; anything else is a constant, whose tangent is Zero."""
        if isinstance(val, JVPTracer) and val._trace is self:
            return val.primal, val.tangent
        return val, Zero.from_primal_value(val)

    def process_primitive(self, primitive: core.Primitive, tracers: Sequence[Any],
                          params: dict) -> Any:
        # EXERCISE 4.1 (process-primitive): split the inputs, skip all-zero, apply the jvp rule
        pairs = [self.to_primal_tangent_pair(x) for x in tracers]
        primals_in, tangents_in = [p for p, _ in pairs], [t for _, t in pairs]
        if all(type(t) is Zero for t in tangents_in):
            # nothing to differentiate: the primitive runs on the parent trace alone
            return primitive.bind_with_trace(self.parent_trace, primals_in, params)
        jvp = primitive_jvps.get(primitive)
        if jvp is None:
            raise NotImplementedError(f"Differentiation rule for '{primitive}' not implemented")
        with core.set_current_trace(self.parent_trace):
            primal_out, tangent_out = jvp(primals_in, tangents_in, **params)
        if primitive.multiple_results:
            return [maybe_jvp_tracer(self, p, t)
                    for p, t in zip(primal_out, tangent_out, strict=True)]
        return maybe_jvp_tracer(self, primal_out, tangent_out)
        # END EXERCISE
# --8<-- [end:jvp_trace]


# --8<-- [start:jvp_transform]
def jvp(fun: lu.WrappedFun, has_aux: bool = False, instantiate: bool | Sequence[bool] = True
        ) -> Any:
    """`fun(*primals) -> outs` (flat) becomes `(primals, tangents) -> (outs, out_tangents)`.

    With has_aux, `fun` returns (outs, aux) and this returns (wrapped, aux_thunk).
    """
    if has_aux:
        fun, aux = jvp_subtrace_aux(fun)
        return jvpfun(fun, instantiate), aux
    return jvpfun(jvp_subtrace(fun), instantiate)


@lu.transformation2
def jvpfun(f: Callable, instantiate: bool | Sequence[bool], primals: Sequence[Any],
           tangents: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    out_primals, out_tangents = f(primals, tangents)
    if isinstance(instantiate, bool):
        instantiate = [instantiate] * len(out_tangents)
    out_tangents = [instantiate_zeros(t) if inst else t
                    for t, inst in zip(out_tangents, instantiate, strict=True)]
    return list(out_primals), out_tangents


@lu.transformation2
def jvp_subtrace(f: Callable, primals: Sequence[Any], tangents: Sequence[Any]
                 ) -> tuple[list[Any], list[Any]]:
    """Run f on JVPTracers of a fresh JVPTrace over the current trace; split the results."""
    with core.take_current_trace() as parent_trace:
        trace = JVPTrace(parent_trace)
        in_tracers = [maybe_jvp_tracer(trace, x, t)
                      for x, t in zip(primals, tangents, strict=True)]
        with core.set_current_trace(trace):
            ans = f(*in_tracers)
        pairs = [trace.to_primal_tangent_pair(x) for x in ans]
    trace.invalidate()  # a JVPTracer that escaped now fails loudly when used
    return [p for p, _ in pairs], [t for _, t in pairs]
# --8<-- [end:jvp_transform]


@lu.transformation_with_aux2
def jvp_subtrace_aux(f: Callable, store: lu.Store, primals: Sequence[Any],
                     tangents: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """jvp_subtrace for `f` returning (outs, aux): aux leaves leave as their primals."""
    with core.take_current_trace() as parent_trace:
        trace = JVPTrace(parent_trace)
        in_tracers = [maybe_jvp_tracer(trace, x, t)
                      for x, t in zip(primals, tangents, strict=True)]
        with core.set_current_trace(trace):
            ans, aux = f(*in_tracers)
        pairs = [trace.to_primal_tangent_pair(x) for x in ans]
        # only our tracers are unwrapped: any other aux leaf (a string, an int) is untouched
        store.store([x.primal if isinstance(x, JVPTracer) and x._trace is trace else x
                     for x in aux])
    trace.invalidate()
    return [p for p, _ in pairs], [t for _, t in pairs]


def jvp_jaxpr(jaxpr: ClosedJaxpr, nonzeros: Sequence[bool], instantiate: bool
              ) -> tuple[ClosedJaxpr, list[bool]]:
    """The jaxpr of `jaxpr`'s jvp: [primals, nonzero tangents] in, [primals, nonzero
    tangents] out, and which output tangents are nonzero."""
    out_nonzeros: list[list[bool]] = []

    def f_jvp(*args: Any) -> list[Any]:
        primals, nz_tangents = args[: len(nonzeros)], iter(args[len(nonzeros) :])
        tangents = [next(nz_tangents) if nz else Zero(tangent_aval(aval))
                    for aval, nz in zip(jaxpr.in_avals, nonzeros, strict=True)]
        fun = jvp(lu.wrap_init(core.jaxpr_as_fun(jaxpr)), instantiate=instantiate)
        primals_out, tangents_out = fun.call_wrapped(primals, tangents)
        out_nonzeros.append([type(t) is not Zero for t in tangents_out])
        return [*primals_out, *[t for t in tangents_out if type(t) is not Zero]]

    in_avals = [*jaxpr.in_avals,
                *[tangent_aval(a) for a, nz in zip(jaxpr.in_avals, nonzeros, strict=True) if nz]]
    return trace_to_closed_jaxpr(lu.wrap_init(f_jvp), in_avals), out_nonzeros[0]


# ------------------------------------------------------------------ linearize


@lu.transformation_with_aux2
def _nonzero_tangent_outputs(f: Callable, store: lu.Store, n_primals: int,
                             *primals_and_tangents: Any) -> list[Any]:
    """Flat jvp: [primals, tangents] in, [primals out, nonzero tangents out] out."""
    # JAX: ad.nonzero_tangent_outputs plus the flattening its linearize does around it
    primals, tangents = primals_and_tangents[:n_primals], primals_and_tangents[n_primals:]
    primals_out, tangents_out = f(list(primals), list(tangents))
    store.store([type(t) is not Zero for t in tangents_out])
    return [*primals_out, *[t for t in tangents_out if type(t) is not Zero]]


# --8<-- [start:linearize]
def linearize(traceable: lu.WrappedFun, *primals: Any, has_aux: bool = False) -> tuple:
    """Primal outputs, the output tangents, and the linear jaxpr of `traceable` at `primals`.

    Returns (primals_out, tangents_out, linear[, aux]): each of tangents_out is a symbolic
    Zero, a known value (a tangent that does not depend on the input tangents) or None,
    meaning "the next output of `linear`". `linear` takes the tangents of the float inputs;
    its constants are the residuals.
    """
    # JAX: the classic ad.linearize (jvp, then pe.trace_to_jaxpr_nounits); JAX now fuses the
    # two steps into one LinearizeTrace ("direct linearize"), with the same results.
    avals = [core.get_aval(p) for p in primals]
    differentiable = tuple(tangent_aval(a).dtype != float0 for a in avals)
    if has_aux:
        jvp_fun, aux = jvp(traceable, has_aux=True, instantiate=False)
    else:
        jvp_fun, aux = jvp(traceable, instantiate=False), None
    jvp_fun = _tangents_of_ints_are_zero(jvp_fun, differentiable)
    jvp_fun, nonzeros = _nonzero_tangent_outputs(jvp_fun, len(primals))
    # EXERCISE 4.3 (linearize): primals known, tangents unknown; partial eval splits the jvp
    in_pvals = [*[pe.PartialVal.known(p) for p in primals],
                *[pe.PartialVal.unknown(tangent_aval(a))
                  for a, d in zip(avals, differentiable, strict=True) if d]]
    jaxpr, out_pvals, residuals = pe.trace_to_jaxpr_nounits(jvp_fun, in_pvals)
    n_out = len(out_pvals) - sum(nonzeros())
    primal_pvals, nz_tangent_pvals = out_pvals[:n_out], iter(out_pvals[n_out:])
    if not all(pval.is_known() for pval in primal_pvals):
        raise ValueError(  # a primal output depends on an input tangent (JAX's words)
            "Linearization failed to produce known values for all output primals. This is "
            "typically caused by attempting to differentiate a function uses an operation that "
            "does not support reverse-mode autodiff.")
    primals_out = [pval.get_known() for pval in primal_pvals]
    tangents_out = []
    for p, nz in zip(primals_out, nonzeros(), strict=True):
        if not nz:
            tangents_out.append(Zero.from_primal_value(p))
        else:
            tangents_out.append(next(nz_tangent_pvals).get_known())  # None: unknown
    # END EXERCISE
    # pruned as JAX prunes it: a loop's tangent that no output reads is gone from the loop too
    # (a while_loop's tangent would otherwise reach the transpose, which refuses it), and so
    # is a residual the pruned equations no longer read (JAX's tangent trace: auto_dce)
    linear = pe.dce_jaxpr(jaxpr, True, instantiate=True)[0]
    read = {x for x in (*(y for e in linear.eqns for y in e.invars), *linear.outvars)
            if isinstance(x, Var)}
    kept = [v in read for v in linear.constvars]
    constvars = [v for v, k in zip(linear.constvars, kept, strict=True) if k]
    residuals = [r for r, k in zip(residuals, kept, strict=True) if k]
    linear = ClosedJaxpr(linear.replace(constvars=constvars), residuals)
    if has_aux:
        return primals_out, tangents_out, linear, aux()
    return primals_out, tangents_out, linear
# --8<-- [end:linearize]


@lu.transformation2
def _tangents_of_ints_are_zero(f: Callable, differentiable: tuple[bool, ...],
                               primals: Sequence[Any], tangents: Sequence[Any]) -> Any:
    """Only float inputs get a tangent argument; an int or bool input's tangent is Zero."""
    given = iter(tangents)
    full = [next(given) if d else Zero.from_primal_value(p)
            for p, d in zip(primals, differentiable, strict=True)]
    return f(primals, full)


# ------------------------------------------------------------------ transposition


class UndefinedPrimal:
    """A linear input of a jaxpr being transposed: its type is known, its value never is."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self) -> str:
        return f"UndefinedPrimal({self.aval})"


def is_undefined_primal(x: Any) -> bool:
    return type(x) is UndefinedPrimal


def get_primitive_transpose(p: core.Primitive) -> Callable:
    try:
        return primitive_transposes[p]
    except KeyError as err:
        raise NotImplementedError(
            f"Transpose rule (for reverse-mode differentiation) for '{p}' not implemented"
        ) from err


class ValAccum:
    """Where the cotangents of one linear value are summed, in any order, as they arrive."""

    # JAX: ad.ValAccum (with RefAccum and NullAccum for mutable refs, which we do not have)
    __slots__ = ("aval", "val")

    def __init__(self, aval: ShapedArray):
        self.aval = aval
        self.val: Any = Zero(aval)

    def accum(self, ct: Any) -> None:
        self.val = add_jaxvals(self.val, ct)

    def freeze(self) -> Any:
        return self.val


# --8<-- [start:backward_pass]
def backward_pass(jaxpr: Jaxpr, consts: Sequence[Any], primals_in: Sequence[Any],
                  cotangents_in: Sequence[Any], on_accumulate: Callable | None = None
                  ) -> list[Any]:
    """Transpose `jaxpr` in its UndefinedPrimal inputs: output cotangents in, one cotangent per
    input out (a symbolic Zero where none arrived).

    `on_accumulate(primitive, var, ct, total)`, if given, sees every cotangent as it is summed
    into a variable, with the running total there (the stage's page prints the walk with it).
    """
    # JAX: ad.backward_pass3 (it writes into the caller's accumulators instead of returning)
    primal_env: dict[Var, Any] = {}

    def read_primal(x: core.Atom) -> Any:
        if isinstance(x, Literal):
            return x.val
        return primal_env.get(x, UndefinedPrimal(x.aval))

    # (an UndefinedPrimal given for an input is kept: its aval may say more than the binder's)
    for v, val in zip([*jaxpr.constvars, *jaxpr.invars], [*consts, *primals_in], strict=True):
        primal_env[v] = val
    # Forward scan: an equation reading an undefined value is linear and waits for the
    # reverse walk; any other equation computes from residuals and runs now.
    linear_eqns = []
    for eqn in jaxpr.eqns:
        invals = [read_primal(x) for x in eqn.invars]
        if any(is_undefined_primal(x) for x in invals):
            linear_eqns.append(eqn)
            continue
        ans = eqn.primitive.bind(*invals, **eqn.primitive.get_bind_params(eqn.params))
        outs = ans if eqn.primitive.multiple_results else [ans]
        primal_env.update(zip(eqn.outvars, outs, strict=True))

    ct_env: dict[Var, ValAccum] = {}

    def write_cotangent(prim: Any, v: core.Atom, ct: Any) -> None:
        if ct is None or type(ct) is Zero or isinstance(v, Literal):
            return
        if np.shape(ct) != v.aval.shape:
            raise ValueError(f"the transpose rule of '{prim}' gave a cotangent of shape "
                             f"{np.shape(ct)} for a value of shape {v.aval.shape}")
        acc = ct_env.setdefault(v, ValAccum(tangent_aval(v.aval)))
        acc.accum(ct)
        if on_accumulate is not None:
            on_accumulate(prim, v, ct, acc.val)

    def read_cotangent(v: Var) -> Any:
        acc = ct_env.pop(v, None)
        return Zero(tangent_aval(v.aval)) if acc is None else acc.freeze()

    for v, ct in zip(jaxpr.outvars, cotangents_in, strict=True):
        write_cotangent("output", v, ct)
    # EXERCISE 4.4 (backward-pass): walk the linear equations in reverse, accumulating
    for eqn in reversed(linear_eqns):
        cts_in = [read_cotangent(v) for v in eqn.outvars]
        if all(type(ct) is Zero for ct in cts_in):
            continue  # nothing flows back through this equation
        rule = get_primitive_transpose(eqn.primitive)
        invals = [read_primal(x) for x in eqn.invars]
        ct = cts_in if eqn.primitive.multiple_results else cts_in[0]
        cts_out = rule(ct, *invals, **eqn.params)
        for x, ct_out in zip(eqn.invars, cts_out, strict=True):
            write_cotangent(eqn.primitive, x, ct_out)
    return [read_cotangent(v) for v in jaxpr.invars]
    # END EXERCISE
# --8<-- [end:backward_pass]
