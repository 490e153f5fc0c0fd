"""The scan primitive and all its rules: impl, abstract eval, jvp, transpose, partial eval
(trace- and equation-level), DCE, batching. JAX: the rules of `scan_p` in lax/control_flow/loops.py.

`scan[jaxpr length num_consts num_carry reverse unroll] *consts *init *xs`: the body maps
[consts, carry, x] to [carry, y]; the ys come out stacked. Most rules find a fixed point on the
carries (common.fixpoint): one that starts known, zero or unbatched may not stay so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from stages.s02_tracing import core
from stages.s02_tracing import linear_util as lu
from stages.s02_tracing.core import ClosedJaxpr, JaxprEqn, ShapedArray, Var
from stages.s02_tracing.partial_eval import trace_to_closed_jaxpr
from stages.s03_partial_eval import partial_eval as pe
from stages.s04_autodiff import ad
from stages.s04_autodiff.ad_util import Zero, tangent_aval, zeros_like_aval
from stages.s05_vmap.batching import (
    AxisData,
    BatchDim,
    batch_jaxpr,
    broadcast,
    moveaxis,
    not_mapped,
    primitive_batchers,
)

from .common import (
    as_numpy,
    bind_known,
    compiled,
    fill_zeros,
    fixpoint,
    mapped_leading_aval,
    move_binders_to_back,
    move_binders_to_front,
    nonzero,
    prune_closed_jaxpr_outputs,
    prune_zeros,
    rearrange_binders,
    stage_unknown_eqn,
    unmapped_leading_aval,
)
from .scan_residuals import residual_kinds, scan_known_hoisting
from .util import merge_lists, partition_list, scan_trip_count, split_list, typematch

scan_p = core.Primitive("scan")
scan_p.multiple_results = True

# ------------------------------------------------------------------ impl and abstract eval


# --8<-- [start:scan_impl]
def _scan_impl(*args: Any, reverse: bool, length: int, num_consts: int, num_carry: int,
               jaxpr: ClosedJaxpr, unroll: int) -> list[Any]:
    """`length` steps of the body on numpy, ys stacked (unroll shapes only a compiled loop)."""
    if length < 0:  # traced as in JAX (a y of f32[-1]); JAX's compiler refuses it (MLIRError)
        raise ValueError(f"scan got a negative length: {length}")
    scan_trip_count(length, unroll)  # checked: a float unroll is traced, refused here
    consts, carry, xs = split_list(args, [num_consts, num_carry])
    carry_avals, y_avals = split_list(jaxpr.out_avals, [num_carry])
    jaxpr = compiled(jaxpr)  # pruned, and refused if it holds forward mode over a custom_vjp
    # EXERCISE 6.3 (scan-impl): run the body once per iteration (in reverse if asked)
    ys: list[list[Any]] = [[] for _ in y_avals]
    for step in range(length):
        i = length - 1 - step if reverse else step
        outs = core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *consts, *carry, *[x[i] for x in xs])
        new_carry, y = split_list(outs, [num_carry])
        carry = [as_numpy(c, a) for c, a in zip(new_carry, carry_avals, strict=True)]
        for stack, value, aval in zip(ys, y, y_avals, strict=True):
            stack.append(as_numpy(value, aval))
    if reverse:
        ys = [stack[::-1] for stack in ys]
    stacked = [np.stack(stack) if stack else np.zeros((0, *a.shape), a.dtype)
               for stack, a in zip(ys, y_avals, strict=True)]
    # END EXERCISE
    return [*carry, *stacked]
# --8<-- [end:scan_impl]


def _scan_abstract_eval(*avals: ShapedArray, reverse: bool, length: int, num_consts: int,
                        num_carry: int, jaxpr: ClosedJaxpr, unroll: int) -> list[ShapedArray]:
    """The carry's avals, and each y's aval with a leading axis of `length`."""
    if len(avals) != len(jaxpr.in_avals):
        raise core.JaxprTypeError("scan number of arguments doesn't match the number of jaxpr "
                                  f"arguments: {len(avals)} vs {len(jaxpr.in_avals)}")
    consts, carry, xs = split_list(avals, [num_consts, num_carry])
    expected = [*consts, *carry, *[mapped_leading_aval(x) for x in xs]]
    if not all(typematch(a, b) for a, b in zip(expected, jaxpr.in_avals, strict=True)):
        raise core.JaxprTypeError(f"scan body takes {[str(a) for a in jaxpr.in_avals]} but "
                                  f"is given {[str(a) for a in expected]}")
    carry_out, ys = split_list(jaxpr.out_avals, [num_carry])
    return [*carry_out, *[unmapped_leading_aval(length, y) for y in ys]]


# ------------------------------------------------------------------ autodiff


def _scan_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, reverse: bool, length: int,
              jaxpr: ClosedJaxpr, num_consts: int, num_carry: int, unroll: int
              ) -> tuple[list[Any], list[Any]]:
    """One scan over (primal, tangent) pairs; which carry tangents are nonzero is a fixpoint."""
    num_xs = len(jaxpr.in_avals) - num_consts - num_carry
    num_ys = len(jaxpr.out_avals) - num_carry
    const_nz, init_nz, xs_nz = split_list(nonzero(tangents), [num_consts, num_carry])

    # a zero carry tangent stays zero only if the body never makes it nonzero
    def step(carry_nz: list[bool]) -> tuple[list[bool], tuple]:
        jaxpr_jvp, nz_out = ad.jvp_jaxpr(jaxpr, [*const_nz, *carry_nz, *xs_nz],
                                      instantiate=carry_nz + [False] * num_ys)
        return nz_out[:num_carry], (jaxpr_jvp, nz_out)

    carry_nz, (jaxpr_jvp, nz_out) = fixpoint(step, init_nz)
    nonzeros = [*const_nz, *carry_nz, *xs_nz]
    tangents = [ad.instantiate_zeros(t) if nz else t
                for t, nz in zip(tangents, nonzeros, strict=True)]
    consts, init, xs = split_list(primals, [num_consts, num_carry])
    consts_dot, init_dot, xs_dot = (prune_zeros(t) for t in
                                    split_list(tangents, [num_consts, num_carry]))
    jaxpr_jvp = rearrange_binders(
        jaxpr_jvp, [num_consts, num_carry, num_xs], [len(consts_dot), len(init_dot), len(xs_dot)],
        [num_carry, num_ys], [len(init_dot), sum(nz_out) - len(init_dot)])
    out = scan_p.bind(*consts, *consts_dot, *init, *init_dot, *xs, *xs_dot, reverse=reverse,
                      length=length, jaxpr=jaxpr_jvp, num_consts=num_consts + len(consts_dot),
                      num_carry=num_carry + len(init_dot), unroll=unroll)
    carry, carry_dot, ys, ys_dot = split_list(out, [num_carry, len(init_dot), num_ys])
    primals_out = [*carry, *ys]
    return primals_out, fill_zeros(primals_out, nz_out, [*carry_dot, *ys_dot])


# --8<-- [start:scan_transpose]
def _scan_transpose(cts: Sequence[Any], *args: Any, reverse: bool, length: int,
                    jaxpr: ClosedJaxpr, num_consts: int, num_carry: int, unroll: int
                    ) -> list[Any]:
    """A linear scan, run backwards. Its operands are taken in the order
    [ires, d | c | a, eres]: loop-invariant residuals, linear consts d, linear carries c,
    linear xs a, stacked residuals. The transposed scan carries the cotangents of d and c,
    reads the stacked cotangents of the ys and the residuals, and emits those of a."""
    consts, init, xs = split_list(args, [num_consts, num_carry])
    # our partial eval emits that order; a scan the user wrote (linear_transpose of it) may
    # interleave linear and residual operands: move the residuals out to the ends
    const_res = [not ad.is_undefined_primal(x) for x in consts]
    xs_res = [not ad.is_undefined_primal(x) for x in xs]
    jaxpr = move_binders_to_front(jaxpr, const_res + [False] * (num_carry + len(xs)))
    jaxpr = move_binders_to_back(jaxpr, [False] * (num_consts + num_carry) + xs_res)
    d, ires = partition_list(const_res, consts)
    a, eres = partition_list(xs_res, xs)
    num_ires, num_d, num_a, num_eres = len(ires), len(d), len(a), len(eres)
    ct_carry, ct_ys = split_list(cts, [num_carry])
    ct_carry = [ad.instantiate_zeros(ct) for ct in ct_carry]
    ys_zero = [type(ct) is Zero for ct in ct_ys]  # a y nobody used gets no stacked cotangent
    ct_ys = prune_zeros(ct_ys)
    # EXERCISE 6.6 (scan-transpose): build the transposed body, run it with reverse flipped
    d_avals = jaxpr.in_avals[num_ires:num_consts]
    _, a_avals = split_list(jaxpr.in_avals[num_consts:], [num_carry])
    a_avals = a_avals[:num_a]
    y_avals = [tangent_aval(a) for a in jaxpr.out_avals[num_carry:]]

    def transposed(*args: Any) -> list[Any]:
        # one iteration backwards: ct_d and ct_c come in as carries, ct_b and eres as xs
        ires_, ct_d, ct_c, ct_b, eres_ = split_list(args, [num_ires, num_d, num_carry,
                                                           len(ct_ys)])
        # the carries typed by their cotangents as they arrive (JAX: its accumulators)
        c_ct_avals = [core.get_aval(ct) for ct in ct_c]
        primals = [*ires_, *[ad.UndefinedPrimal(a) for a in [*d_avals, *c_ct_avals, *a_avals]],
                   *eres_]
        ct_b_iter = iter(ct_b)
        ct_b = [Zero(a) if zero else next(ct_b_iter) for a, zero in zip(y_avals, ys_zero,
                                                                       strict=True)]
        # a const is read on every trip: its cotangent is the sum over the trips, carried; the
        # sum so far seeds the const's accumulator (given as an output cotangent, as JAX does)
        d_vars = jaxpr.jaxpr.invars[num_ires:num_consts]
        seeded = jaxpr.jaxpr.replace(outvars=[*d_vars, *jaxpr.jaxpr.outvars])
        cts_in = ad.backward_pass(seeded, jaxpr.consts, primals, [*ct_d, *ct_c, *ct_b])
        _, ct_d, new_ct_c, ct_a, _ = split_list(cts_in, [num_ires, num_d, num_carry, num_a])
        return [ad.instantiate_zeros(ct) for ct in [*ct_d, *new_ct_c, *ct_a]]

    # the carried and stacked cotangents have the types they arrive with (a strong ct makes a
    # strong result, as in JAX); the consts' sums start as zeros of their tangent types
    y_nz_avals = [mapped_leading_aval(core.get_aval(ct)) for ct in ct_ys]
    tangent = [*[tangent_aval(a) for a in d_avals], *[core.get_aval(ct) for ct in ct_carry],
               *y_nz_avals]
    jaxpr_trans = trace_to_closed_jaxpr(
        lu.wrap_init(transposed),
        [*jaxpr.in_avals[:num_ires], *tangent, *jaxpr.in_avals[num_consts + num_carry + num_a:]])
    ct_consts = [zeros_like_aval(tangent_aval(a)) for a in d_avals]
    outs = scan_p.bind(*ires, *ct_consts, *ct_carry, *ct_ys, *eres, reverse=not reverse,
                       length=length, jaxpr=jaxpr_trans, num_consts=num_ires,
                       num_carry=num_d + num_carry, unroll=unroll)
    ct_d, ct_init, ct_a = split_list(outs, [num_d, num_carry])
    # END EXERCISE
    # back in the operands' own order: None for every residual
    # every carry is transposed as linear (as JAX does); a constant init (a zero) gets None
    ct_init = [ct if ad.is_undefined_primal(x) else None for x, ct in zip(init, ct_init,
                                                                       strict=True)]
    return [*merge_lists(const_res, ct_d, [None] * num_ires), *ct_init,
            *merge_lists(xs_res, ct_a, [None] * num_eres)]
# --8<-- [end:scan_transpose]


# ------------------------------------------------------------------ partial eval


# --8<-- [start:scan_partial_eval]
def _scan_partial_eval(trace: pe.JaxprTrace, *tracers: pe.JaxprTracer, reverse: bool, length: int,
                       num_consts: int, num_carry: int, jaxpr: ClosedJaxpr,
                       unroll: int) -> list[Any]:
    """A known scan that also stacks the residuals, then an unknown scan that reads them."""
    params = dict(reverse=reverse, length=length, unroll=unroll)
    if all(t.is_known() for t in tracers):
        return bind_known(scan_p, tracers, dict(params, jaxpr=jaxpr, num_consts=num_consts,
                                                num_carry=num_carry))
    num_ys = len(jaxpr.out_avals) - num_carry
    const_uk, init_uk, xs_uk = split_list([not t.is_known() for t in tracers],
                                          [num_consts, num_carry])

    # a carry is unknown if it starts unknown or the body makes it so
    def step(carry_uk: list[bool]) -> tuple[list[bool], tuple]:
        split = pe.partial_eval_jaxpr_nounits(jaxpr, [*const_uk, *carry_uk, *xs_uk],
                                           [*carry_uk, *[False] * num_ys])
        return split[2][:num_carry], split

    carry_uk, (jaxpr_known, jaxpr_unknown, out_uk, res_avals) = fixpoint(step, init_uk)
    jaxpr_known = ClosedJaxpr(pe.dce_jaxpr(jaxpr_known.jaxpr, True, True)[0], jaxpr_known.consts)
    unknowns = [*const_uk, *carry_uk, *xs_uk]
    num_res = len(res_avals)
    num_known_outs = len(jaxpr_known.out_avals) - num_res
    num_known_consts = num_consts - sum(const_uk)
    # Residuals: a const of the loop, or an xs slice, is already held by an input and passed
    # as it is; one computed from consts alone is hoisted, computed once before the loop; the
    # rest change per iteration: the known scan stacks them as extra ys, the unknown scan
    # reads them as extra xs (scan_residuals.py).
    known_ins = [t.pval.get_known() for t, uk in zip(tracers, unknowns, strict=True) if not uk]
    kinds = residual_kinds(jaxpr_known, num_known_outs, num_known_consts,
                           num_carry - sum(carry_uk), known_ins)
    invariant_vals = [*known_ins[:num_known_consts], *jaxpr_known.consts]
    jaxpr_known = prune_closed_jaxpr_outputs(
        jaxpr_known, [True] * num_known_outs + [kind == "loop" for kind, _ in kinds])
    jaxpr_known, known_consts, kinds, hoisted = scan_known_hoisting(
        jaxpr_known, known_ins[:num_known_consts], kinds)
    # unknown body: [residuals, unknown ins] -> [intensive res, unknown ins, extensive res]
    num_unknown_ins = len(jaxpr_unknown.in_avals) - num_res
    intensive = [kind in ("const", "hoisted") for kind, _ in kinds]
    jaxpr_unknown = move_binders_to_back(jaxpr_unknown, [not i for i in intensive]
                                         + [False] * num_unknown_ins)
    tracers = [trace.instantiate_const(t) if uk else t
               for t, uk in zip(tracers, unknowns, strict=True)]
    outs = [] if not jaxpr_known.out_avals else scan_p.bind(
        *known_consts, *known_ins[num_known_consts:], jaxpr=jaxpr_known,
        num_consts=len(known_consts), num_carry=num_carry - sum(carry_uk), **params)
    known_outs, loop_res = split_list(outs, [num_known_outs])
    loop_res_iter, hoisted_iter = iter(loop_res), iter(hoisted)
    int_res = [invariant_vals[i] if kind == "const" else next(hoisted_iter)
               for kind, i in kinds if kind in ("const", "hoisted")]
    ext_res = [known_ins[i] if kind == "xs" else next(loop_res_iter)
               for kind, i in kinds if kind in ("xs", "loop")]
    in_tracers = [*[trace.new_instantiated_const(r) for r in int_res],
                  *[t for t, uk in zip(tracers, unknowns, strict=True) if uk],
                  *[trace.new_instantiated_const(r) for r in ext_res]]
    carry_avals, y_avals = split_list(jaxpr_unknown.out_avals, [sum(carry_uk)])
    out_avals = [*carry_avals, *[unmapped_leading_aval(length, a) for a in y_avals]]
    out_tracers = stage_unknown_eqn(trace, in_tracers, out_avals, scan_p, dict(
        params, jaxpr=jaxpr_unknown, num_consts=len(int_res) + sum(const_uk),
        num_carry=sum(carry_uk)))
    return merge_lists(out_uk, known_outs, out_tracers)
# --8<-- [end:scan_partial_eval]


def _scan_partial_eval_custom(saveable: Callable, unks_in: Sequence[bool],
                              inst_in: Sequence[bool], eqn: JaxprEqn) -> tuple:
    """The equation-level split (for remat): residuals are stacked as extra ys/xs; the staged
    scan takes every operand and recomputes every output."""
    p = eqn.params
    jaxpr, num_consts, num_carry = p["jaxpr"], p["num_consts"], p["num_carry"]
    num_ys = len(jaxpr.out_avals) - num_carry
    const_uk, init_uk, xs_uk = split_list(unks_in, [num_consts, num_carry])

    def step(carry_uk: list[bool]) -> tuple[list[bool], tuple]:
        split = pe.partial_eval_jaxpr_custom(jaxpr.jaxpr, [*const_uk, *carry_uk, *xs_uk], True,
                                          [*carry_uk, *[False] * num_ys], True, saveable)
        return split[2][:num_carry], split

    carry_uk, (jaxpr_known, jaxpr_staged, unks_out, _, num_res) = fixpoint(step, init_uk)
    staged = ClosedJaxpr(jaxpr_staged, jaxpr.consts)
    res_avals = staged.in_avals[:num_res]
    staged = move_binders_to_back(staged, [True] * num_res + [False] * len(jaxpr.in_avals))
    res_vars = [Var(unmapped_leading_aval(p["length"], a)) for a in res_avals]
    unks = [*const_uk, *carry_uk, *xs_uk]
    ins_known, _ = partition_list(unks, eqn.invars)
    outs_known, _ = partition_list(unks_out, eqn.outvars)
    eqn_known = core.new_jaxpr_eqn(ins_known, [*outs_known, *res_vars], scan_p, dict(
        p, jaxpr=ClosedJaxpr(jaxpr_known, jaxpr.consts),
        num_consts=num_consts - sum(const_uk), num_carry=num_carry - sum(carry_uk)))
    eqn_staged = core.new_jaxpr_eqn([*eqn.invars, *res_vars], eqn.outvars, scan_p,
                                    dict(p, jaxpr=staged))
    new_inst = [x for x, inst in zip(eqn.invars, inst_in, strict=True)
                if isinstance(x, Var) and not inst]
    return eqn_known, eqn_staged, unks_out, [True] * len(eqn.outvars), [*new_inst, *res_vars]


def _scan_dce_rule(used_outputs: list[bool], eqn: JaxprEqn) -> tuple[list[bool], Any]:
    """Prune the body; a used carry output keeps its carry input (a fixpoint, as in JAX)."""
    if not any(used_outputs) and not pe.has_effects(eqn):
        return [False] * len(eqn.invars), None
    p = eqn.params
    jaxpr, num_consts, num_carry = p["jaxpr"], p["num_consts"], p["num_carry"]
    num_xs = len(jaxpr.in_avals) - num_consts - num_carry
    used_carry_out, used_ys = split_list(used_outputs, [num_carry])

    # a carry is used if its output is, or the body reads it to compute a used output
    def step(used_carry: list[bool]) -> tuple[list[bool], tuple]:
        jaxpr_dce, used_inputs = pe.dce_jaxpr(
            jaxpr.jaxpr, [*used_carry, *used_ys],
            instantiate=[False] * num_consts + used_carry + [False] * num_xs)
        return split_list(used_inputs, [num_consts, num_carry])[1], (jaxpr_dce, used_inputs)

    used_carry, (jaxpr_dce, used_inputs) = fixpoint(step, used_carry_out)
    used_outs = [*used_carry, *used_ys]
    new_eqn = eqn.replace(
        invars=[v for v, u in zip(eqn.invars, used_inputs, strict=True) if u],
        outvars=[v for v, u in zip(eqn.outvars, used_outs, strict=True) if u],
        params=dict(p, jaxpr=ClosedJaxpr(jaxpr_dce, jaxpr.consts),
                    num_consts=sum(used_inputs[:num_consts]), num_carry=sum(used_carry)))
    return used_inputs, new_eqn


# ------------------------------------------------------------------ batching


# --8<-- [start:scan_batching]
def _scan_batching_rule(axis_data: AxisData, args: Sequence[Any], dims: Sequence[BatchDim], *,
                        reverse: bool, length: int, jaxpr: ClosedJaxpr, num_consts: int,
                        num_carry: int, unroll: int) -> tuple[list[Any], list[BatchDim]]:
    """Consts and carries batched on axis 0, xs on axis 1 (axis 0 is the scanned one)."""
    num_ys = len(jaxpr.out_avals) - num_carry
    consts_b, init_b, xs_b = split_list([d is not not_mapped for d in dims],
                                        [num_consts, num_carry])

    # a carry is batched if it starts batched or meets a batched const or x in the body
    def step(carry_b: list[bool]) -> tuple[list[bool], tuple]:
        batched, out_b = batch_jaxpr(jaxpr, axis_data, [*consts_b, *carry_b, *xs_b],
                                     instantiate=carry_b + [False] * num_ys)
        return out_b[:num_carry], (batched, out_b[num_carry:])

    carry_b, (jaxpr_batched, ys_b) = fixpoint(step, init_b)
    consts, init, xs = split_list(args, [num_consts, num_carry])
    consts_dims, init_dims, xs_dims = split_list(dims, [num_consts, num_carry])
    new_consts = [moveaxis(x, d, 0) if d is not not_mapped else x
                  for x, d in zip(consts, consts_dims, strict=True)]
    new_init = [broadcast(x, axis_data.size, 0) if now and d is not_mapped
                else moveaxis(x, d, 0) if now else x
                for x, d, now in zip(init, init_dims, carry_b, strict=True)]
    new_xs = [moveaxis(x, d, 1) if d is not not_mapped else x
              for x, d in zip(xs, xs_dims, strict=True)]
    outs = scan_p.bind(*new_consts, *new_init, *new_xs, reverse=reverse, length=length,
                       jaxpr=jaxpr_batched, num_consts=num_consts, num_carry=num_carry,
                       unroll=unroll)
    carry_dims = [0 if b else not_mapped for b in carry_b]
    ys_dims = [1 if b else not_mapped for b in ys_b]
    return outs, carry_dims + ys_dims
# --8<-- [end:scan_batching]


scan_p.def_impl(_scan_impl)
scan_p.def_abstract_eval(_scan_abstract_eval)
ad.primitive_jvps[scan_p] = _scan_jvp
ad.primitive_transposes[scan_p] = _scan_transpose
pe.custom_partial_eval_rules[scan_p] = _scan_partial_eval
pe.partial_eval_jaxpr_custom_rules[scan_p] = _scan_partial_eval_custom
pe.dce_rules[scan_p] = _scan_dce_rule
primitive_batchers[scan_p] = _scan_batching_rule
