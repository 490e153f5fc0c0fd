"""What cond, while and scan share: trace a body once, hoist its constants, reshape jaxprs,
check and promote a carry, and the fixed point their rules iterate to.

JAX: tracing a body is `pe.trace_to_jaxpr` + `pe.separate_consts`, called in loops.py and
conditionals.py; jax/_src/lax/control_flow/common.py holds `_merge_common_consts`; the carry
check and weak-type promotion are in loops.py (`_check_carry_type`,
`_promote_weak_typed_input`); `move_binders_to_front` and friends are pe's; the jvp helpers
are ad's (`rearrange_binders`). JAX writes each fixed point inline, in every rule.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from stages.s01_pytrees import (
    PyTreeDef,
    equality_errors,
    tree_flatten_with_path,
    tree_unflatten,
)
from stages.s02_tracing import core, dtypes, lax
from stages.s02_tracing import linear_util as lu
from stages.s02_tracing import partial_eval as pe
from stages.s02_tracing.api_util import flatten_fun_nokwargs
from stages.s02_tracing.core import ClosedJaxpr, ShapedArray
from stages.s02_tracing.pretty_printer import jaxprs_in_params
from stages.s03_partial_eval import JaxprTrace, JaxprTracer, PartialVal, dce_jaxpr
from stages.s03_partial_eval.partial_eval import new_eqn_recipe
from stages.s04_autodiff import custom_calls
from stages.s04_autodiff.ad_util import Zero

from .util import (
    aval_mismatch_extra,
    bulleted,
    carry_component,
    check_carry_vma,
    partition_list,
    split_list,
    typematch,
)

# ------------------------------------------------------------------ tracing a body once


# --8<-- [start:trace_body]
def initial_style_jaxpr(fun: Callable, in_tree: PyTreeDef, in_avals: Sequence[ShapedArray],
                        debug_info: lu.DebugInfo) -> tuple[ClosedJaxpr, list[Any], PyTreeDef]:
    """Trace `fun` ONCE on abstract inputs; return (closed jaxpr, consts, output treedef).

    Whatever the body closes over (an array, a tracer of an enclosing transformation) became a
    constvar while tracing; it is moved to the front of the jaxpr's invars, and its value is
    returned, to be passed as an explicit operand of the control-flow equation.
    """
    # JAX 0.10.2: pe.trace_to_jaxpr, then pe.separate_consts; our name is the helper older
    # JAX kept in control_flow/common.py for this job
    flat_fun, out_tree = flatten_fun_nokwargs(lu.wrap_init(fun, debug_info=debug_info), in_tree)
    jaxpr, _, consts = pe.trace_to_jaxpr_dynamic(flat_fun, in_avals)
    closed = ClosedJaxpr(pe.convert_constvars_jaxpr(jaxpr), [])
    return closed, consts, out_tree()
# --8<-- [end:trace_body]


def merge_common_consts(jaxprs: Sequence[ClosedJaxpr], all_consts: Sequence[Sequence[Any]]
                        ) -> tuple[list[ClosedJaxpr], list[Any]]:
    """Give every branch every branch's consts (the equation has one operand list).

    Branch i's jaxpr gets dummy binders for the other branches' consts; a value closed over by
    two branches is passed once (JAX deduplicates by identity, as we do).
    """
    consts = [c for cs in all_consts for c in cs]
    avals = [core.get_aval(c) for c in consts]
    firsts: dict[int, int] = {}  # id(const) -> its first position
    for i, c in enumerate(consts):
        firsts.setdefault(id(c), i)
    keep = [firsts[id(c)] == i for i, c in enumerate(consts)]
    new_jaxprs = []
    start = 0
    for jaxpr, cs in zip(jaxprs, all_consts, strict=True):
        own = jaxpr.jaxpr.invars[:len(cs)]
        binders = [core.Var(a) for a in avals[:start]] + own + \
            [core.Var(a) for a in avals[start + len(cs):]]
        start += len(cs)
        # a duplicate binder is replaced by the binder of its first occurrence
        subst = {id(v): binders[firsts[id(c)]] for v, c in zip(binders, consts, strict=True)}
        new_jaxprs.append(_substitute(jaxpr, len(cs), binders, subst, keep))
    return new_jaxprs, [c for c, k in zip(consts, keep, strict=True) if k]


def _substitute(jaxpr: ClosedJaxpr, n_own: int, binders: list[core.Var],
                subst: dict[int, core.Var], keep: list[bool]) -> ClosedJaxpr:
    def rename(x: core.Atom) -> core.Atom:
        return subst.get(id(x), x) if isinstance(x, core.Var) else x

    eqns = [e.replace(invars=[rename(x) for x in e.invars]) for e in jaxpr.jaxpr.eqns]
    invars = [v for v, k in zip(binders, keep, strict=True) if k] + jaxpr.jaxpr.invars[n_own:]
    outvars = [rename(x) for x in jaxpr.jaxpr.outvars]
    return ClosedJaxpr(jaxpr.jaxpr.replace(invars=invars, eqns=eqns, outvars=outvars),
                       jaxpr.consts)


# ------------------------------------------------------------------ what a compiler would run

_compiled: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def compiled(jaxpr: ClosedJaxpr, prune: bool = True) -> ClosedJaxpr:
    """A body as JAX's lowering sees it before it runs: pruned of what no output reads (not a
    while's, which JAX does not prune), and refused if a `custom_lin` is left. That equation
    has no lowering, so forward mode over a custom_vjp function fails when the program is
    compiled, even in a branch that never runs; an unused one is pruned away first."""
    # JAX: the DCE before lowering, and custom_lin's lowering rule, which raises
    if jaxpr not in _compiled:
        pruned = jaxpr
        if prune:
            pruned = ClosedJaxpr(dce_jaxpr(jaxpr.jaxpr, True, instantiate=True)[0],
                                 jaxpr.consts)
        _compiled[jaxpr] = (pruned, _has_custom_lin(pruned.jaxpr))
    pruned, refused = _compiled[jaxpr]
    if refused:
        custom_calls.raise_custom_vjp_error_on_jvp()
    return pruned


def _has_custom_lin(jaxpr: core.Jaxpr) -> bool:
    return any(eqn.primitive is custom_calls.custom_lin_p or any(map(_has_custom_lin,
                                                        jaxprs_in_params(eqn.params)))
               for eqn in jaxpr.eqns)


def as_numpy(x: Any, aval: ShapedArray) -> np.ndarray:
    """A body output as an array of its aval's dtype (a literal output is a Python scalar)."""
    return np.asarray(x, dtype=aval.dtype)


