"""The cond primitive and every rule it has: impl, abstract eval, jvp, transpose, partial eval
(trace-level and equation-level), DCE and batching.

JAX: the rules of `cond_p` in jax/_src/lax/control_flow/conditionals.py. The equation is
`cond[branches=(false_jaxpr, true_jaxpr)] index *operands`: an int32 index picks a branch, and
every branch takes the same operands and returns outputs of the same types. Each rule
transforms every branch the same way, so the branches keep one signature: an output is
nonzero, unknown or batched if it is in any branch.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from stages.s02_tracing import core, lax
from stages.s02_tracing import linear_util as lu
from stages.s02_tracing.core import ClosedJaxpr, JaxprEqn, ShapedArray, Var
from stages.s02_tracing.lax.empty import empty_like_shaped_array
from stages.s02_tracing.partial_eval import trace_to_closed_jaxpr
from stages.s03_partial_eval import partial_eval as pe
from stages.s04_autodiff import ad
from stages.s04_autodiff.ad_util import stop_gradient
from stages.s05_vmap.batching import (
    AxisData,
    BatchDim,
    batch_jaxpr,
    bdim_at_front,
    moveaxis,
    not_mapped,
    primitive_batchers,
)

from .common import (
    as_numpy,
    bind_known,
    compiled,
    fill_zeros,
    nonzero,
    prune_zeros,
    stage_unknown_eqn,
)
from .util import merge_lists, partition_list, split_list, typematch

cond_p = core.Primitive("cond")
cond_p.multiple_results = True

# ------------------------------------------------------------------ impl and abstract eval


# --8<-- [start:cond_impl]
def _cond_impl(index: np.ndarray, *args: Any, branches: Sequence[ClosedJaxpr]) -> list[Any]:
    """Run the one branch the index picks; any index out of range runs the last branch.

    That is XLA's Conditional (so -1 and -5 run the last branch too); `switch` clamps its
    index before binding, so only a cond_p bound directly sees the difference.
    """
    # every branch is compiled, the one that runs and the others (pruned, refused if one holds
    # forward mode over a custom_vjp)
    branches = [compiled(b) for b in branches]
    i = int(index)
    branch = branches[i if 0 <= i < len(branches) else len(branches) - 1]
    outs = core.eval_jaxpr(branch.jaxpr, branch.consts, *args)
    return [as_numpy(x, a) for x, a in zip(outs, branch.out_avals, strict=True)]
# --8<-- [end:cond_impl]


def _cond_abstract_eval(index: ShapedArray, *avals: ShapedArray,
                        branches: Sequence[ClosedJaxpr]) -> list[ShapedArray]:
    """The outputs of branch 0 (all branches were checked to agree when cond was called)."""
    if index.shape or not np.issubdtype(index.dtype, np.integer):
        raise core.JaxprTypeError(f"cond index must be an integer scalar, got {index}")
    for branch in branches:
        if len(branch.in_avals) != len(avals) or not all(
                typematch(a, b) for a, b in zip(branch.in_avals, avals, strict=True)):
            raise core.JaxprTypeError(
                f"cond branch takes {[str(a) for a in branch.in_avals]} but is called with "
                f"{[str(a) for a in avals]}")
        if not all(typematch(a, b) for a, b in
                   zip(branch.out_avals, branches[0].out_avals, strict=True)):
            raise core.JaxprTypeError("cond branches must have equal output types")
    return list(branches[0].out_avals)


# ------------------------------------------------------------------ autodiff


def _cond_jvp(primals: Sequence[Any], tangents: Sequence[Any], *,
              branches: tuple[ClosedJaxpr, ...]) -> tuple[list[Any], list[Any]]:
    """Differentiate every branch; an output tangent is nonzero if it is in any branch."""
    _, *ops_nz = nonzero(tangents)
    outs_nz = [ad.jvp_jaxpr(b, ops_nz, instantiate=False)[1] for b in branches]
    out_nz = [any(nz) for nz in zip(*outs_nz, strict=True)]
    branches_jvp = tuple(ad.jvp_jaxpr(b, ops_nz, instantiate=out_nz)[0] for b in branches)
    index, *ops = primals
    out = cond_p.bind(index, *ops, *prune_zeros(tangents[1:]), branches=branches_jvp)
    out_primals, out_tangents = split_list(out, [len(out_nz)])
    return out_primals, fill_zeros(out_primals, out_nz, out_tangents)


# --8<-- [start:cond_transpose]
def _cond_transpose(cts: Sequence[Any], index: Any, *args: Any,
                    branches: tuple[ClosedJaxpr, ...]) -> list[Any]:
    """Transpose each branch on its own; one cond picks the transposed branch to run."""
    linear = [ad.is_undefined_primal(x) for x in args]
    res = [x for x, lin in zip(args, linear, strict=True) if not lin]
    cts = [ad.instantiate_zeros(ct) for ct in cts]
    ct_avals = [core.get_aval(ct) for ct in cts]  # as they arrive: a strong ct stays strong

    def transpose_branch(branch: ClosedJaxpr) -> ClosedJaxpr:
        def transposed(*res_and_cts: Any) -> list[Any]:
            res_vals, cts_out = split_list(res_and_cts, [len(res)])
            res_iter = iter(res_vals)
            primals = [ad.UndefinedPrimal(a) if lin else next(res_iter)
                       for a, lin in zip(branch.in_avals, linear, strict=True)]
            cts_in = ad.backward_pass(branch.jaxpr, branch.consts, primals, cts_out)
            return [ad.instantiate_zeros(ct) for ct, lin in zip(cts_in, linear, strict=True)
                    if lin]

        in_avals = [*[core.get_aval(r) for r in res], *ct_avals]
        return trace_to_closed_jaxpr(lu.wrap_init(transposed), in_avals)

    cts_out = iter(cond_p.bind(index, *res, *cts,
                               branches=tuple(transpose_branch(b) for b in branches)))
    return [None, *[next(cts_out) if lin else None for lin in linear]]
# --8<-- [end:cond_transpose]


# ------------------------------------------------------------------ partial eval


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
    """Each known branch returns every residual slot: empty2 in the slots it does not fill."""
    def augment(jaxpr: ClosedJaxpr, indices: list[int]) -> ClosedJaxpr:
        def f_aug(*args: Any) -> list[Any]:
            outs, residuals = split_list(core.jaxpr_as_fun(jaxpr)(*args), [num_outs])
            slots = [empty_like_shaped_array(a) for a in all_res_avals]
            for i, r in zip(indices, residuals, strict=True):
                slots[i] = r
            return [*outs, *slots]

        return trace_to_closed_jaxpr(lu.wrap_init(f_aug), jaxpr.in_avals)

    return tuple(augment(j, ix) for j, ix in zip(jaxprs, res_indices, strict=True))


def _join_cond_staged_inputs(jaxprs: list[ClosedJaxpr], all_res_avals: list[ShapedArray],
                             res_indices: list[list[int]]) -> tuple[ClosedJaxpr, ...]:
    """Each unknown branch takes every residual slot; the ones it ignores share binders."""
    out, all_res_vars = [], [Var(a) for a in all_res_avals]
    for jaxpr, indices in zip(jaxprs, res_indices, strict=True):
        res_vars, other_vars = split_list(jaxpr.jaxpr.invars, [len(indices)])
        slots = list(all_res_vars)
        for i, v in zip(indices, res_vars, strict=True):
            slots[i] = v
        out.append(ClosedJaxpr(jaxpr.jaxpr.replace(invars=[*slots, *other_vars]), jaxpr.consts))
    return tuple(out)


# --8<-- [start:cond_partial_eval]
def _cond_partial_eval(trace: pe.JaxprTrace, *tracers: pe.JaxprTracer,
                       branches: tuple[ClosedJaxpr, ...]) -> list[Any]:
    """Split each branch; the known cond returns known outputs and residuals, the staged cond
    (same index) consumes them."""
    in_unknowns = [not t.is_known() for t in tracers]
    index_uk, *ops_uk = in_unknowns
    if not any(in_unknowns):
        return bind_known(cond_p, tracers, dict(branches=branches))
    if index_uk:
        # which branch runs is unknown: stage the whole cond
        return trace.default_process_primitive(cond_p, tracers, dict(branches=branches))
    # an output is unknown if it is unknown in any branch
    branch_uks = [pe.partial_eval_jaxpr_nounits(b, ops_uk, instantiate=False)[2] for b in branches]
    out_uks = [any(uks) for uks in zip(*branch_uks, strict=True)]
    splits = [pe.partial_eval_jaxpr_nounits(b, ops_uk, instantiate=out_uks) for b in branches]
    # the branches' residuals differ: every known branch returns all of them (empty2 where it
    # has none), so the staged cond can take one residual list whichever branch ran
    all_res_avals, res_indices = _merge_branch_residuals([s[3] for s in splits])
    num_known_outs = len(out_uks) - sum(out_uks)
    known = [ClosedJaxpr(pe.dce_jaxpr(s[0].jaxpr, True, True)[0], s[0].consts) for s in splits]
    branches_known = _join_cond_outputs(known, all_res_avals, res_indices, num_known_outs)
    branches_unknown = _join_cond_staged_inputs([s[1] for s in splits], all_res_avals,
                                                res_indices)
    known_ins = [t.pval.get_known() for t in tracers if t.is_known()]
    outs = cond_p.bind(*known_ins, branches=branches_known) if branches_known[0].out_avals \
        else []  # nothing to compute on the known side: no cond at all
    known_outs, res = split_list(outs, [num_known_outs])
    index_tracer = trace.instantiate_const(tracers[0])
    res_tracers = [trace.new_instantiated_const(r) for r in res]
    ops_tracers = [t for t, uk in zip(tracers[1:], ops_uk, strict=True) if uk]
    out_tracers = stage_unknown_eqn(trace, [index_tracer, *res_tracers, *ops_tracers],
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
        uks = pe.partial_eval_jaxpr_custom(b.jaxpr, ops_uk, True, False, True, saveable)[2]
        unks_out = list(map(operator.or_, unks_out, uks))
    known, staged, res_avals = [], [], []
    for b in branches:
        jk, js, _, inst_out, num_res = pe.partial_eval_jaxpr_custom(b.jaxpr, ops_uk, True,
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
    if not any(used_outputs) and not pe.has_effects(eqn):
        return [False] * len(eqn.invars), None
    branches = eqn.params["branches"]
    used_inputs = [False] * (len(eqn.invars) - 1)
    for b in branches:
        used = pe.dce_jaxpr(b.jaxpr, used_outputs, instantiate=False)[1]
        used_inputs = list(map(operator.or_, used_inputs, used))
    new_branches = tuple(ClosedJaxpr(pe.dce_jaxpr(b.jaxpr, used_outputs, used_inputs)[0],
                                     b.consts) for b in branches)
    used_all = [True, *used_inputs]
    new_eqn = eqn.replace(
        invars=[v for v, u in zip(eqn.invars, used_all, strict=True) if u],
        outvars=[v for v, u in zip(eqn.outvars, used_outputs, strict=True) if u],
        params=dict(eqn.params, branches=new_branches))
    return used_all, new_eqn


# ------------------------------------------------------------------ batching


def _bcast_select_n(which: Any, *cases: Any) -> Any:
    """select_n with a batch of scalars `which` spread over the cases' trailing axes."""
    if np.ndim(which) != np.ndim(cases[0]):
        which = lax.broadcast_in_dim(which, np.shape(cases[0]), list(range(np.ndim(which))))
    return lax.select_n(which, *cases)


