"""shard_map's rules in the tables of stages 3, 4, 5 and 8: still one shard_map afterwards.

JAX: the `_shard_map_*` rules of jax/_src/shard_map.py. Each rule transforms the body jaxpr
(with stage 7's memoized jaxpr transformations, as jit's rules do) inside the environment the
body was traced in (`_body_env`: its mesh axes bound, so a psum over 'x' in it still finds its
axis; with check_vma=True, values typed by the axes they vary along), and binds shard_map_p
again:

- jvp: a shard_map of the jvp body, tangents laid out as their primals;
- partial eval (for linearize, vjp and grad): the primal shard_map is bound on its own, so its
  outputs are known, and the jvp shard_map is staged whole (its known inputs become residuals);
  JAX instead splits the body into a known and an unknown shard_map with residuals between;
- transpose: a shard_map of the transposed body, cotangents laid out as the outputs were. A
  value replicated along a mesh axis (the axis left out of its spec) is one value seen by every
  device, so its cotangent is the sum of every device's: the input cotangents are psummed over
  their unmentioned axes, and an output's cotangent, handed whole to each device, is divided by
  the number of devices sharing it first (JAX's `_shard_map_transpose` with check_vma=False).
  With check_vma=True the body's types already hold those sums: a replicated input was cast
  to varying (`pvary`) where it met a varying value, and pvary's transpose is a psum;
- batching: the mapped dimension moved to the front and left unsplit in every spec;
- lowering: one manual region (Shardy) or a call between custom calls (GSPMD).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from typing import Any

from stages.s02_tracing import core
from stages.s02_tracing import linear_util as lu
from stages.s02_tracing.axis_env import check_vma_axes, extend_axis_env_nd
from stages.s02_tracing.partial_eval import trace_to_closed_jaxpr
from stages.s04_autodiff import ad
from stages.s04_autodiff.ad import jvp_jaxpr
from stages.s04_autodiff.ad_checkpoint import transpose_jaxpr
from stages.s04_autodiff.ad_util import Zero
from stages.s05_vmap import batching, parallel
from stages.s07_caches.pjit_rules import batch_jaxpr2, keep_where
from stages.s08_lowering import hlo, ir
from stages.s08_lowering.mlir import (
    aval_to_ir_type,
    ir_consts,
    jaxpr_subcomp,
    lower_jaxpr_to_fun,
    register_lowering,
)

from . import collectives, mlir
from .hlo_sharding import HloSharding
from .mesh import Mesh
from .partition_spec import PartitionSpec
from .shard_map import shard_map_p
from .sharding_impls import NamedSharding


@contextlib.contextmanager
def _body_env(mesh: Mesh, check_vma: bool) -> Iterator[None]:
    """The environment the body was traced in: its mesh axes bound, values typed or not."""
    with extend_axis_env_nd(mesh.shape.items()), \
            check_vma_axes(mesh.axis_names if check_vma else ()):
        yield


# ------------------------------------------------------------------ jvp (stage 4)


def _shard_map_jvp(primals, tangents, *, jaxpr, mesh, in_specs, out_specs, check_vma,
                   **params):
    primal_outs = shard_map_p.bind(*primals, jaxpr=jaxpr, mesh=mesh, in_specs=in_specs,
                                   out_specs=out_specs, check_vma=check_vma, **params)
    nz_in = tuple(type(t) is not Zero for t in tangents)
    if not any(nz_in):
        return primal_outs, [Zero.from_primal_value(p) for p in primal_outs]
    with _body_env(mesh, check_vma):
        jaxpr_jvp, nz_out = jvp_jaxpr(jaxpr, nz_in, False)
    outs = shard_map_p.bind(*primals, *keep_where(tangents, nz_in), jaxpr=jaxpr_jvp, mesh=mesh,
                            check_vma=check_vma,
                            in_specs=(*in_specs, *keep_where(in_specs, nz_in)),
                            out_specs=(*out_specs, *keep_where(out_specs, nz_out)), **params)
    nz_tangents = iter(outs[len(primal_outs):])
    return primal_outs, [next(nz_tangents) if nz else Zero.from_primal_value(p)
                         for p, nz in zip(primal_outs, nz_out, strict=True)]


ad.primitive_jvps[shard_map_p] = _shard_map_jvp

# ------------------------------------------------------------------ transpose (stage 4)


def _unmentioned(mesh: Mesh, spec: PartitionSpec) -> tuple[str, ...]:
    """The mesh axes a value is replicated along: those its spec leaves out."""
    return tuple(n for n in mesh.axis_names if n not in spec.used_axes())


def _sum_replicated(transposed: core.ClosedJaxpr, mesh: Mesh, n_nonlinear: int,
                    ct_specs: tuple, in_ct_specs: tuple) -> core.ClosedJaxpr:
    """`transposed`, with each output cotangent divided among the devices that share it and
    each input cotangent summed over the devices that share that input."""
    def f(*args: Any) -> list[Any]:
        ins, cts = args[:n_nonlinear], args[n_nonlinear:]
        cts = [ct / math.prod(mesh.shape[n] for n in axes) if axes else ct
               for ct, axes in ((ct, _unmentioned(mesh, s))
                                for ct, s in zip(cts, ct_specs, strict=True))]
        outs = core.jaxpr_as_fun(transposed)(*ins, *cts)
        return [parallel.psum(ct, axes) if (axes := _unmentioned(mesh, s)) else ct
                for ct, s in zip(outs, in_ct_specs, strict=True)]
    return trace_to_closed_jaxpr(lu.wrap_init(f), transposed.in_avals)


def _shard_map_transpose(cts, *args, jaxpr, mesh, in_specs, out_specs, check_vma, **params):
    in_linear = tuple(ad.is_undefined_primal(x) for x in args)
    out_zeros = tuple(type(ct) is Zero for ct in cts)
    n_nonlinear = len(args) - sum(in_linear)
    with _body_env(mesh, check_vma):
        transposed, in_zeros = transpose_jaxpr(jaxpr, in_linear, out_zeros)
        zeros = iter(in_zeros)
        nonzero_in = [lin and not next(zeros) for lin in in_linear]
        if not check_vma:  # with types, pvary's transpose (a psum) already sums them
            transposed = _sum_replicated(transposed, mesh, n_nonlinear,
                                         keep_where(out_specs, [not z for z in out_zeros]),
                                         keep_where(in_specs, nonzero_in))
    outs = iter(shard_map_p.bind(
        *[x for x, lin in zip(args, in_linear, strict=True) if not lin],
        *[ct for ct in cts if type(ct) is not Zero], jaxpr=transposed, mesh=mesh,
        check_vma=check_vma,
        in_specs=(*keep_where(in_specs, [not lin for lin in in_linear]),
                  *keep_where(out_specs, [not z for z in out_zeros])),
        out_specs=keep_where(in_specs, nonzero_in), **params))
    return [next(outs) if nz else None for nz in nonzero_in]


ad.primitive_transposes[shard_map_p] = _shard_map_transpose

# ------------------------------------------------------------------ batching (stage 5)


def _insert_unsplit(spec: PartitionSpec, ndim: int, dim: int) -> PartitionSpec:
    entries = list(spec) + [None] * (ndim - len(spec))
    entries.insert(dim, None)
    return PartitionSpec(*entries)


def _shard_map_batcher(axis_data, vals, dims, *, jaxpr, mesh, in_specs, out_specs, check_vma,
                       **params):
    vals = [batching.bdim_at_front(v, d, axis_data.size) for v, d in zip(vals, dims,
                                                                           strict=True)]
    with _body_env(mesh, check_vma):
        new_jaxpr, out_dims = batch_jaxpr2(jaxpr, axis_data, (0,) * len(vals))
    in_specs = tuple(_insert_unsplit(s, v.ndim - 1, 0) for s, v in zip(in_specs, vals,
                                                                        strict=True))
    out_specs = tuple(
        _insert_unsplit(s, a.ndim - (d is not None), d if d is not None else 0)
        if d is not None else s
        for s, a, d in zip(out_specs, new_jaxpr.out_avals, out_dims, strict=True))
    outs = shard_map_p.bind(*vals, jaxpr=new_jaxpr, mesh=mesh, in_specs=in_specs,
                            out_specs=out_specs, check_vma=check_vma, **params)
    return outs, list(out_dims)


batching.primitive_batchers[shard_map_p] = _shard_map_batcher

# ------------------------------------------------------------------ lowering (stage 8)


def _spec_names(spec: PartitionSpec, ndim: int) -> str:
    """`[('x',), None]`: how JAX names the body's results (its out_specs, per dimension)."""
    return str([spec.axes_of(d) or None for d in range(ndim)])