def unmapped_leading_aval(length: int, aval: ShapedArray) -> ShapedArray:
    """`aval` with a leading axis of `length`: one y per iteration, stacked."""
    sharding = aval.sharding and aval.sharding.update(spec=(None, *aval.sharding.spec))
    return aval.update(shape=(length, *aval.shape), sharding=sharding)


def mapped_leading_aval(aval: ShapedArray) -> ShapedArray:
    """`aval` without its leading axis: what one iteration sees of an xs."""
    sharding = aval.sharding and aval.sharding.update(spec=aval.sharding.spec[1:])
    return aval.update(shape=aval.shape[1:], sharding=sharding)


# ------------------------------------------------------------------ reshaping a jaxpr


def move_binders_to_front(jaxpr: ClosedJaxpr, to_move: Sequence[bool]) -> ClosedJaxpr:
    """The program with the invars marked in `to_move` first (JAX: pe.move_binders_to_front)."""
    stay, move = partition_list(to_move, jaxpr.jaxpr.invars)
    return ClosedJaxpr(jaxpr.jaxpr.replace(invars=[*move, *stay]), jaxpr.consts)


def move_binders_to_back(jaxpr: ClosedJaxpr, to_move: Sequence[bool]) -> ClosedJaxpr:
    """The program with the invars marked in `to_move` last (JAX: pe.move_binders_to_back)."""
    stay, move = partition_list(to_move, jaxpr.jaxpr.invars)
    return ClosedJaxpr(jaxpr.jaxpr.replace(invars=[*stay, *move]), jaxpr.consts)


def prune_closed_jaxpr_outputs(jaxpr: ClosedJaxpr, keep: Sequence[bool]) -> ClosedJaxpr:
    """Drop the outputs not in `keep` (JAX: pe.prune_closed_jaxpr_outputs; we do not DCE)."""
    outvars = [v for v, k in zip(jaxpr.jaxpr.outvars, keep, strict=True) if k]
    return ClosedJaxpr(jaxpr.jaxpr.replace(outvars=outvars), jaxpr.consts)


