"""The while primitive and every rule it has: impl, abstract eval, jvp, transpose (a refusal),
partial eval (trace-level and equation-level), DCE and batching.

JAX: the rules of `while_p` in jax/_src/lax/control_flow/loops.py. The equation is
`while[cond_jaxpr cond_nconsts body_jaxpr body_nconsts] *cond_consts *body_consts *init`: the
body maps the carry to the carry while the predicate holds. Unlike scan, the trip count is
unknown until the loop runs, so nothing per iteration can be stored: reverse mode refuses it,
and partial eval recomputes the known part on the unknown side.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from stages.s02_tracing import core
from stages.s02_tracing import linear_util as lu
from stages.s02_tracing.core import ClosedJaxpr, JaxprEqn, ShapedArray, Var
from stages.s02_tracing.partial_eval import trace_to_closed_jaxpr
from stages.s03_partial_eval import partial_eval as pe
from stages.s03_partial_eval.ad_checkpoint import nothing_saveable
from stages.s04_autodiff import ad
from stages.s05_vmap.batching import (
    AxisData,
    BatchDim,
    batch_jaxpr,
    batch_jaxpr_axes,
    broadcast,
    moveaxis,
    not_mapped,
    primitive_batchers,
)

from .common import (
    as_numpy,
    compiled,
    fill_zeros,
    fixpoint,
    nonzero,
    prune_closed_jaxpr_outputs,
    prune_zeros,
    rearrange_binders,
)
from .util import merge_lists, partition_list, split_list

while_p = core.Primitive("while")
while_p.multiple_results = True

# ------------------------------------------------------------------ impl and abstract eval


# --8<-- [start:while_impl]
def _while_loop_impl(*args: Any, cond_nconsts: int, cond_jaxpr: ClosedJaxpr, body_nconsts: int,
                     body_jaxpr: ClosedJaxpr) -> list[Any]:
    """Run the body while the predicate holds.

    Under vmap the predicate may be a batch of bools (one per example, leading the carries'
    shapes): the loop then runs until every example is done, and an example that is done
    keeps its carry while the others go round again.
    """
    cond_consts, body_consts, carry = split_list(args, [cond_nconsts, body_nconsts])
    avals = body_jaxpr.out_avals
    # compiled whole, the loop entered or not (JAX has no DCE rule for while)
    cond_jaxpr, body_jaxpr = compiled(cond_jaxpr, False), compiled(body_jaxpr, False)

    def predicate(carry: list[Any]) -> np.ndarray:
        (pred,) = core.eval_jaxpr(cond_jaxpr.jaxpr, cond_jaxpr.consts, *cond_consts, *carry)
        return np.asarray(pred, dtype=bool)

    pred = predicate(carry)
    # EXERCISE 6.4 (batched-predicate): loop while any example's predicate holds; update only those
    while pred.any():
        new = core.eval_jaxpr(body_jaxpr.jaxpr, body_jaxpr.consts, *body_consts, *carry)
        new = [as_numpy(x, a) for x, a in zip(new, avals, strict=True)]
        if pred.ndim:
            # the examples whose predicate is False keep their value
            carry = [np.where(pred.reshape(pred.shape + (1,) * (np.ndim(c) - pred.ndim)), n, c)
                     for n, c in zip(new, carry, strict=True)]
        else:
            carry = new
        pred = predicate(carry)
    # END EXERCISE
    return [as_numpy(x, a) for x, a in zip(carry, avals, strict=True)]
# --8<-- [end:while_impl]


def _while_loop_abstract_eval(*avals: ShapedArray, cond_nconsts: int, cond_jaxpr: ClosedJaxpr,
                              body_nconsts: int, body_jaxpr: ClosedJaxpr) -> list[ShapedArray]:
    """The carry's avals: the body's outputs."""
    num_carry = len(avals) - cond_nconsts - body_nconsts
    for name, jaxpr, nconsts in (("cond", cond_jaxpr, cond_nconsts),
                                 ("body", body_jaxpr, body_nconsts)):
        if len(jaxpr.in_avals) != nconsts + num_carry:
            raise core.JaxprTypeError(f"while_loop len({name}_jaxpr.in_avals)="
                                      f"{len(jaxpr.in_avals)} but {nconsts + num_carry=}")
    return list(body_jaxpr.out_avals)


# ------------------------------------------------------------------ autodiff


def _while_loop_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, cond_nconsts: int,
                    cond_jaxpr: ClosedJaxpr, body_nconsts: int, body_jaxpr: ClosedJaxpr
                    ) -> tuple[list[Any], list[Any]]:
    """Carry (value, tangent) pairs round the loop; the predicate ignores the tangents."""
    cconst_nz, bconst_nz, init_nz = split_list(nonzero(tangents), [cond_nconsts, body_nconsts])

    # a zero carry tangent stays zero only if the body never makes it nonzero
    def step(carry_nz: list[bool]) -> tuple[list[bool], tuple]:
        body_jvp, nz_out = ad.jvp_jaxpr(body_jaxpr, [*bconst_nz, *carry_nz], instantiate=carry_nz)
        return nz_out, (body_jvp, nz_out)

    carry_nz, (body_jvp, nz_out) = fixpoint(step, init_nz)
    nonzeros = [*cconst_nz, *bconst_nz, *carry_nz]
    tangents = [ad.instantiate_zeros(t) if nz else t
                for t, nz in zip(tangents, nonzeros, strict=True)]
    cconsts, bconsts, init = split_list(primals, [cond_nconsts, body_nconsts])
    _, bconst_dot, init_dot = (prune_zeros(t) for t in
                               split_list(tangents, [cond_nconsts, body_nconsts]))
    num_carry = len(init)
    body_jvp = rearrange_binders(body_jvp, [body_nconsts, num_carry],
                                 [len(bconst_dot), len(init_dot)], [num_carry], [len(init_dot)])
    # the predicate takes the tangent carries too, and never reads them
    extra = [core.Var(core.get_aval(t)) for t in init_dot]
    cond_aug = ClosedJaxpr(cond_jaxpr.jaxpr.replace(invars=[*cond_jaxpr.jaxpr.invars, *extra]),
                           cond_jaxpr.consts)
    out = while_p.bind(*cconsts, *bconsts, *bconst_dot, *init, *init_dot,
                       cond_nconsts=cond_nconsts, cond_jaxpr=cond_aug,
                       body_nconsts=body_nconsts + len(bconst_dot), body_jaxpr=body_jvp)
    out_carry, out_dot = split_list(out, [num_carry])
    return out_carry, fill_zeros(out_carry, nz_out, out_dot)


# --8<-- [start:while_transpose]
def _while_transpose_error(*args: Any, **params: Any) -> Any:
    raise ValueError("Reverse-mode differentiation does not work for lax.while_loop or "
                     "lax.fori_loop with dynamic start/stop values. Try using lax.scan, or "
                     "using fori_loop with static start/stop.")
# --8<-- [end:while_transpose]


# ------------------------------------------------------------------ partial eval


def _while_partial_eval(trace: pe.JaxprTrace, *tracers: pe.JaxprTracer, cond_nconsts: int,
                        cond_jaxpr: ClosedJaxpr, body_nconsts: int,
                        body_jaxpr: ClosedJaxpr) -> list[Any]:
    """Known carries come from a loop over the known part; if any carry is unknown, the whole
    loop is staged as well (it cannot save per-iteration residuals: no static trip count)."""
    params = dict(cond_nconsts=cond_nconsts, cond_jaxpr=cond_jaxpr,
                  body_nconsts=body_nconsts, body_jaxpr=body_jaxpr)
    unknowns = [not t.is_known() for t in tracers]
    cconst_uk, bconst_uk, init_uk = split_list(unknowns, [cond_nconsts, body_nconsts])

    # a carry is unknown if it starts unknown or the body makes it so
    def step(carry_uk: list[bool]) -> tuple[list[bool], ClosedJaxpr]:
        known, _, carry_uk_out, _ = pe.partial_eval_jaxpr_nounits(
            body_jaxpr, [*bconst_uk, *carry_uk], carry_uk)
        return carry_uk_out, known

    carry_uk, body_known = fixpoint(step, init_uk)
    cond_known, _, (pred_uk,), _ = pe.partial_eval_jaxpr_nounits(
        cond_jaxpr, [*cconst_uk, *carry_uk], instantiate=False)
    if pred_uk or not any(unknowns) or all(unknowns):
        return trace.default_process_primitive(while_p, tracers, params)
    num_known_carry = len(carry_uk) - sum(carry_uk)
    body_known = prune_closed_jaxpr_outputs(
        body_known, [True] * num_known_carry + [False] * (len(body_known.out_avals)
                                                          - num_known_carry))
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

    def step(carry_uk: list[bool]) -> tuple[list[bool], core.Jaxpr]:
        split = pe.partial_eval_jaxpr_custom(p["body_jaxpr"].jaxpr, [*bconst_uk, *carry_uk], True,
                                          carry_uk, True, nothing_saveable)
        return split[2], split[0]

    carry_uk, body_known = fixpoint(step, init_uk)
    new_inst = [x for x, inst in zip(eqn.invars, inst_in, strict=True)
                if isinstance(x, Var) and not inst]
    cond_known, _, (pred_uk,), _, _ = pe.partial_eval_jaxpr_custom(
        p["cond_jaxpr"].jaxpr, [*cconst_uk, *carry_uk], True, False, True, nothing_saveable)
    if pred_uk:
        return None, eqn, [True] * len(carry_uk), [True] * len(carry_uk), new_inst
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
    if not any(used_outputs) and not pe.has_effects(eqn):
        return [False] * len(eqn.invars), None
    p = eqn.params
    cond_nconsts, body_nconsts = p["cond_nconsts"], p["body_nconsts"]
    cond_jaxpr, body_jaxpr = p["cond_jaxpr"], p["body_jaxpr"]
    cond_used = pe.dce_jaxpr(cond_jaxpr.jaxpr, [True], instantiate=False)[1]

    # a carry is used if its output is, the predicate reads it, or the body computes a used
    # carry from it
    def step(used_carry: list[bool]) -> tuple[list[bool], None]:
        return pe.dce_jaxpr(body_jaxpr.jaxpr, used_carry, instantiate=False)[1][body_nconsts:], None

    used_carry, _ = fixpoint(step, list(map(operator.or_, used_outputs,
                                             cond_used[cond_nconsts:])))
    body_dce, body_used = pe.dce_jaxpr(body_jaxpr.jaxpr, used_carry,
                                    [False] * body_nconsts + used_carry)
    cond_dce, cond_used = pe.dce_jaxpr(cond_jaxpr.jaxpr, [True],
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


# ------------------------------------------------------------------ batching


def _batch_jaxpr_at(jaxpr: ClosedJaxpr, axis_data: AxisData, consts_batched: list[bool],
                    carry_dims: list[BatchDim], out_batched: list[bool], axis: int
                    ) -> ClosedJaxpr:
    """Batch a while's cond or body: consts on axis 0, carries and batched outputs on `axis`.

    JAX needs no such helper: its batched predicate is always reduced to a scalar."""
    in_dims = [0 if b else not_mapped for b in consts_batched] + carry_dims
    batched, _ = batch_jaxpr_axes(jaxpr, axis_data, in_dims, out_batched)
    if axis == 0:
        return batched

    def outputs_at_axis(*args: Any) -> list[Any]:
        outs = core.eval_jaxpr(batched.jaxpr, batched.consts, *args)
        return [moveaxis(x, 0, axis) if b else x for x, b in zip(outs, out_batched, strict=True)]

    fun = lu.wrap_init(outputs_at_axis, debug_info=jaxpr.jaxpr.debug_info)
    return trace_to_closed_jaxpr(fun, batched.in_avals)


# --8<-- [start:while_batching]
def _while_loop_batching_rule(axis_data: AxisData, args: Sequence[Any],
                              dims: Sequence[BatchDim], *, cond_nconsts: int,
                              cond_jaxpr: ClosedJaxpr, body_nconsts: int,
                              body_jaxpr: ClosedJaxpr) -> tuple[list[Any], list[BatchDim]]:
    """A predicate this vmap batches batches every carry: the loop runs until all examples are
    done, and the impl leaves each finished example's carry alone (see _while_loop_impl)."""
    batched = [d is not not_mapped for d in dims]
    cconsts_b, bconsts_b, init_b = split_list(batched, [cond_nconsts, body_nconsts])

    # a carry is batched if it starts batched or meets a batched const in the body
    def step(carry_b: list[bool]) -> tuple[list[bool], None]:
        return batch_jaxpr(body_jaxpr, axis_data, [*bconsts_b, *carry_b], carry_b)[1], None

    carry_b, _ = fixpoint(step, init_b)
    _, (pred_b,) = batch_jaxpr(cond_jaxpr, axis_data, cconsts_b + carry_b, instantiate=False)
    if pred_b:
        # the examples stop at different times: every carry must be per example
        carry_b = [True] * len(carry_b)
    # a predicate already batched by an inner vmap is bool[B]: the impl lines it up with the
    # carries' leading axes, so our batch axis goes right after them (axis 0 when it is a scalar)
    axis = len(cond_jaxpr.out_avals[0].shape)
    carry_dims = [axis if b else not_mapped for b in carry_b]
    body_batched = _batch_jaxpr_at(body_jaxpr, axis_data, bconsts_b, carry_dims, carry_b, axis)
    cond_batched = _batch_jaxpr_at(cond_jaxpr, axis_data, cconsts_b, carry_dims, [pred_b], axis)
    cconsts, bconsts, init = split_list(args, [cond_nconsts, body_nconsts])
    cconst_dims, bconst_dims, init_dims = split_list(dims, [cond_nconsts, body_nconsts])
    cconsts = [moveaxis(x, d, 0) if d is not not_mapped else x
               for x, d in zip(cconsts, cconst_dims, strict=True)]
    bconsts = [moveaxis(x, d, 0) if d is not not_mapped else x
               for x, d in zip(bconsts, bconst_dims, strict=True)]
    new_init = [broadcast(x, axis_data.size, axis) if now and d is not_mapped
                else moveaxis(x, d, axis) if now else x
                for x, d, now in zip(init, init_dims, carry_b, strict=True)]
    outs = while_p.bind(*cconsts, *bconsts, *new_init, cond_nconsts=cond_nconsts,
                        cond_jaxpr=cond_batched, body_nconsts=body_nconsts,
                        body_jaxpr=body_batched)
    return outs, carry_dims
# --8<-- [end:while_batching]


while_p.def_impl(_while_loop_impl)
while_p.def_abstract_eval(_while_loop_abstract_eval)
ad.primitive_jvps[while_p] = _while_loop_jvp
ad.primitive_transposes[while_p] = _while_transpose_error
pe.custom_partial_eval_rules[while_p] = _while_partial_eval
pe.partial_eval_jaxpr_custom_rules[while_p] = _while_partial_eval_custom
pe.dce_rules[while_p] = _while_dce_rule
primitive_batchers[while_p] = _while_loop_batching_rule
