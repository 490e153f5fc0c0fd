"""Batching for stage 4's primitives, so that vmap and grad compose in either order on
everything stage 4 can differentiate: custom_jvp, custom_vjp, checkpoint.

JAX: `add_batched` in jax/_src/interpreters/batching.py (the rule of `add_any`, which sums
cotangents in a backward pass), `BatchTrace.process_custom_jvp_call` /
`process_custom_vjp_call` with `batch_custom_jvp_subtrace` and `batch_custom_vjp_bwd` in the
same file, `remat_vmap` in jax/_src/ad_checkpoint.py, and `_stop_gradient_batch_rule` in
jax/_src/lax/lax.py. Stage 4 dispatches custom calls through tables keyed by trace type
(custom_calls.py: `custom_jvp_call_rules`, `custom_vjp_call_rules`), so BatchTrace's rules are
registered there rather than written as its methods.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from stages.s02_tracing import core
from stages.s02_tracing import linear_util as lu
from stages.s02_tracing.axis_env import axis_frame
from stages.s02_tracing.partial_eval import convert_constvars_jaxpr
from stages.s04_autodiff import ad_checkpoint, custom_calls
from stages.s04_autodiff.ad_util import (
    SymbolicZero,
    Zero,
    add_jaxvals,
    add_jaxvals_p,
    stop_gradient_p,
)

from .batching import (
    AxisData,
    BatchDim,
    BatchTrace,
    BatchTracer,
    TraceTag,
    batch_jaxpr_axes,
    batch_subtrace,
    broadcast,
    defvectorized,
    mapped_aval,
    matchaxis,
    moveaxis,
    not_mapped,
    primitive_batchers,
    unmapped_aval,
)

# ------------------------------------------------------------------------ add_any


def add_batched(axis_data: AxisData, vals: Sequence[Any], dims: Sequence[BatchDim]
                ) -> tuple[Any, BatchDim]:
    """Two cotangents of one value: line their batch axes up, then add."""
    (x, y), (x_dim, y_dim) = vals, dims
    if x_dim == y_dim:
        return add_jaxvals(x, y), x_dim
    if x_dim is not_mapped:
        return add_jaxvals(broadcast(x, axis_data.size, y_dim), y), y_dim
    if y_dim is not_mapped:
        return add_jaxvals(x, broadcast(y, axis_data.size, x_dim)), x_dim
    return add_jaxvals(moveaxis(x, x_dim, y_dim), y), y_dim


primitive_batchers[add_jaxvals_p] = add_batched
defvectorized(stop_gradient_p)  # the identity: the batch axis stays where it is


# ------------------------------------------------------------------------ custom_jvp


def _unzip_batch_info(trace: BatchTrace, tracers: Sequence[Any]) -> tuple[list, list]:
    pairs = [trace.to_batch_info(t) for t in tracers]
    return [v for v, _ in pairs], [d for _, d in pairs]


def _wrap(trace: BatchTrace, vals: Sequence[Any], dims: Sequence[BatchDim]) -> list[Any]:
    return [v if d is not_mapped else BatchTracer(trace, v, d)
            for v, d in zip(vals, dims, strict=True)]


# --8<-- [start:custom_jvp]
def process_custom_jvp_call(trace: BatchTrace, prim: core.Primitive, fun: lu.WrappedFun,
                            jvp: lu.WrappedFun, tracers: Sequence[Any], *,
                            symbolic_zeros: bool) -> list[Any]:
    """A custom_jvp function under vmap: batch the function AND its rule, bind once below.

    Inlining the function would lose the rule for a grad outside this vmap."""
    # JAX: BatchTrace.process_custom_jvp_call
    vals, dims = _unzip_batch_info(trace, tracers)
    fun, fun_out_dims = batch_subtrace(fun, trace.tag, trace.axis_data, tuple(dims))
    jvp, jvp_out_dims = batch_custom_jvp_subtrace(jvp, trace.tag, trace.axis_data, tuple(dims))
    out_vals = prim.bind_with_trace(trace.parent_trace, vals,
                                    dict(subfuns=(fun, jvp), symbolic_zeros=symbolic_zeros))
    _, out_dims = lu.merge_linear_aux(fun_out_dims, jvp_out_dims)
    return _wrap(trace, out_vals, out_dims)
# --8<-- [end:custom_jvp]


@lu.transformation_with_aux2
def batch_custom_jvp_subtrace(f: Callable, store: lu.Store, tag: TraceTag,
                              axis_data: AxisData, in_dims: Sequence[BatchDim],
                              *primals_and_tangents: Any) -> list[Any]:
    """The rule jvp(primals, tangents) under vmap; a tangent is batched like its primal, and a
    SymbolicZero tangent (symbolic_zeros) is one example's, with no data to batch."""
    with core.take_current_trace() as parent_trace:
        trace = BatchTrace(parent_trace, tag, axis_data)
        dims_in = [*in_dims, *in_dims]
        args = [SymbolicZero(mapped_aval(axis_data.size, d, x.aval))
                if type(x) is SymbolicZero and d is not not_mapped else x
                for x, d in zip(primals_and_tangents, dims_in, strict=True)]
        dims_in = [not_mapped if type(x) is SymbolicZero else d
                   for x, d in zip(args, dims_in, strict=True)]
        args = _wrap(trace, args, dims_in)
        with core.set_current_trace(trace), axis_frame(axis_data):
            outs = f(*args)
        vals, dims = _unzip_batch_info(trace, outs)
        n = len(vals) // 2
        # a primal and its tangent must leave batched alike: the batched one wins
        out_dims = [p if p is not not_mapped else t for p, t in zip(dims[:n], dims[n:],
                                                                     strict=True)]
        with core.set_current_trace(parent_trace):
            vals = [_matchaxis_zeros(axis_data, src, dst, v) if type(v) is SymbolicZero else
                    matchaxis(axis_data, src, dst, v)
                    for v, src, dst in zip(vals, dims, [*out_dims, *out_dims], strict=True)]
    store.store(tuple(out_dims))
    return vals