def jaxpr_forwarding(jaxpr: core.Jaxpr) -> list[int | None]:
    """For each output, the index of the invar it simply returns, else None (JAX:
    pe._jaxpr_forwarding). The API functions use it to keep what a body only passes through
    out of the equation."""
    index = {id(v): i for i, v in enumerate(jaxpr.invars)}
    return [index.get(id(v)) if isinstance(v, core.Var) else None for v in jaxpr.outvars]


# ------------------------------------------------------------------ the carry of a loop


# --8<-- [start:check_carry_type]
def check_carry_type(name: str, body_fun: Callable, in_tree: PyTreeDef,
                     in_avals: Sequence[ShapedArray], out_tree: PyTreeDef,
                     out_avals: Sequence[ShapedArray]) -> None:
    """The carry must come out as it went in: same pytree structure, shapes and dtypes.

    Weak types are ignored here (a weak init has already been promoted). `name` is
    'scan body' or 'while_loop body'; leaves are named by key path off the body's first
    parameter, as in JAX's message.
    """
    # EXERCISE 6.1 (carry-check): compare structures, then each leaf's type; raise JAX's errors
    component = carry_component(body_fun)
    if in_tree != out_tree:
        diffs = [f"{component(path)} is a {thing1} but the corresponding component of the "
                 f"carry output is a {thing2}, so {why}"
                 for path, thing1, thing2, why in equality_errors(
                     tree_unflatten(in_tree, in_avals), tree_unflatten(out_tree, out_avals))]
        raise TypeError(
            f"{name} function carry input and carry output must have the same pytree "
            f"structure, but they differ:\n\n{bulleted(diffs)}\n"
            "Revise the function so that the carry output has the same pytree structure as "
            "the carry input.")
    paths = [path for path, _ in tree_flatten_with_path(tree_unflatten(in_tree, in_avals))[0]]
    diffs = [f"{component(path)} has type {a.str_short()} but the corresponding output carry "
             f"component has type {b.str_short()}{aval_mismatch_extra(a, b)}"
             for path, a, b in zip(paths, in_avals, out_avals, strict=True)
             if not typematch(a, b)]
    if diffs:
        raise TypeError(
            f"{name} function carry input and carry output must have equal types, but they "
            f"differ:\n\n{bulleted(diffs)}\n"
            "Revise the function so that all output types match the corresponding input types.")
    # END EXERCISE
# --8<-- [end:check_carry_type]


# --8<-- [start:promote_weak]
def promote_weak_typed_inputs(in_vals: Sequence[Any], in_avals: Sequence[ShapedArray],
                              out_avals: Sequence[ShapedArray]) -> tuple[list[Any], bool]:
    """A weakly typed init (a Python scalar) whose body output differs is promoted, not refused.

    `scan(lambda c, x: (c + x, x), 0, xs_f32)`: the carry starts as a weak int32 and comes
    back float32; JAX converts the init to float32 and traces the body a second time.
    Returns the inits and whether any changed.
    """
    new_vals, changed = [], False
    for val, in_aval, out_aval in zip(in_vals, in_avals, out_avals, strict=True):
        if in_aval.weak_type and not typematch(in_aval, out_aval):
            val = lax.convert_element_type(val, dtypes.result_type(val, out_aval.dtype))
            changed = True
        new_vals.append(val)
    return new_vals, changed
# --8<-- [end:promote_weak]


def trace_loop_body(name: str, body_fun: Callable, init_vals: list[Any], init_tree: PyTreeDef,
                    trace: Callable[[list[ShapedArray]], tuple[Any, PyTreeDef, list]]
                    ) -> tuple[list[Any], Any]:
    """Trace a loop body whose carry must keep its type: once on the inits; again if a weakly
    typed init was promoted; then the carry check. `trace(init_avals)` returns (what it
    traced, the carry-out treedef, the carry-out avals). Returns the inits and what it traced.
    """
    init_avals = [core.get_aval(x) for x in init_vals]
    traced, carry_tree, carry_out_avals = trace(init_avals)
    if len(carry_out_avals) != len(init_avals):  # promoting needs one output per input
        check_carry_type(name, body_fun, init_tree, init_avals, carry_tree, carry_out_avals)
    init_vals, changed = promote_weak_typed_inputs(init_vals, init_avals, carry_out_avals)
    if changed:
        init_avals = [core.get_aval(x) for x in init_vals]
        traced, carry_tree, carry_out_avals = trace(init_avals)
    check_carry_type(name, body_fun, init_tree, init_avals, carry_tree, carry_out_avals)
    check_carry_vma(name, body_fun, init_tree, init_avals, carry_out_avals)
    return init_vals, traced


