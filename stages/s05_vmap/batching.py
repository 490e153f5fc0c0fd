"""Batching: every value under vmap is a pair (an array, the axis of it that is the batch).

JAX: jax/_src/interpreters/batching.py. A `BatchTracer` carries `val` (an array with the batch
axis in it) and `batch_dim` (which axis, or `not_mapped`); its aval is the per-example aval, the
batch axis removed. `BatchTrace.process_primitive` looks the primitive up in
`primitive_batchers` and asks one question: given where the batch axis sits on the inputs, where
is it on the output? The rules themselves live in batching_rules.py (JAX: beside each primitive).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from stages.s02_tracing import core, source_info_util
from stages.s02_tracing import linear_util as lu
from stages.s02_tracing import partial_eval as pe
from stages.s02_tracing.axis_env import axis_frame
from stages.s02_tracing.lax import broadcast_in_dim_p, expand_dims, reduce_sum, transpose
from stages.s02_tracing.lax.utils import canonicalize_axis
from stages.s04_autodiff.ad_util import float0

from . import _jax_compat

not_mapped = None  # JAX writes `None` (typed `NotMapped`); a batch_dim is an int or not_mapped
BatchDim = int | None


@dataclass(frozen=True)
class AxisData:
    """The mapped axis: its name (None if unnamed), size, and the mesh axes it maps onto."""

    name: Any
    size: int
    spmd_name: tuple | None = None  # JAX also keeps explicit mesh axes (stage 11's business)


class TraceTag:
    """Identifies one vmap: tracers of a BatchTrace with this tag are batched, others are not."""

    def __repr__(self) -> str:
        return f"TraceTag({id(self):#x})"


def mapped_aval(size: int, axis: int, aval: core.ShapedArray) -> core.ShapedArray:
    """The per-example aval: `aval` with its batch axis `axis` (of `size`) removed."""
    shape = list(aval.shape)
    assert shape[axis] == size, (shape, axis, size)
    del shape[axis]
    return aval.update(shape=tuple(shape))


def unmapped_aval(size: int, axis: int | None, aval: core.ShapedArray) -> core.ShapedArray:
    """The batched aval: `aval` with a batch axis of `size` inserted at `axis`."""
    if axis is None:
        return aval
    shape = list(aval.shape)
    shape.insert(canonicalize_axis(axis, aval.ndim + 1), size)
    return aval.update(shape=tuple(shape))


# --------------------------------------------------------------------- tracer and trace


# --8<-- [start:tracer]
class BatchTracer(core.Tracer):
    """A batch of values: `val` holds all of them, stacked along axis `batch_dim`."""

    __slots__ = ("val", "batch_dim", "source_info")

    def __init__(self, trace: BatchTrace, val: Any, batch_dim: BatchDim):
        # the aval a function under vmap sees is the aval of ONE example
        aval = core.get_aval(val)
        if batch_dim is not None:
            aval = mapped_aval(aval.shape[batch_dim], batch_dim, aval)
        super().__init__(trace, aval)
        self.val = val
        self.batch_dim = batch_dim
        self.source_info = source_info_util.current()  # where in the user's code, for errors

    _short_repr = _jax_compat.vmap_tracer_repr  # printed as JAX's are: VmapTracer(...)
    _origin_msg = _jax_compat.batch_tracer_origin_msg  # "... was created on line: ..."
# --8<-- [end:tracer]


# --8<-- [start:trace]
class BatchTrace(core.Trace):
    """Interprets primitives on batches: the rule table says where the batch axis goes."""

    def __init__(self, parent_trace: core.Trace, tag: TraceTag, axis_data: AxisData):
        super().__init__()
        self.parent_trace = parent_trace  # where the batched primitives are bound
        self.tag = tag
        self.axis_data = axis_data

    def to_batch_info(self, val: Any) -> tuple[Any, BatchDim]:
        """(value, batch dim) of an operand; anything that is not ours is unbatched."""
        if isinstance(val, BatchTracer) and val._trace.tag is self.tag:
            return val.val, val.batch_dim
        return val, not_mapped

    def process_primitive(self, primitive: core.Primitive, tracers: Sequence[Any],
                          params: dict) -> Any:
        """Run the primitive's batching rule on the unwrapped values, one level down."""
        # EXERCISE 5.2 (process-primitive): unwrap, look up the rule, bind below, rewrap
        vals_in, dims_in = [], []
        for x in tracers:
            val, dim = self.to_batch_info(x)
            vals_in.append(val)
            dims_in.append(dim)
        rule = primitive_batchers.get(primitive)
        if rule is None:
            if all(d is not_mapped for d in dims_in):
                # nothing is batched: the primitive runs once, as it would outside vmap
                return primitive.bind_with_trace(self.parent_trace, vals_in, params)
            raise NotImplementedError(f"Batching rule for '{primitive}' not implemented")
        with core.set_current_trace(self.parent_trace):
            val_out, dim_out = rule(self.axis_data, vals_in, dims_in, **params)
        if primitive.multiple_results:
            return [x if d is not_mapped else BatchTracer(self, x, d)
                    for x, d in zip(val_out, dim_out, strict=True)]
        return val_out if dim_out is not_mapped else BatchTracer(self, val_out, dim_out)
        # END EXERCISE
