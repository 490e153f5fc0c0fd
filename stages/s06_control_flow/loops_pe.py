"""Partial evaluation of scan and while: a fixpoint on which carries are unknown.

JAX: `_scan_partial_eval`, `_while_partial_eval` (`pe.custom_partial_eval_rules`), their
`*_partial_eval_custom` twins (`pe.partial_eval_jaxpr_custom_rules`) and `_scan_dce_rule`
(`pe.dce_rules`), in loops.py. A carry is unknown if it starts unknown or one trip round the
body makes it so; we split the body until that set stops growing.

* scan: the known scan runs now and also stacks the residuals, as extra ys; the unknown scan
  reads them as extra xs (loop-invariant residuals stay consts, known xs are passed as they are);
* while: nothing can be stacked (the trip count is unknown until the loop runs), so the known
  carries come from a loop over the known part and, if any carry is unknown, the whole loop
  is staged as well, recomputing the known part (JAX does the same).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

from stages.s02_tracing import core
from stages.s02_tracing.core import ClosedJaxpr, JaxprEqn, Var
from stages.s03_partial_eval import (
    JaxprTrace,
    JaxprTracer,
    custom_partial_eval_rules,
    dce_jaxpr,
    nothing_saveable,
    partial_eval_jaxpr_custom,
    partial_eval_jaxpr_custom_rules,
    partial_eval_jaxpr_nounits,
)
from stages.s03_partial_eval.dce import dce_rules, has_effects

from .common import (
    _move_binders_to_back,
    _prune_outputs,
    merge_lists,
    partition_list,
    split_list,
    unmapped_leading_aval,
)
from .conditionals_pe import _all_known, _fixpoint, _unknown_eqn
from .loops import scan_p, while_p

# ================================================================== scan


def _residual_kinds(jaxpr_known: ClosedJaxpr, num_known_outs: int, num_known_consts: int,
                    num_known_carry: int) -> list[tuple[str, int | None]]:
    """Where each residual of a split scan body comes from.

    ("const", i): a known const of the loop, or a constant of the body: loop-invariant, so it
    is passed once, as a const of the unknown scan. ("xs", i): a known xs slice: the stacked
    xs already hold it. ("loop", None): computed per iteration, stacked by the known scan.
    """
    invars = jaxpr_known.jaxpr.invars
    position = {id(v): i for i, v in enumerate(invars)}
    constvars = {id(v): num_known_consts + j for j, v in enumerate(jaxpr_known.jaxpr.constvars)}
    kinds: list[tuple[str, int | None]] = []
    for v in jaxpr_known.jaxpr.outvars[num_known_outs:]:
        i = position.get(id(v)) if isinstance(v, Var) else None
        if i is not None and i < num_known_consts:
            kinds.append(("const", i))
        elif isinstance(v, Var) and id(v) in constvars:
            kinds.append(("const", constvars[id(v)]))
        elif i is not None and i >= num_known_consts + num_known_carry:
            kinds.append(("xs", i))
        else:
            kinds.append(("loop", None))
    return kinds


# --8<-- [start:scan_partial_eval]
def _scan_partial_eval(trace: JaxprTrace, *tracers: JaxprTracer, reverse: bool, length: int,
                       num_consts: int, num_carry: int, jaxpr: ClosedJaxpr,
                       unroll: int) -> list[Any]:
    """A known scan that also stacks the residuals, then an unknown scan that reads them."""
    params = dict(reverse=reverse, length=length, unroll=unroll)
    if all(t.is_known() for t in tracers):
        return _all_known(scan_p, tracers, dict(params, jaxpr=jaxpr, num_consts=num_consts,
                                                num_carry=num_carry))
    num_ys = len(jaxpr.out_avals) - num_carry
    const_uk, init_uk, xs_uk = split_list([not t.is_known() for t in tracers],
                                          [num_consts, num_carry])

    # a carry is unknown if it starts unknown or the body makes it so: iterate to a fixpoint
    def carry_out_unknowns(carry_uk: list[bool]) -> list[bool]:
        uks = [*const_uk, *carry_uk, *xs_uk]
        return partial_eval_jaxpr_nounits(jaxpr, uks, [*carry_uk, *[False] * num_ys])[2][
            :num_carry]

    carry_uk = _fixpoint(carry_out_unknowns, init_uk)
    unknowns = [*const_uk, *carry_uk, *xs_uk]
    jaxpr_known, jaxpr_unknown, out_uk, res_avals = partial_eval_jaxpr_nounits(
        jaxpr, unknowns, [*carry_uk, *[False] * num_ys])
    num_res = len(res_avals)
    num_known_outs = len(jaxpr_known.out_avals) - num_res
    num_known_consts = num_consts - sum(const_uk)
    kinds = _residual_kinds(jaxpr_known, num_known_outs, num_known_consts,
                            num_carry - sum(carry_uk))
    # the known scan computes only the residuals no input already holds
    jaxpr_known = _prune_outputs(jaxpr_known, [True] * num_known_outs +
                                 [kind == "loop" for kind, _ in kinds])
    # unknown body: [residuals, unknown ins] -> [intensive res, unknown ins, extensive res]
    num_unknown_ins = len(jaxpr_unknown.in_avals) - num_res
    jaxpr_unknown = _move_binders_to_back(jaxpr_unknown, [kind != "const" for kind, _ in kinds]
                                          + [False] * num_unknown_ins)
    tracers = [trace.instantiate_const(t) if uk else t
               for t, uk in zip(tracers, unknowns, strict=True)]
    known_ins = [t.pval.get_known() for t in tracers if t.is_known()]
    outs = []
    if jaxpr_known.out_avals:
        outs = scan_p.bind(*known_ins, jaxpr=jaxpr_known, num_consts=num_known_consts,
                           num_carry=num_carry - sum(carry_uk), **params)
    known_outs, loop_res = split_list(outs, [num_known_outs])
    invariant_vals = [*known_ins[:num_known_consts], *jaxpr_known.consts]
    loop_res_iter = iter(loop_res)
    int_res = [invariant_vals[i] for kind, i in kinds if kind == "const"]
    ext_res = [known_ins[i] if kind == "xs" else next(loop_res_iter)
               for kind, i in kinds if kind != "const"]
    in_tracers = [*[trace.new_instantiated_const(r) for r in int_res],
                  *[t for t, uk in zip(tracers, unknowns, strict=True) if uk],
                  *[trace.new_instantiated_const(r) for r in ext_res]]
    carry_avals, y_avals = split_list(jaxpr_unknown.out_avals, [sum(carry_uk)])
    out_avals = [*carry_avals, *[unmapped_leading_aval(length, a) for a in y_avals]]
    out_tracers = _unknown_eqn(trace, in_tracers, out_avals, scan_p, dict(
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

    def split(carry_uk: list[bool]) -> tuple:
        return partial_eval_jaxpr_custom(jaxpr.jaxpr, [*const_uk, *carry_uk, *xs_uk], True,
                                         [*carry_uk, *[False] * num_ys], True, saveable)

    carry_uk = _fixpoint(lambda uk: split(uk)[2][:num_carry], init_uk)
    jaxpr_known, jaxpr_staged, unks_out, inst_out, num_res = split(carry_uk)
    staged = ClosedJaxpr(jaxpr_staged, jaxpr.consts)
    res_avals = staged.in_avals[:num_res]
    staged = _move_binders_to_back(staged, [True] * num_res + [False] * len(jaxpr.in_avals))
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
    if not any(used_outputs) and not has_effects(eqn):
        return [False] * len(eqn.invars), None
    p = eqn.params
    jaxpr, num_consts, num_carry = p["jaxpr"], p["num_consts"], p["num_carry"]
    num_xs = len(jaxpr.in_avals) - num_consts - num_carry
    used_carry, used_ys = split_list(used_outputs, [num_carry])
    for _ in range(1 + num_carry):
        jaxpr_dce, used_inputs = dce_jaxpr(
            jaxpr.jaxpr, [*used_carry, *used_ys],
            instantiate=[False] * num_consts + used_carry + [False] * num_xs)
        used_consts, used_carry_in, _ = split_list(used_inputs, [num_consts, num_carry])
        if used_carry_in == used_carry:
            break
        used_carry = list(map(operator.or_, used_carry, used_carry_in))
    used_outs = [*used_carry, *used_ys]
    new_eqn = eqn.replace(
        invars=[v for v, u in zip(eqn.invars, used_inputs, strict=True) if u],
        outvars=[v for v, u in zip(eqn.outvars, used_outs, strict=True) if u],
        params=dict(p, jaxpr=ClosedJaxpr(jaxpr_dce, jaxpr.consts),
                    num_consts=sum(used_consts), num_carry=sum(used_carry)))
    return used_inputs, new_eqn


# ================================================================== while


def _while_partial_eval(trace: JaxprTrace, *tracers: JaxprTracer, cond_nconsts: int,
                        cond_jaxpr: ClosedJaxpr, body_nconsts: int,
                        body_jaxpr: ClosedJaxpr) -> list[Any]:
    """Known carries come from a loop over the known part; if any carry is unknown, the whole
    loop is staged as well (it cannot save per-iteration residuals: no static trip count)."""
    params = dict(cond_nconsts=cond_nconsts, cond_jaxpr=cond_jaxpr,
                  body_nconsts=body_nconsts, body_jaxpr=body_jaxpr)
    unknowns = [not t.is_known() for t in tracers]
    cconst_uk, bconst_uk, init_uk = split_list(unknowns, [cond_nconsts, body_nconsts])
    carry_uk = _fixpoint(lambda uk: partial_eval_jaxpr_nounits(
        body_jaxpr, [*bconst_uk, *uk], uk)[2], init_uk)
    cond_known, _, (pred_uk,), _ = partial_eval_jaxpr_nounits(
        cond_jaxpr, [*cconst_uk, *carry_uk], instantiate=False)
    if pred_uk or not any(unknowns) or all(unknowns):
        return trace.default_process_primitive(while_p, tracers, params)
    body_known, _, _, _ = partial_eval_jaxpr_nounits(body_jaxpr, [*bconst_uk, *carry_uk],
                                                     carry_uk)
    num_known_carry = len(carry_uk) - sum(carry_uk)
    body_known = _prune_outputs(body_known, [True] * num_known_carry +
                                [False] * (len(body_known.out_avals) - num_known_carry))
    known_ins = [t.pval.get_known() for t, uk in
                 zip(tracers, [*cconst_uk, *bconst_uk, *carry_uk], strict=True) if not uk]
    known_outs = while_p.bind(*known_ins, cond_nconsts=cond_nconsts - sum(cconst_uk),
                              cond_jaxpr=cond_known, body_nconsts=body_nconsts - sum(bconst_uk),
                              body_jaxpr=body_known)
    staged = trace.default_process_primitive(while_p, tracers, params)
    return merge_lists(carry_uk, known_outs, [t for t, uk in zip(staged, carry_uk, strict=True)
                                              if uk])


def _while_partial_eval_custom(saveable: Callable, unks_in: Sequence[bool],
                               inst_in: Sequence[bool], eqn: JaxprEqn) -> tuple:
    """Known carries from the known part of the loop; the staged equation is the whole loop."""
    p = eqn.params
    cond_nconsts, body_nconsts = p["cond_nconsts"], p["body_nconsts"]
    cconst_uk, bconst_uk, init_uk = split_list(unks_in, [cond_nconsts, body_nconsts])

    def split_body(carry_uk: list[bool]) -> tuple:
        return partial_eval_jaxpr_custom(p["body_jaxpr"].jaxpr, [*bconst_uk, *carry_uk], True,
                                         carry_uk, True, nothing_saveable)

    carry_uk = _fixpoint(lambda uk: split_body(uk)[2], init_uk)
    new_inst = [x for x, inst in zip(eqn.invars, inst_in, strict=True)
                if isinstance(x, Var) and not inst]
    cond_known, _, (pred_uk,), _, _ = partial_eval_jaxpr_custom(
        p["cond_jaxpr"].jaxpr, [*cconst_uk, *carry_uk], True, False, True, nothing_saveable)
    if pred_uk:
        return None, eqn, [True] * len(carry_uk), [True] * len(carry_uk), new_inst
    body_known = split_body(carry_uk)[0]
    ins_known, _ = partition_list([*cconst_uk, *bconst_uk, *carry_uk], eqn.invars)
    outs_known, _ = partition_list(carry_uk, eqn.outvars)
    eqn_known = core.new_jaxpr_eqn(ins_known, outs_known, while_p, dict(
        cond_jaxpr=ClosedJaxpr(cond_known, p["cond_jaxpr"].consts),
        body_jaxpr=ClosedJaxpr(body_known, p["body_jaxpr"].consts),
        cond_nconsts=cond_nconsts - sum(cconst_uk), body_nconsts=body_nconsts - sum(bconst_uk)))
    return eqn_known, eqn, carry_uk, [True] * len(carry_uk), new_inst


def _while_dce_rule(used_outputs: list[bool], eqn: JaxprEqn) -> tuple[list[bool], Any]:
    """Keep the carries the predicate reads, the used ones, and those they are computed from.

    (JAX registers no dce rule for while, so its default keeps the whole loop.)"""
    if not any(used_outputs) and not has_effects(eqn):
        return [False] * len(eqn.invars), None
    p = eqn.params
    cond_nconsts, body_nconsts = p["cond_nconsts"], p["body_nconsts"]
    cond_jaxpr, body_jaxpr = p["cond_jaxpr"], p["body_jaxpr"]
    cond_used = dce_jaxpr(cond_jaxpr.jaxpr, [True], instantiate=False)[1]
    used_carry = list(map(operator.or_, used_outputs, cond_used[cond_nconsts:]))
    for _ in range(1 + len(used_carry)):
        body_used = dce_jaxpr(body_jaxpr.jaxpr, used_carry, instantiate=False)[1]
        grown = list(map(operator.or_, used_carry, body_used[body_nconsts:]))
        if grown == used_carry:
            break
        used_carry = grown
    body_dce, body_used = dce_jaxpr(body_jaxpr.jaxpr, used_carry,
                                    [False] * body_nconsts + used_carry)
    cond_dce, cond_used = dce_jaxpr(cond_jaxpr.jaxpr, [True],
                                    [False] * cond_nconsts + used_carry)
    used_inputs = [*cond_used[:cond_nconsts], *body_used[:body_nconsts], *used_carry]
    new_eqn = eqn.replace(
        invars=[v for v, u in zip(eqn.invars, used_inputs, strict=True) if u],
        outvars=[v for v, u in zip(eqn.outvars, used_carry, strict=True) if u],
        params=dict(cond_jaxpr=ClosedJaxpr(cond_dce, cond_jaxpr.consts),
                    body_jaxpr=ClosedJaxpr(body_dce, body_jaxpr.consts),
                    cond_nconsts=sum(cond_used[:cond_nconsts]),
                    body_nconsts=sum(body_used[:body_nconsts])))
    return used_inputs, new_eqn


custom_partial_eval_rules[scan_p] = _scan_partial_eval
custom_partial_eval_rules[while_p] = _while_partial_eval
partial_eval_jaxpr_custom_rules[scan_p] = _scan_partial_eval_custom
partial_eval_jaxpr_custom_rules[while_p] = _while_partial_eval_custom
dce_rules[scan_p] = _scan_dce_rule
dce_rules[while_p] = _while_dce_rule