# ------------------------------------------------------------------------ custom_vjp


# --8<-- [start:custom_vjp]
def process_custom_vjp_call(trace: BatchTrace, prim: core.Primitive, fun: lu.WrappedFun,
                            fwd: lu.WrappedFun, bwd: lu.WrappedFun, tracers: Sequence[Any], *,
                            out_trees: Callable, symbolic_zeros: bool) -> list[Any]:
    """A custom_vjp function under vmap: batch fun, fwd and bwd; bind once below."""
    # JAX: BatchTrace.process_custom_vjp_call
    vals, dims = _unzip_batch_info(trace, tracers)
    fun, fun_out_dims = batch_subtrace(fun, trace.tag, trace.axis_data, tuple(dims))
    # fwd takes (value, perturbed) pairs; the flags are the same for every example
    fwd_dims = tuple(d for dim in dims for d in (dim, not_mapped))
    fwd, fwd_out_dims = batch_subtrace(fwd, trace.tag, trace.axis_data, fwd_dims)
    # bwd's arguments are fwd's residuals and the outputs' cotangents, batched like fwd's
    # outputs; its cotangents must come back batched like the inputs (summed if unbatched)
    bwd = batch_custom_vjp_bwd(bwd, trace.tag, trace.axis_data, fwd_out_dims, tuple(dims))
    params = dict(subfuns=(fun, fwd, bwd), out_trees=out_trees, symbolic_zeros=symbolic_zeros)
    out_vals = prim.bind_with_trace(trace.parent_trace, vals, params)
    fun_ran, out_dims = lu.merge_linear_aux(fun_out_dims, fwd_out_dims)
    if not fun_ran:  # fwd ran (a grad is outside): drop the residuals' dims
        _, res_tree = out_trees()
        out_dims = out_dims[res_tree.num_leaves:]
    return _wrap(trace, out_vals, out_dims)
# --8<-- [end:custom_vjp]


def batch_custom_vjp_bwd(bwd: lu.WrappedFun, tag: TraceTag, axis_data: AxisData,
                         in_dims: Callable[[], Sequence[BatchDim]],
                         out_dim_dests: Sequence[BatchDim]) -> lu.WrappedFun:
    """bwd(*residuals, *cts) under vmap, its cotangents moved to `out_dim_dests`."""

    def new_bwd(*args: Any) -> list[Any]:
        dims = in_dims()
        # a SymbolicZero cotangent (symbolic_zeros) is one example's: no batch axis, no data
        args = [SymbolicZero(mapped_aval(axis_data.size, d, x.aval))
                if type(x) is SymbolicZero and d is not not_mapped else x
                for x, d in zip(args, dims, strict=True)]
        dims = [not_mapped if type(x) in (Zero, SymbolicZero) else d
                for x, d in zip(args, dims, strict=True)]
        batched, out_dims = batch_subtrace(bwd, tag, axis_data, tuple(dims))
        cts = batched.call_wrapped(*args)
        return [_matchaxis_zeros(axis_data, src, dst, ct)
                for ct, src, dst in zip(cts, out_dims(), out_dim_dests, strict=True)]

    new_bwd.__name__ = bwd.__name__  # printed as the equation's `bwd=`
    return lu.wrap_init(new_bwd, debug_info=bwd.debug_info)


def _matchaxis_zeros(axis_data: AxisData, src: BatchDim, dst: BatchDim, x: Any) -> Any:
    """matchaxis with summing, where a symbolic Zero (or SymbolicZero) only changes its aval."""
    if type(x) not in (Zero, SymbolicZero):
        return matchaxis(axis_data, src, dst, x, sum_match=True)
    if src is not not_mapped:
        x = type(x)(mapped_aval(axis_data.size, src, x.aval))
    return type(x)(unmapped_aval(axis_data.size, dst, x.aval))


custom_calls.custom_jvp_call_rules[BatchTrace] = process_custom_jvp_call
custom_calls.custom_vjp_call_rules[BatchTrace] = process_custom_vjp_call


def _custom_lin_batch_rule(axis_data, vals, dims, **params):
    # custom_lin only exists to be transposed; evaluating it is forward mode through a
    # custom_vjp function, batched or not: the same error as its impl
    return custom_calls.raise_custom_vjp_error_on_jvp(*vals, **params)


primitive_batchers[custom_calls.custom_lin_p] = _custom_lin_batch_rule


# ------------------------------------------------------------------------ checkpoint


def _remat_batch_rule(axis_data: AxisData, vals: Sequence[Any], dims: Sequence[BatchDim], *,
                      jaxpr: core.Jaxpr, **params: Any) -> tuple[list[Any], list[BatchDim]]:
    """checkpoint under vmap: one remat2 of the batched inner jaxpr."""
    # JAX: remat_vmap in ad_checkpoint.py
    batched, out_batched = batch_jaxpr_axes(core.ClosedJaxpr(jaxpr, []), axis_data, dims,
                                            False)
    outs = ad_checkpoint.remat_p.bind(*batched.consts, *vals,
                                      jaxpr=convert_constvars_jaxpr(batched.jaxpr), **params)
    return outs, [0 if b else not_mapped for b in out_batched]


primitive_batchers[ad_checkpoint.remat_p] = _remat_batch_rule
defvectorized(ad_checkpoint.name_p)  # checkpoint_name: an identity, elementwise