# --8<-- [end:trace]


# --------------------------------------------------------------------- the rule table

# rule(axis_data, vals, dims, **params) -> (out, out_dim), or lists of them for a
# multiple-results primitive. JAX: `fancy_primitive_batchers` (rules that get axis_data); JAX's
# `primitive_batchers` is a write-only proxy wrapping older rules of (vals, dims, **params).
BatchingRule = Callable[..., tuple[Any, Any]]
primitive_batchers: dict[core.Primitive, BatchingRule] = {}
fancy_primitive_batchers = primitive_batchers


# --------------------------------------------------------------------- moving the axis

# --8<-- [start:moveaxis]
def moveaxis(x: Any, src: int, dst: int) -> Any:
    """Move axis `src` of x to position `dst` (a transpose; nothing when they agree)."""
    ndim = np.ndim(x)
    src, dst = canonicalize_axis(src, ndim), canonicalize_axis(dst, ndim)
    if src == dst:
        return x
    perm = [i for i in range(ndim) if i != src]
    perm.insert(dst, src)
    return transpose(x, perm)


def broadcast(x: Any, size: int, axis: int) -> Any:
    """Insert a new axis of `size` at `axis`: an unbatched value made batched."""
    shape = list(np.shape(x))
    shape.insert(axis, size)
    dims = [d for d in range(len(shape)) if d != axis]  # every old axis, past the new one
    return broadcast_in_dim_p.bind(x, shape=tuple(shape), sharding=None,
                                   broadcast_dimensions=_jax_compat.numpy_ints(dims))


def bdim_at_front(x: Any, bdim: BatchDim, size: int) -> Any:
    """x with its batch axis first; an unbatched x is broadcast to `size` along a new axis 0."""
    if bdim is not_mapped:
        return broadcast(x, size, 0)
    return moveaxis(x, bdim, 0)


def matchaxis(axis_data: AxisData, src: BatchDim, dst: BatchDim, x: Any,
              sum_match: bool = False) -> Any:
    """Move x's batch axis from `src` to `dst` (out_axes); an unbatched x is broadcast.

    With `sum_match`, a batched x asked to be unbatched is summed over its batch axis: the
    cotangent of a value every example shared is the sum of the examples' cotangents."""
    if isinstance(x, np.ndarray) and x.dtype == float0 and src != dst:  # only a shape moves
        shape = list(np.shape(x))
        size = axis_data.size if src is not_mapped else shape.pop(src)
        if dst is not not_mapped:
            shape.insert(canonicalize_axis(dst, len(shape) + 1), size)
        elif not sum_match:
            raise SpecMatchError(None, src, dst)
        return np.zeros(shape, float0)
    try:
        core.get_aval(x)
    except TypeError as err:
        raise TypeError(f"Output from batched function {x!r} with type {type(x)} is not a "
                        "valid JAX type") from err
    if src == dst:
        return x
    if src is not_mapped:
        return broadcast(x, axis_data.size, canonicalize_axis(dst, np.ndim(x) + 1))
    if dst is not_mapped and sum_match:
        return reduce_sum(x, (src,))
    if dst is not_mapped:
        raise SpecMatchError(None, src, dst)
    return moveaxis(x, src, dst)
# --8<-- [end:moveaxis]


class SpecMatchError(Exception):
    """A batched output asked to come out unbatched (out_axes=None): api.vmap words it."""

    def __init__(self, leaf_idx: int | None, src: BatchDim, dst: BatchDim):
        super().__init__(leaf_idx, src, dst)
        self.leaf_idx, self.src, self.dst = leaf_idx, src, dst


# --------------------------------------------------------------------- rule helpers


def defvectorized(prim: core.Primitive) -> None:
    """One operand, elementwise: the batch axis stays where it is."""
    primitive_batchers[prim] = lambda axis_data, vals, dims, **params: \
        vectorized_batcher(prim, axis_data, vals, dims, **params)


def vectorized_batcher(prim: core.Primitive, axis_data: AxisData, vals: Sequence[Any],
                       dims: Sequence[BatchDim], **params: Any) -> tuple[Any, BatchDim]:
    assert all(d == dims[0] for d in dims[1:]), dims
    return prim.bind(*vals, **params), dims[0]