# --8<-- [start:cond_batching]
def _cond_batching_rule(axis_data: AxisData, args: Sequence[Any], dims: Sequence[BatchDim],
                        *, branches: Sequence[ClosedJaxpr]) -> tuple[list[Any], list[BatchDim]]:
    """Unbatched index: one cond over batched branches. Batched index: every branch runs on
    the whole batch and select_n picks, per example, the output of that example's branch."""
    index, *ops = args
    index_dim, *op_dims = dims
    if index_dim is not not_mapped:
        # EXERCISE 6.5 (cond-as-select): run every branch on every example, then select_n
        index, *ops = (bdim_at_front(x, d, axis_data.size) for x, d in zip(args, dims,
                                                                          strict=True))
        in_batched = [True] * len(branches[0].in_avals)
        out_batched = [True] * len(branches[0].out_avals)
        branch_outs = []
        for i, branch in enumerate(branches):
            batched, _ = batch_jaxpr(branch, axis_data, in_batched, out_batched)
            # the examples that do not take branch i see its operands under stop_gradient, so
            # a nan or inf in a branch they never take cannot reach their gradient
            predicate = lax.eq(index, np.int32(i))
            ops_i = [_bcast_select_n(predicate, stop_gradient(x), x) for x in ops]
            branch_outs.append(core.jaxpr_as_fun(batched)(*ops_i))
        out = [_bcast_select_n(index, *outs) for outs in zip(*branch_outs, strict=True)]
        return out, [0] * len(out)
        # END EXERCISE
    ops_batched = [d is not not_mapped for d in op_dims]
    ops = [moveaxis(x, d, 0) if b else x for x, d, b in zip(ops, op_dims, ops_batched,
                                                             strict=True)]
    # an output batched in any branch must be batched in all of them
    outs_batched = [batch_jaxpr(b, axis_data, ops_batched, False)[1] for b in branches]
    out_batched = [any(bs) for bs in zip(*outs_batched, strict=True)]
    new_branches = tuple(batch_jaxpr(b, axis_data, ops_batched, out_batched)[0]
                         for b in branches)
    out = cond_p.bind(index, *ops, branches=new_branches)
    return out, [0 if b else not_mapped for b in out_batched]
# --8<-- [end:cond_batching]


cond_p.def_impl(_cond_impl)
cond_p.def_abstract_eval(_cond_abstract_eval)
ad.primitive_jvps[cond_p] = _cond_jvp
ad.primitive_transposes[cond_p] = _cond_transpose
pe.custom_partial_eval_rules[cond_p] = _cond_partial_eval
pe.partial_eval_jaxpr_custom_rules[cond_p] = _cond_partial_eval_custom
pe.dce_rules[cond_p] = _cond_dce_rule
primitive_batchers[cond_p] = _cond_batching_rule