# --8<-- [start:fixpoint]
def fixpoint(step: Callable[[list[bool]], tuple[list[bool], Any]], flags: list[bool]
             ) -> tuple[list[bool], Any]:
    """Grow a set of carry flags until one more trip round the loop adds none.

    The flags say which carries are unknown (partial eval), batched (vmap), nonzero (jvp) or
    used (DCE). A carry without the property going in may have it coming out (an unknown x
    reaches it), and then it has it on every trip. `step(flags)` processes the body with
    these flags in and returns (the flags coming out, whatever else the caller needs); the
    fixed point is where they agree. Flags only grow, one at least per round, so it is
    reached within len(flags) + 1 rounds. Returns the flags and the last step's result.
    """
    for _ in range(1 + len(flags)):
        flags_out, result = step(flags)
        grown = [a or b for a, b in zip(flags, flags_out, strict=True)]
        if grown == flags:
            return flags, result
        flags = grown
    raise AssertionError("Fixpoint not reached")
# --8<-- [end:fixpoint]


# ------------------------------------------------------------------ partial eval and jvp


def bind_known(primitive: core.Primitive, tracers: Sequence[JaxprTracer], params: dict) -> Any:
    """Every operand known: the equation simply runs (on the parent trace)."""
    return primitive.bind(*[t.pval.get_known() for t in tracers], **params)


def stage_unknown_eqn(trace: JaxprTrace, in_tracers: list[JaxprTracer],
                      out_avals: Sequence[ShapedArray], primitive: core.Primitive,
                      params: dict) -> list[JaxprTracer]:
    """Record `primitive` on the unknown side; return its (unknown) output tracers."""
    out_tracers = [JaxprTracer(trace, PartialVal.unknown(a), None) for a in out_avals]
    recipe = new_eqn_recipe(trace, in_tracers, out_tracers, primitive, params)
    for t in out_tracers:
        t.recipe = recipe
    return out_tracers


def nonzero(tangents: Sequence[Any]) -> list[bool]:
    return [type(t) is not Zero for t in tangents]


def prune_zeros(tangents: Sequence[Any]) -> list[Any]:
    return [t for t in tangents if type(t) is not Zero]


def fill_zeros(primals: Sequence[Any], nonzeros: Sequence[bool], tangents: Sequence[Any]
               ) -> list[Any]:
    """The nonzero tangents back in place, a symbolic Zero everywhere else."""
    it = iter(tangents)
    return [next(it) if nz else Zero.from_primal_value(p)
            for p, nz in zip(primals, nonzeros, strict=True)]


def rearrange_binders(jaxpr: ClosedJaxpr, primals_in: list[int], tangents_in: list[int],
                      primals_out: list[int], tangents_out: list[int]) -> ClosedJaxpr:
    """[p1, p2, t1, t2] -> [p1, t1, p2, t2], for invars and outvars (JAX: ad.rearrange_binders).

    jvp_jaxpr puts all primals before all tangents; scan wants consts, carries and xs each
    with their tangents beside them.
    """
    def interleave(xs: list[Any], p_sizes: list[int], t_sizes: list[int]) -> list[Any]:
        ps, ts = split_list(xs, [sum(p_sizes)])
        p_groups, t_groups = split_list(ps, p_sizes[:-1]), split_list(ts, t_sizes[:-1])
        return [x for pg, tg in zip(p_groups, t_groups, strict=True) for x in (*pg, *tg)]

    new = jaxpr.jaxpr.replace(
        invars=interleave(jaxpr.jaxpr.invars, primals_in, tangents_in),
        outvars=interleave(jaxpr.jaxpr.outvars, primals_out, tangents_out))
    return ClosedJaxpr(new, jaxpr.consts)