# --8<-- [start:lowering]
def _shard_map_lowering(ctx, *args, jaxpr, mesh, in_specs, out_specs, **_):
    """One manual region: the partitioner cuts the arguments to blocks, the body runs on
    blocks as written, the results are put back together by their specs."""
    in_avals = [a.update(shape=tuple(a.shape)) for a in ctx.avals_in]
    block_in = list(jaxpr.in_avals)
    block_types = [aval_to_ir_type(a) for a in block_in]
    out_types = [aval_to_ir_type(a) for a in ctx.avals_out]
    named = [NamedSharding(mesh, s) for s in in_specs]
    if mlir.use_shardy_partitioner.value:
        sym = mlir.mesh_symbol(mesh)
        ins = ", ".join(s._to_sdy_sharding(a.ndim, sym) for s, a in zip(named, in_avals,
                                                                         strict=True))
        outs = ", ".join(NamedSharding(mesh, s)._to_sdy_sharding(a.ndim, sym)
                         for s, a in zip(out_specs, ctx.avals_out, strict=True))
        axes = ", ".join(f'"{n}"' for n in mesh.axis_names)
        region = ir.Region(block_types)

        def asm(p, op):
            params = ", ".join(f"{p.v(a)}: {a.type}" for a in region.block.arguments)
            results = op.results[0].type if len(op.results) == 1 else \
                f"({p.types(op.results)})"
            return (f"{p.op_name(op)}({p.vs(op.operands)}) in_shardings=[{ins}] "
                    f"out_shardings=[{outs}] manual_axes={{{axes}}} ({params}) "
                    f"{p.region(region)} : ({p.types(op.operands)}) -> {results}")
        op = ir.Operation("sdy.manual_computation", args, out_types, asm, regions=[region])
        with ir.InsertionPoint(region.block), collectives.manual_mesh(mesh):
            consts = ir_consts(jaxpr.consts, [v.aval for v in jaxpr.jaxpr.constvars])
            body = jaxpr_subcomp(ctx.module_context, jaxpr.jaxpr, consts,
                                 *region.block.arguments)
            hlo.return_(body, "sdy.return")
        return op.results
    manual = f'"{HloSharding.manual()}"'
    blocks = []
    for x, s, a, t in zip(args, named, in_avals, block_types, strict=True):
        full = mlir.custom_call("Sharding", x, x.type,
                                {"mhlo.sharding": f'"{s._to_xla_hlo_sharding(a.ndim)}"'})
        blocks.append(mlir.custom_call("SPMDFullToShardShape", full, t,
                                       {"mhlo.sharding": manual}))
    with collectives.manual_mesh(mesh):
        func = lower_jaxpr_to_fun(ctx.module_context, "shmap_body", jaxpr)
    for attrs, s, a in zip(func.result_attrs, out_specs, jaxpr.out_avals, strict=True):
        attrs["jax.result_info"] = f'"{_spec_names(s, a.ndim)}"'
    results = hlo.call(func.name, blocks, [aval_to_ir_type(a) for a in jaxpr.out_avals])
    outs = []
    for r, s, a, t in zip(results, out_specs, ctx.avals_out, out_types, strict=True):
        r = mlir.custom_call("Sharding", r, r.type, {"mhlo.sharding": manual})
        sharding = NamedSharding(mesh, s)._to_xla_hlo_sharding(a.ndim)
        outs.append(mlir.custom_call("SPMDShardToFullShape", r, t,
                                     {"mhlo.sharding": f'"{sharding}"'}))
    return outs
# --8<-- [end:lowering]


register_lowering(shard_map_p, _shard_map_lowering)


def is_shard_map(eqn: core.JaxprEqn) -> bool:
    return eqn.primitive is shard_map_p