def defbroadcasting(prim: core.Primitive) -> None:
    """Several operands of one shape (rank-0 ones broadcast): align their batch axes."""
    primitive_batchers[prim] = lambda axis_data, vals, dims, **params: \
        broadcast_batcher(prim, axis_data, vals, dims, **params)


# --8<-- [start:broadcast_batcher]
def broadcast_batcher(prim: core.Primitive, axis_data: AxisData, args: Sequence[Any],
                      dims: Sequence[BatchDim], **params: Any) -> tuple[Any, BatchDim]:
    """Elementwise ops: bind as is if the batch axes agree; else batch axis first everywhere."""
    # EXERCISE 5.3 (elementwise): align the batch axes, bind, say where the batch axis is
    if all(d is not_mapped for d in dims):
        return prim.bind(*args, **params), not_mapped
    shape, dim = next((np.shape(x), d) for x, d in zip(args, dims, strict=True)
                      if d is not not_mapped)
    if all(np.shape(x) == shape and d == dim
           for x, d in zip(args, dims, strict=True) if np.ndim(x)):
        # same shape and the same batch axis (scalars broadcast by themselves): nothing to move
        return prim.bind(*args, **params), dim
    # batch axis to the front; an unbatched operand gets a size-1 axis there and broadcasts
    args = [bdim_at_front(x, d, 1) if np.ndim(x) else x
            for x, d in zip(args, dims, strict=True)]
    ndim = max(np.ndim(x) for x in args)
    # a batched scalar is now rank 1: give it trailing size-1 axes to line up with the rest
    args = [x if d is not_mapped or np.ndim(x) == ndim else
            expand_dims(x, tuple(range(np.ndim(x), ndim)))
            for x, d in zip(args, dims, strict=True)]
    return prim.bind(*args, **params), 0
    # END EXERCISE
# --8<-- [end:broadcast_batcher]


def defreducer(prim: core.Primitive) -> None:
    """Reductions over `axes`: shift the axes past the batch axis; the batch axis survives."""
    primitive_batchers[prim] = lambda axis_data, vals, dims, **params: \
        reducer_batcher(prim, axis_data, vals, dims, **params)


# --8<-- [start:reducer_batcher]
def reducer_batcher(prim: core.Primitive, axis_data: AxisData, vals: Sequence[Any],
                    dims: Sequence[BatchDim], *, axes: tuple[int, ...],
                    **params: Any) -> tuple[Any, BatchDim]:
    """A reduction over `axes` of one example is a reduction over shifted axes of the batch."""
    (operand,), (bdim,) = vals, dims
    if bdim is not_mapped:
        return prim.bind(operand, axes=axes, **params), not_mapped
    # EXERCISE 5.4 (reducer): renumber the axes around the batch axis; find it in the output
    # per-example axis a is batched axis a + 1 from the batch axis on
    new_axes = tuple(a if a < bdim else a + 1 for a in axes)
    kept = [d for d in range(np.ndim(operand)) if d not in new_axes]
    out_dim = kept.index(bdim)
    # END EXERCISE
    return prim.bind(operand, axes=_jax_compat.numpy_ints(new_axes), **params), out_dim
# --8<-- [end:reducer_batcher]


# --------------------------------------------------------------------- batching a function


def batch(fun: lu.WrappedFun, axis_data: AxisData, in_dims: Sequence[BatchDim],
          out_dim_dests: Sequence[BatchDim] | Callable[[], Sequence[BatchDim]]
          ) -> lu.WrappedFun:
    """`fun` (flat in, flat out) mapped over axis `in_dims` of its inputs.

    Outputs come out with their batch axis at `out_dim_dests` (a thunk: the output tree is
    known only after the call). JAX splits this into _batch_outer/_batch_inner the same way.
    """
    return _batch_outer(_batch_inner(fun, axis_data, out_dim_dests), axis_data, in_dims)


@lu.transformation2
def _batch_outer(f: Callable, axis_data: AxisData, in_dims: Sequence[BatchDim],
                 *in_vals: Any) -> list[Any]:
    tag = TraceTag()
    outs, trace = f(tag, in_dims, *in_vals)
    trace.invalidate()  # a BatchTracer that escaped now fails loudly (JAX: ensure_no_leaks)
    return outs


