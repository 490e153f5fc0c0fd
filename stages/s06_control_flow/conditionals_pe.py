"""Partial evaluation of cond: split every branch, join their residuals.

JAX: `_cond_partial_eval` (the JaxprTrace rule, `pe.custom_partial_eval_rules`),
`_cond_partial_eval_custom` (the equation-level splitter remat uses,
`pe.partial_eval_jaxpr_custom_rules`) and `_cond_dce_rule` (`pe.dce_rules`), in
conditionals.py. Stage 3's default rule would stage the whole cond as soon as one operand is
unknown; this one splits each branch in two, makes an output unknown if it is unknown in any
branch, and gives all branches one residual signature: each known branch fills the other
branches' residual slots with zeros. The helpers `_all_known`, `_unknown_eqn` and `_fixpoint`
are shared with loops_pe.py.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Sequence
from typing import Any

from stages.s02_tracing import core, lax
from stages.s02_tracing import linear_util as lu
from stages.s02_tracing.core import ClosedJaxpr, JaxprEqn, ShapedArray, Var
from stages.s02_tracing.partial_eval import trace_to_jaxpr_dynamic
from stages.s03_partial_eval import (
    JaxprTrace,
    JaxprTracer,
    PartialVal,
    custom_partial_eval_rules,
    dce_jaxpr,
    partial_eval_jaxpr_custom,
    partial_eval_jaxpr_custom_rules,
    partial_eval_jaxpr_nounits,
)
from stages.s03_partial_eval.dce import dce_rules, has_effects
from stages.s03_partial_eval.partial_eval import new_eqn_recipe

from .common import (
    merge_lists,
    partition_list,
    split_list,
)
from .conditionals import cond_p


def _all_known(primitive: core.Primitive, tracers: Sequence[JaxprTracer], params: dict) -> Any:
    """Every operand known: the equation simply runs (on the parent trace)."""
    return primitive.bind(*[t.pval.get_known() for t in tracers], **params)


def _unknown_eqn(trace: JaxprTrace, in_tracers: list[JaxprTracer],
                 out_avals: Sequence[ShapedArray], primitive: core.Primitive,
                 params: dict) -> list[JaxprTracer]:
    """Record `primitive` on the unknown side; return its (unknown) output tracers."""
    out_tracers = [JaxprTracer(trace, PartialVal.unknown(a), None) for a in out_avals]
    recipe = new_eqn_recipe(trace, in_tracers, out_tracers, primitive, params)
    for t in out_tracers:
        t.recipe = recipe
    return out_tracers


def _fixpoint(split: Callable[[list[bool]], list[bool]], carry_uk: list[bool]) -> list[bool]:
    """Grow the set of unknown carries until a trip round the loop adds none."""
    for _ in range(1 + len(carry_uk)):
        carry_uk_out = split(carry_uk)
        if carry_uk_out == carry_uk:
            return carry_uk
        carry_uk = list(map(operator.or_, carry_uk, carry_uk_out))
    raise AssertionError("Fixpoint not reached")


# ================================================================== cond


def _merge_branch_residuals(branch_res_avals: list[list[ShapedArray]]
                            ) -> tuple[list[ShapedArray], list[list[int]]]:
    """One residual list all branches share, reusing slots of equal type across branches.

    [x], [y], [x, x] -> [x, y, x] with branch slots [[0], [1], [0, 2]].
    """
    def tagged(avals: list[ShapedArray]) -> list[tuple[ShapedArray, int]]:
        counts: dict[ShapedArray, itertools.count] = {}
        return [(a, next(counts.setdefault(a, itertools.count()))) for a in avals]

    branch_tags = [tagged(avals) for avals in branch_res_avals]
    all_tags = list(dict.fromkeys(t for tags in branch_tags for t in tags))
    index = {t: i for i, t in enumerate(all_tags)}
    return [a for a, _ in all_tags], [[index[t] for t in tags] for tags in branch_tags]


def _join_cond_outputs(jaxprs: list[ClosedJaxpr], all_res_avals: list[ShapedArray],
                       res_indices: list[list[int]], num_outs: int) -> tuple[ClosedJaxpr, ...]:
    """Each known branch returns every residual slot: zeros in the slots it does not fill."""
    def augment(jaxpr: ClosedJaxpr, indices: list[int]) -> ClosedJaxpr:
        def f_aug(*args: Any) -> list[Any]:
            outs, residuals = split_list(core.jaxpr_as_fun(jaxpr)(*args), [num_outs])
            slots = [lax.full(a.shape, 0, a.dtype) for a in all_res_avals]
            for i, r in zip(indices, residuals, strict=True):
                slots[i] = r
            return [*outs, *slots]

        out, _, consts = trace_to_jaxpr_dynamic(lu.wrap_init(f_aug), jaxpr.in_avals)
        return ClosedJaxpr(out, consts)

    return tuple(augment(j, ix) for j, ix in zip(jaxprs, res_indices, strict=True))


def _join_cond_staged_inputs(jaxprs: list[ClosedJaxpr], all_res_avals: list[ShapedArray],
                             res_indices: list[list[int]]) -> tuple[ClosedJaxpr, ...]:
    """Each unknown branch takes every residual slot, ignoring those it did not fill."""
    out = []
    for jaxpr, indices in zip(jaxprs, res_indices, strict=True):
        res_vars, other_vars = split_list(jaxpr.jaxpr.invars, [len(indices)])
        slots = [Var(a) for a in all_res_avals]
        for i, v in zip(indices, res_vars, strict=True):
            slots[i] = v
        out.append(ClosedJaxpr(jaxpr.jaxpr.replace(invars=[*slots, *other_vars]), jaxpr.consts))
    return tuple(out)


# --8<-- [start:cond_partial_eval]
def _cond_partial_eval(trace: JaxprTrace, *tracers: JaxprTracer,
                       branches: tuple[ClosedJaxpr, ...]) -> list[Any]:
    """Split each branch; the known cond returns known outputs and residuals, the staged cond
    (same index) consumes them."""
    in_unknowns = [not t.is_known() for t in tracers]
    index_uk, *ops_uk = in_unknowns
    if not any(in_unknowns):
        return _all_known(cond_p, tracers, dict(branches=branches))
    if index_uk:
        # which branch runs is unknown: stage the whole cond
        return trace.default_process_primitive(cond_p, tracers, dict(branches=branches))
    # an output is unknown if it is unknown in any branch
    branch_uks = [partial_eval_jaxpr_nounits(b, ops_uk, instantiate=False)[2] for b in branches]
    out_uks = [any(uks) for uks in zip(*branch_uks, strict=True)]
    splits = [partial_eval_jaxpr_nounits(b, ops_uk, instantiate=out_uks) for b in branches]
    all_res_avals, res_indices = _merge_branch_residuals([s[3] for s in splits])
    num_known_outs = len(out_uks) - sum(out_uks)
    branches_known = _join_cond_outputs([s[0] for s in splits], all_res_avals, res_indices,
                                        num_known_outs)
    branches_unknown = _join_cond_staged_inputs([s[1] for s in splits], all_res_avals,
                                                res_indices)
    known_ins = [t.pval.get_known() for t in tracers if t.is_known()]
    outs = cond_p.bind(*known_ins, branches=branches_known) if branches_known[0].out_avals \
        else []  # nothing to compute on the known side: no cond at all
    known_outs, res = split_list(outs, [num_known_outs])
    index_tracer = trace.instantiate_const(tracers[0])
    res_tracers = [trace.new_instantiated_const(r) for r in res]
    ops_tracers = [t for t, uk in zip(tracers[1:], ops_uk, strict=True) if uk]
    out_tracers = _unknown_eqn(trace, [index_tracer, *res_tracers, *ops_tracers],
                               branches_unknown[0].out_avals, cond_p,
                               dict(branches=branches_unknown))
    return merge_lists(out_uks, known_outs, out_tracers)
# --8<-- [end:cond_partial_eval]


def _cond_partial_eval_custom(saveable: Callable, unks_in: Sequence[bool],
                              inst_in: Sequence[bool], eqn: JaxprEqn) -> tuple:
    """The equation-level split (for remat): the staged cond takes every operand."""
    index_uk, *ops_uk = unks_in
    branches = eqn.params["branches"]
    new_inst = [x for x, inst in zip(eqn.invars, inst_in, strict=True)
                if isinstance(x, Var) and not inst]
    if index_uk:
        all_true = [True] * len(eqn.outvars)
        return None, eqn, all_true, all_true, new_inst
    unks_out = [False] * len(eqn.outvars)
    for b in branches:
        uks = partial_eval_jaxpr_custom(b.jaxpr, ops_uk, True, False, True, saveable)[2]
        unks_out = list(map(operator.or_, unks_out, uks))
    known, staged, res_avals = [], [], []
    for b in branches:
        jk, js, _, inst_out, num_res = partial_eval_jaxpr_custom(b.jaxpr, ops_uk, True,
                                                                 unks_out, True, saveable)
        known.append(ClosedJaxpr(jk, b.consts))
        staged.append(ClosedJaxpr(js, b.consts))
        res_avals.append(staged[-1].in_avals[:num_res])
    all_res_avals, res_indices = _merge_branch_residuals(res_avals)
    num_known_outs = len(unks_out) - sum(unks_out)
    branches_known = _join_cond_outputs(known, all_res_avals, res_indices, num_known_outs)
    branches_staged = _join_cond_staged_inputs(staged, all_res_avals, res_indices)
    res_binders = [Var(a) for a in all_res_avals]
    ins_known, _ = partition_list(unks_in, eqn.invars)
    outs_known, _ = partition_list(unks_out, eqn.outvars)
    eqn_known = core.new_jaxpr_eqn(ins_known, [*outs_known, *res_binders], cond_p,
                                   dict(branches=branches_known))
    _, outs_staged = partition_list(inst_out, eqn.outvars)
    eqn_staged = core.new_jaxpr_eqn([eqn.invars[0], *res_binders, *eqn.invars[1:]],
                                    outs_staged, cond_p, dict(branches=branches_staged))
    return eqn_known, eqn_staged, unks_out, inst_out, [*new_inst, *res_binders]


def _cond_dce_rule(used_outputs: list[bool], eqn: JaxprEqn) -> tuple[list[bool], Any]:
    """Prune every branch to the used outputs; keep an operand if any branch reads it."""
    if not any(used_outputs) and not has_effects(eqn):
        return [False] * len(eqn.invars), None
    branches = eqn.params["branches"]
    used_inputs = [False] * (len(eqn.invars) - 1)
    for b in branches:
        used = dce_jaxpr(b.jaxpr, used_outputs, instantiate=False)[1]
        used_inputs = list(map(operator.or_, used_inputs, used))
    new_branches = tuple(ClosedJaxpr(dce_jaxpr(b.jaxpr, used_outputs, used_inputs)[0],
                                     b.consts) for b in branches)
    used_all = [True, *used_inputs]
    new_eqn = eqn.replace(
        invars=[v for v, u in zip(eqn.invars, used_all, strict=True) if u],
        outvars=[v for v, u in zip(eqn.outvars, used_outputs, strict=True) if u],
        params=dict(eqn.params, branches=new_branches))
    return used_all, new_eqn


custom_partial_eval_rules[cond_p] = _cond_partial_eval
partial_eval_jaxpr_custom_rules[cond_p] = _cond_partial_eval_custom
dce_rules[cond_p] = _cond_dce_rule
