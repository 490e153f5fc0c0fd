"""vmap of scan and while: batch the body once, with a fixpoint on which carries are batched.

JAX: `_scan_batching_rule` and `_while_loop_batching_rule` in
jax/_src/lax/control_flow/loops.py. A carry that starts unbatched may become batched after one
trip round the loop (it meets a batched x or const), so we batch the body, look at which
carries come out batched, and repeat until nothing changes; then every carry batched at the
end is batched from the start.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from stages.s02_tracing import core
from stages.s02_tracing import linear_util as lu
from stages.s02_tracing import partial_eval as pe
from stages.s02_tracing.core import ClosedJaxpr
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

from .common import split_list
from .loops import scan_p, while_p


def _carry_fixpoint(jaxpr: ClosedJaxpr, axis_data: AxisData, consts_batched: list[bool],
                    carry_batched: list[bool], xs_batched: list[bool], num_ys: int
                    ) -> tuple[ClosedJaxpr, list[bool], list[bool]]:
    """Batch the body until the batched carries going in are those coming out."""
    for _ in range(1 + len(carry_batched)):
        batched = [*consts_batched, *carry_batched, *xs_batched]
        jaxpr_batched, out_batched = batch_jaxpr(
            jaxpr, axis_data, batched, instantiate=carry_batched + [False] * num_ys)
        carry_out, ys_batched = split_list(out_batched, [len(carry_batched)])
        if carry_out == carry_batched:
            return jaxpr_batched, carry_batched, ys_batched
        carry_batched = list(map(operator.or_, carry_batched, carry_out))
    raise AssertionError("Fixpoint not reached")


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
    return pe.trace_to_closed_jaxpr(fun, batched.in_avals)


# --8<-- [start:scan_batching]
def _scan_batching_rule(axis_data: AxisData, args: Sequence[Any], dims: Sequence[BatchDim], *,
                        reverse: bool, length: int, jaxpr: ClosedJaxpr, num_consts: int,
                        num_carry: int, unroll: int) -> tuple[list[Any], list[BatchDim]]:
    """Consts and carries batched on axis 0, xs on axis 1 (axis 0 is the scanned one)."""
    num_ys = len(jaxpr.out_avals) - num_carry
    batched = [d is not not_mapped for d in dims]
    consts_b, init_b, xs_b = split_list(batched, [num_consts, num_carry])
    jaxpr_batched, carry_b, ys_b = _carry_fixpoint(jaxpr, axis_data, consts_b, init_b, xs_b,
                                                   num_ys)
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


# --8<-- [start:while_batching]
def _while_loop_batching_rule(axis_data: AxisData, args: Sequence[Any],
                              dims: Sequence[BatchDim], *, cond_nconsts: int,
                              cond_jaxpr: ClosedJaxpr, body_nconsts: int,
                              body_jaxpr: ClosedJaxpr) -> tuple[list[Any], list[BatchDim]]:
    """A predicate this vmap batches batches every carry: the loop runs until all examples are
    done, and the impl leaves each finished example's carry alone (see _while_loop_impl)."""
    batched = [d is not not_mapped for d in dims]
    cconsts_b, bconsts_b, init_b = split_list(batched, [cond_nconsts, body_nconsts])
    _, carry_b, _ = _carry_fixpoint(body_jaxpr, axis_data, bconsts_b, init_b, [], 0)
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


primitive_batchers[scan_p] = _scan_batching_rule
primitive_batchers[while_p] = _while_loop_batching_rule