# --8<-- [start:batch_inner]
@lu.transformation2
def _batch_inner(f: Callable, axis_data: AxisData, out_dim_dests: Any, tag: TraceTag,
                 in_dims: Sequence[BatchDim], *in_vals: Any) -> tuple[list[Any], BatchTrace]:
    with core.take_current_trace() as parent_trace:
        trace = BatchTrace(parent_trace, tag, axis_data)
        in_tracers = [
            x if d is not_mapped else BatchTracer(trace, x, canonicalize_axis(d, np.ndim(x)))
            for x, d in zip(in_vals, in_dims, strict=True)
        ]
        with core.set_current_trace(trace), axis_frame(axis_data):
            outs = f(*in_tracers)
        dests = out_dim_dests() if callable(out_dim_dests) else out_dim_dests
        out_vals = []
        with core.set_current_trace(parent_trace):
            for i, (out, dst) in enumerate(zip(outs, dests, strict=True)):
                val, src = trace.to_batch_info(out)
                try:
                    out_vals.append(matchaxis(axis_data, src, dst, val))
                except SpecMatchError:
                    raise SpecMatchError(i, src, dst) from None
    return out_vals, trace
# --8<-- [end:batch_inner]


@lu.transformation_with_aux2
def batch_subtrace(f: Callable, store: lu.Store, tag: TraceTag, axis_data: AxisData,
                   in_dims: Sequence[BatchDim], *in_vals: Any) -> list[Any]:
    """Run f on BatchTracers of a new trace with `tag`; store where outputs are batched.

    Used by rules that trace a function again under the same vmap (custom_vjp's bwd)."""
    with core.take_current_trace() as parent_trace:
        trace = BatchTrace(parent_trace, tag, axis_data)
        in_dims = in_dims() if callable(in_dims) else in_dims
        in_tracers = [x if d is not_mapped else BatchTracer(trace, x, d)
                      for x, d in zip(in_vals, in_dims, strict=True)]
        with core.set_current_trace(trace), axis_frame(axis_data):
            outs = f(*in_tracers)
        out_vals, out_dims = [], []
        for out in outs:
            val, dim = trace.to_batch_info(out)
            out_vals.append(val)
            out_dims.append(dim)
    store.store(tuple(out_dims))
    return out_vals


# --------------------------------------------------------------------- batching a jaxpr


def batch_jaxpr(closed_jaxpr: core.ClosedJaxpr, axis_data: AxisData,
                in_batched: Sequence[bool], instantiate: bool | Sequence[bool]
                ) -> tuple[core.ClosedJaxpr, list[bool]]:
    """batch_jaxpr_axes with each input batched along axis 0 or not at all (JAX's form for the
    rules of primitives that carry a jaxpr: cond, scan, while)."""
    in_dims = [0 if b else not_mapped for b in in_batched]
    return batch_jaxpr_axes(closed_jaxpr, axis_data, in_dims, instantiate)


def batch_jaxpr_axes(closed_jaxpr: core.ClosedJaxpr, axis_data: AxisData,
                     in_dims: Sequence[BatchDim], instantiate: bool | Sequence[bool]
                     ) -> tuple[core.ClosedJaxpr, list[bool]]:
    """The jaxpr taking each input batched along `in_dims`, and which of its outputs are batched.

    Batched outputs come out with the batch axis first; an output listed in `instantiate` is
    batched even if it did not depend on a batched input. Rules for primitives that carry a
    jaxpr (checkpoint's remat2, ...) use it: batch the inner program, bind the primitive once.
    JAX: batching.batch_jaxpr_axes (which takes the outputs' destination axes instead).
    """
    n_out = len(closed_jaxpr.jaxpr.outvars)
    if isinstance(instantiate, bool):
        instantiate = [instantiate] * n_out
    out_batched: list[bool] = []

    def batched_fun(*args: Any) -> list[Any]:
        with core.take_current_trace() as parent_trace:
            trace = BatchTrace(parent_trace, TraceTag(), axis_data)
            tracers = [x if d is not_mapped else BatchTracer(trace, x, d)
                       for x, d in zip(args, in_dims, strict=True)]
            with core.set_current_trace(trace), axis_frame(axis_data):
                outs = core.eval_jaxpr(closed_jaxpr.jaxpr, closed_jaxpr.consts, *tracers)
            result = []
            with core.set_current_trace(parent_trace):
                for out, inst in zip(outs, instantiate, strict=True):
                    val, src = trace.to_batch_info(out)
                    dst = 0 if inst or src is not not_mapped else not_mapped
                    result.append(matchaxis(axis_data, src, dst, val))
                    out_batched.append(dst is not not_mapped)
        trace.invalidate()
        return result

    avals = [unmapped_aval(axis_data.size, d, aval)
             for aval, d in zip(closed_jaxpr.jaxpr.in_avals, in_dims, strict=True)]
    fun = lu.wrap_init(batched_fun, debug_info=closed_jaxpr.jaxpr.debug_info)
    return pe.trace_to_closed_jaxpr(fun, avals), out_batched
