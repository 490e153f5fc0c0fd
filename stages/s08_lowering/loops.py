"""The loops' lowering rules: while is a `stablehlo.while`; scan becomes one too.

JAX: jax/_src/lax/control_flow/loops.py. `_while_lowering` puts every operand (the cond's and
the body's constants, then the carry) in the loop state; a predicate vmap batched is reduced
with `or` to run while any lane runs, and a finished lane keeps its carry through a select.
scan's rule is `mlir.lower_fun(_scan_impl)`: JAX re-expresses the scan as a while_loop over a
counter, whose body reads slice i of each xs, calls the body, and writes slice i of each ys:
the slicing steps are jitted functions that lower to private functions `@dynamic_index_in_dim`
and `@dynamic_update_index_in_dim`, and the body is bound as `eval_jaxpr_p`, staged as a
`closed_call` that lowers to `@closed_call`. Ours emits the same ops directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from stages.s02_tracing import core
from stages.s06_control_flow import scan_p, while_p
from stages.s06_control_flow.util import scan_trip_count

from . import hlo, ir, mlir
from .mlir import LoweringRuleContext, aval_to_ir_type, register_lowering
from .reductions import unary_reduce_lower

_I32 = core.ShapedArray((), np.int32)


def _split(xs: Sequence[Any], sizes: Sequence[int]) -> list[list[Any]]:
    out, start = [], 0
    for n in sizes:
        out.append(list(xs[start:start + n]))
        start += n
    return [*out, list(xs[start:])]


# --8<-- [start:while]
def _while_lowering(ctx: LoweringRuleContext, *args: ir.Value, cond_jaxpr: core.ClosedJaxpr,
                    body_jaxpr: core.ClosedJaxpr, cond_nconsts: int, body_nconsts: int
                    ) -> list[ir.Value]:
    pred_aval = cond_jaxpr.out_avals[0]
    batched = bool(pred_aval.shape)  # vmap batched the predicate: one per lane
    mctx = ctx.module_context
    while_op = hlo.while_(args)
    cond_block, body_block = (r.block for r in while_op.regions)
    with ir.InsertionPoint(cond_block):
        x, _, z = _split(cond_block.arguments, [cond_nconsts, body_nconsts])
        consts = mlir.ir_consts(cond_jaxpr.consts, [v.aval for v in cond_jaxpr.jaxpr.constvars])
        (pred,) = mlir.jaxpr_subcomp(mctx, cond_jaxpr.jaxpr, consts, *x, *z)
        if batched:  # loop while any lane's predicate holds
            pred_ctx = ctx.replace(avals_in=[pred_aval], avals_out=[pred_aval.update(shape=())])
            (pred,) = unary_reduce_lower("or", lambda dtype: np.array(False, dtype), pred_ctx,
                                          pred, axes=tuple(range(pred_aval.ndim)))
        hlo.return_([pred])
    with ir.InsertionPoint(body_block):
        x, y, z = _split(body_block.arguments, [cond_nconsts, body_nconsts])
        consts = mlir.ir_consts(body_jaxpr.consts, [v.aval for v in body_jaxpr.jaxpr.constvars])
        new_z = mlir.jaxpr_subcomp(mctx, body_jaxpr.jaxpr, consts, *y, *z)
        if batched:  # a lane whose predicate is false keeps its carry
            consts = mlir.ir_consts(cond_jaxpr.consts,
                                    [v.aval for v in cond_jaxpr.jaxpr.constvars])
            (body_pred,) = mlir.jaxpr_subcomp(mctx, cond_jaxpr.jaxpr, consts, *x, *z)
            new_z = [_pred_bcast_select(pred_aval, body_pred, new, old, aval)
                     for new, old, aval in zip(new_z, z, body_jaxpr.out_avals, strict=True)]
        hlo.return_([*x, *y, *new_z])
    return while_op.results[cond_nconsts + body_nconsts:]
# --8<-- [end:while]


def _pred_bcast_select(pred_aval: core.ShapedArray, pred: ir.Value, x: ir.Value, y: ir.Value,
                       aval: core.ShapedArray) -> ir.Value:
    dims = list(range(pred_aval.ndim))
    bcast_pred = mlir.broadcast_in_dim(pred, aval.update(dtype=np.dtype(bool)), dims)
    return hlo.select(bcast_pred, x, y)


# ------------------------------------------------------------------ scan


def _private_call(ctx: LoweringRuleContext, name: str, avals_in: Sequence[core.ShapedArray],
                  avals_out: Sequence[core.ShapedArray], body: Any, *args: ir.Value
                  ) -> list[ir.Value]:
    """`func.call @name(args)` of a private function `body` builds, once per types (JAX: a
    jitted helper of lax, such as dynamic_index_in_dim, lowered as a private function)."""
    mctx = ctx.module_context
    key = (name, tuple(avals_in))
    out_types = [aval_to_ir_type(a) for a in avals_out]
    if key not in mctx.cached_functions:
        func = ir.FuncOp(name, [aval_to_ir_type(a) for a in avals_in], out_types)
        mctx.cached_functions[key] = mctx.module.add_function(func)
        with ir.InsertionPoint(func.body.block):
            hlo.return_(body(*func.arguments), "func.return")
    return hlo.call(mctx.cached_functions[key], args, out_types)


def _dynamic_index_in_dim(ctx, x: ir.Value, x_aval: core.ShapedArray, i: ir.Value) -> ir.Value:
    """x[i] along axis 0: a dynamic_slice of size 1, then a reshape dropping the axis."""
    out_aval = x_aval.update(shape=x_aval.shape[1:])

    def body(x: ir.Value, i: ir.Value) -> list[ir.Value]:
        zeros = [mlir.ir_constant(np.array(0, np.int32)) for _ in x_aval.shape[1:]]
        sizes = (1, *x_aval.shape[1:])
        piece = hlo.dynamic_slice(x, [i, *zeros], sizes,
                                  aval_to_ir_type(x_aval.update(shape=sizes)))
        return [hlo.reshape(piece, aval_to_ir_type(out_aval))]
    (out,) = _private_call(ctx, "dynamic_index_in_dim", [x_aval, _I32], [out_aval], body, x, i)
    return out


def _dynamic_update_index_in_dim(ctx, ys: ir.Value, ys_aval: core.ShapedArray, y: ir.Value,
                                 i: ir.Value) -> ir.Value:
    """ys with slice i along axis 0 replaced by y."""
    y_aval = ys_aval.update(shape=ys_aval.shape[1:])

    def body(ys: ir.Value, y: ir.Value, i: ir.Value) -> list[ir.Value]:
        expanded = mlir.broadcast_in_dim(y, ys_aval.update(shape=(1, *y_aval.shape)),
                                         list(range(1, ys_aval.ndim)))
        zeros = [mlir.ir_constant(np.array(0, np.int32)) for _ in y_aval.shape]
        return [hlo.dynamic_update_slice(ys, expanded, [i, *zeros])]
    (out,) = _private_call(ctx, "dynamic_update_index_in_dim", [ys_aval, y_aval, _I32],
                           [ys_aval], body, ys, y, i)
    return out


def _index_in_dim(x: ir.Value, aval: core.ShapedArray, i: int) -> ir.Value:
    """x[i] along axis 0 for a static i: a slice and a reshape."""
    start, limit = (i, *[0] * (aval.ndim - 1)), (i + 1, *aval.shape[1:])
    piece = hlo.slice(x, start, limit, [1] * aval.ndim,
                      aval_to_ir_type(aval.update(shape=(1, *aval.shape[1:]))))
    return hlo.reshape(piece, aval_to_ir_type(aval.update(shape=aval.shape[1:])))


def _slice_leading(x: ir.Value, aval: core.ShapedArray, start: int, limit: int) -> ir.Value:
    shape = (limit - start, *aval.shape[1:])
    return hlo.slice(x, (start, *[0] * (aval.ndim - 1)), (limit, *aval.shape[1:]),
                     [1] * aval.ndim, aval_to_ir_type(aval.update(shape=shape)))


def _stack(ys: Sequence[ir.Value], aval: core.ShapedArray) -> ir.Value:
    """Stack per-iteration values along a new axis 0 (one operand: only the new axis)."""
    one = aval.update(shape=(1, *aval.shape))
    expanded = [mlir.broadcast_in_dim(y, one, list(range(1, one.ndim))) for y in ys]
    if len(expanded) == 1:
        return expanded[0]
    out = aval.update(shape=(len(ys), *aval.shape))
    return hlo.concatenate(expanded, 0, aval_to_ir_type(out))


def _empty(aval: core.ShapedArray, prefix: Sequence[int]) -> ir.Value:
    """A buffer for the stacked ys: a zero broadcast to (*prefix, *shape) (JAX: lax.empty2)."""
    zero = mlir.ir_constant(np.zeros((), aval.dtype))
    return mlir.broadcast_in_dim(zero, aval.update(shape=(*prefix, *aval.shape)), [])


# --8<-- [start:scan]
def _scan_lowering(ctx: LoweringRuleContext, *args: ir.Value, reverse: bool, length: int,
                   num_consts: int, num_carry: int, jaxpr: core.ClosedJaxpr, unroll: int,
                   **params: Any) -> list[ir.Value]:
    consts, carry, xs = _split(args, [num_consts, num_carry])
    x_avals = list(ctx.avals_in[num_consts + num_carry:])
    y_avals = jaxpr.out_avals[num_carry:]
    num_trips, remainder = scan_trip_count(length, unroll)

    def rows(aval: core.ShapedArray, n: int) -> core.ShapedArray:
        return aval.update(shape=(n, *aval.shape[1:]))

    def inner(n: int, consts: list, carry: list, x: list, avals: list) -> tuple[list, list]:
        """n iterations of the body, a `func.call @closed_call` each."""
        if unroll == 1:
            outs = mlir.call_lowering(ctx, "closed_call", jaxpr, *consts, *carry, *x)
            return outs[:num_carry], outs[num_carry:]
        ys = []
        for step in range(n):
            i = n - step - 1 if reverse else step
            x_i = [_index_in_dim(v, a, i) for v, a in zip(x, avals, strict=True)]
            outs = mlir.call_lowering(ctx, "closed_call", jaxpr, *consts, *carry, *x_i)
            carry, y = outs[:num_carry], outs[num_carry:]
            ys.append(y)
        ys = ys[::-1] if reverse else ys
        return carry, [_stack(col, a) for col, a in zip(zip(*ys, strict=True), y_avals,
                                                          strict=False)]

    xss, xss_avals, xs_rem, rem_avals, prefix = xs, x_avals, [], [], (length,)
    if unroll != 1:
        if remainder:  # the leftover iterations' xs, run after the loop
            cut = num_trips * unroll if not reverse else remainder
            pieces = [(_slice_leading(x, a, 0, cut), _slice_leading(x, a, cut, length))
                      for x, a in zip(xs, x_avals, strict=True)]
            firsts, seconds = [p[0] for p in pieces], [p[1] for p in pieces]
            xss, xs_rem = (firsts, seconds) if not reverse else (seconds, firsts)
            rem_avals = [rows(a, remainder) for a in x_avals]
        xss_avals = [a.update(shape=(num_trips, unroll, *a.shape[1:])) for a in x_avals]
        if num_trips:
            xss = [hlo.reshape(x, aval_to_ir_type(a)) for x, a in zip(xss, xss_avals,
                                                                      strict=True)]
        prefix = (num_trips, unroll) if num_trips else (0,)
    yss = [_empty(a, prefix) for a in y_avals]

    if num_trips:
        # EXERCISE 8.7 (scan-while): the loop over i < num_trips, its state and its body
        i0 = mlir.ir_constant(np.array(0, np.int32))
        while_op = hlo.while_([*xss, *consts, i0, *carry, *yss])
        sizes = [len(xss), num_consts, 1, num_carry]
        cond_block, body_block = (r.block for r in while_op.regions)
        with ir.InsertionPoint(cond_block):
            i = _split(cond_block.arguments, sizes)[2][0]
            trips = mlir.ir_constant(np.array(num_trips, np.int32))
            hlo.return_([mlir.compare_hlo(i, trips, "LT", np.int32)])
        with ir.InsertionPoint(body_block):
            xss_b, consts_b, (i_b,), carry_b, yss_b = _split(body_block.arguments, sizes)
            i = i_b
            if reverse:  # i = num_trips - i_ - 1
                i = hlo.elementwise("subtract", mlir.ir_constant(np.array(num_trips, np.int32)),
                                    i_b)
                i = hlo.elementwise("subtract", i, mlir.ir_constant(np.array(1, np.int32)))
            x = [_dynamic_index_in_dim(ctx, v, a, i) for v, a in zip(xss_b, xss_avals,
                                                                       strict=True)]
            slice_avals = [a.update(shape=a.shape[1:]) for a in xss_avals]
            new_carry, ys = inner(unroll, consts_b, carry_b, x, slice_avals)
            new_yss = [_dynamic_update_index_in_dim(ctx, buf, a.update(shape=(*prefix,
                                                                              *a.shape)), y, i)
                       for buf, a, y in zip(yss_b, y_avals, ys, strict=True)]
            i_next = hlo.elementwise("add", i_b, mlir.ir_constant(np.array(1, np.int32)))
            hlo.return_([*xss_b, *consts_b, i_next, *new_carry, *new_yss])
        carry, yss = _split(while_op.results, sizes)[3:]
        # END EXERCISE
    ys = yss
    if unroll != 1 and num_trips:
        ys = [hlo.reshape(y, aval_to_ir_type(a.update(shape=(num_trips * unroll, *a.shape))))
              for y, a in zip(yss, y_avals, strict=True)]
    if remainder:
        carry, ys_rem = inner(remainder, consts, carry, xs_rem, rem_avals)
        ys = [hlo.concatenate([y, r] if not reverse else [r, y], 0,
                              aval_to_ir_type(a.update(shape=(length, *a.shape))))
              for y, r, a in zip(ys, ys_rem, y_avals, strict=True)]
    return [*carry, *ys]
# --8<-- [end:scan]


register_lowering(while_p, _while_lowering)
register_lowering(scan_p, _scan_lowering)
