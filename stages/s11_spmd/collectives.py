"""Collectives inside shard_map: stage 5's named-axis primitives, lowered over a mesh.

JAX: the `_allreduce_lowering` (psum, pmax, pmin), `_all_gather_lowering`,
`_reduce_scatter_lowering`, `_ppermute_lowering`, `_all_to_all_lowering` and
`_axis_index_lowering` rules of jax/_src/lax/parallel.py. Under vmap a
named axis is a batch dimension (stage 5); inside shard_map it is a mesh axis, and a collective
becomes a StableHLO op over *replica groups*: the logical devices that differ only along the
named axes (for 'y' on a 2x2 mesh, [[0, 1], [2, 3]]); `axis_index_groups` cuts each of those
into smaller groups of indices along the axes. `axis_index` reads the partition id and
picks out its coordinate. The mesh comes from the shard_map being lowered (`manual_mesh`).
Each collective also says which axes its result varies along (`vma_rules`): a psum's is the
same across the axes it sums.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from stages.s02_tracing import vma
from stages.s05_vmap import parallel as P
from stages.s08_lowering import hlo, ir
from stages.s08_lowering.mlir import aval_to_ir_type, ir_constant, register_lowering
from stages.s08_lowering.reductions import (
    get_max_identity,
    get_min_identity,
    get_sum_identity,
    unary_reduce_lower,
)

from .mesh import Mesh
from .shard_map import vma_rules

_state = threading.local()


@contextlib.contextmanager
def manual_mesh(mesh: Mesh) -> Iterator[None]:
    """The mesh of the shard_map body being lowered."""
    prev = getattr(_state, "mesh", None)
    _state.mesh = mesh
    try:
        yield
    finally:
        _state.mesh = prev


def _mesh() -> Mesh:
    mesh = getattr(_state, "mesh", None)
    if mesh is None:
        raise NotImplementedError("a collective over a named axis lowers only inside shard_map")
    return mesh


# --8<-- [start:groups]
def replica_groups(mesh: Mesh, axes: Sequence[str]) -> list[list[int]]:
    """One group per coordinate of the other axes: the logical ids along `axes`."""
    # EXERCISE 11.6 (replica-groups): which devices take part together in a collective
    ids = np.arange(mesh.size).reshape(mesh.axis_sizes)
    others = [i for i, n in enumerate(mesh.axis_names) if n not in axes]
    along = [mesh.axis_names.index(n) for n in axes]
    moved = ids.transpose(others + along)
    return moved.reshape(-1, int(np.prod([mesh.axis_sizes[i] for i in along]))).tolist()
    # END EXERCISE
# --8<-- [end:groups]


def _groups_attr(groups: list[list[int]]) -> str:
    rows = ", ".join("[" + ", ".join(map(str, g)) + "]" for g in groups)
    return f"dense<[{rows}]> : tensor<{len(groups)}x{len(groups[0])}xi64>"


_CHANNEL = "channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>"


def _generic(name: str, operands: Sequence[ir.Value], result_type: str, props: str,
             body_op: str | None = None) -> ir.Value:
    """`"stablehlo.<name>"(...) <{props}> ({reducer}) : (types) -> type` (MLIR's generic form)."""
    scalar = "tensor<" + operands[0].type.rsplit("x", 1)[-1] if "x" in operands[0].type \
        else operands[0].type
    regions = [ir.Region([scalar, scalar])] if body_op else []

    def asm(p, op):
        region = f" ({p.region(regions[0], entry_args=True)})" if regions else ""
        return (f'"{op.name}"({p.vs(op.operands)}) <{{{props}}}>{region} : '
                f"({p.types(op.operands)}) -> {op.result.type}")
    op = ir.Operation(name, operands, [result_type], asm, regions=regions)
    if regions:
        with ir.InsertionPoint(regions[0].block):
            a, b = regions[0].block.arguments
            hlo.return_([hlo.elementwise(body_op, a, b)])
    return op.result


def _named(axes: Sequence[Any]) -> list[str]:
    return [a for a in axes if not isinstance(a, int)]


def collective_groups(axes: Sequence[Any], axis_index_groups: Any) -> list[list[int]]:
    """The replica groups of a collective over `axes`; with `axis_index_groups`, each group of
    the whole axes is cut into those groups of indices along them (JAX's `_replica_groups`)."""
    groups = replica_groups(_mesh(), _named(axes))
    if axis_index_groups is None:
        return groups
    return [[group[i] for i in index_group] for group in groups
            for index_group in axis_index_groups]


def _allreduce_rule(body_op: str, identity: Any):
    def rule(ctx, x, *, axes, axis_index_groups):
        positional = [a for a in axes if isinstance(a, int)]
        if positional:  # a vmapped axis (stage 5): a plain reduction first, as JAX's rule
            (x,) = unary_reduce_lower(body_op, identity, ctx, x, axes=positional)
        if not _named(axes):
            return [x]
        groups = collective_groups(axes, axis_index_groups)
        props = f"{_CHANNEL}, replica_groups = {_groups_attr(groups)}, use_global_device_ids"
        return [_generic("stablehlo.all_reduce", [x], x.type, props, body_op)]
    return rule


def _all_gather_rule(ctx, x, *, all_gather_dimension, axis_name, axis_index_groups, axis_size,
                     tiled):
    groups = collective_groups(axis_name, axis_index_groups)
    out = aval_to_ir_type(ctx.avals_out[0])
    if not tiled:  # a new axis: gather along it (of size 1 per device)
        shape = list(ctx.avals_in[0].shape)
        shape.insert(all_gather_dimension, 1)
        x = hlo.reshape(x, aval_to_ir_type(ctx.avals_in[0].update(shape=tuple(shape))))
    props = (f"all_gather_dim = {all_gather_dimension} : i64, {_CHANNEL}, "
             f"replica_groups = {_groups_attr(groups)}, use_global_device_ids")
    return [_generic("stablehlo.all_gather", [x], out, props)]


def _reduce_scatter_rule(ctx, x, *, axis_name, scatter_dimension, axis_index_groups, axis_size,
                         tiled):
    groups = collective_groups(axis_name, axis_index_groups)
    aval = ctx.avals_out[0]
    shape = list(aval.shape)
    if not tiled:
        shape.insert(scatter_dimension, 1)
    props = (f"{_CHANNEL}, replica_groups = {_groups_attr(groups)}, "
             f"scatter_dimension = {scatter_dimension} : i64, use_global_device_ids")
    out = _generic("stablehlo.reduce_scatter", [x],
                   aval_to_ir_type(aval.update(shape=tuple(shape))), props, "add")
    return [out if tiled else hlo.reshape(out, aval_to_ir_type(aval))]


def _all_to_all_rule(ctx, x, *, split_axis, concat_axis, axis_name, axis_index_groups, tiled):
    """Each device cuts its block in group-size pieces along split_axis, sends piece k to the
    k-th device of its group, and stacks what it receives along concat_axis (the untiled form
    arrives with its size-1 concat axis already inserted by stage 5's all_to_all)."""
    groups = collective_groups(axis_name, axis_index_groups)
    props = (f"{_CHANNEL}, concat_dimension = {concat_axis} : i64, replica_groups = "
             f"{_groups_attr(groups)}, split_count = {len(groups[0])} : i64, "
             f"split_dimension = {split_axis} : i64")
    out = aval_to_ir_type(ctx.avals_out[0])
    return [_generic("stablehlo.all_to_all", [x], out, props)]


def _ppermute_rule(ctx, x, *, axis_name, perm):
    groups = replica_groups(_mesh(), _named(axis_name))
    ends = [(s % len(groups[0]), d % len(groups[0])) for s, d in perm]
    if len({s for s, _ in ends}) < len(ends) or len({d for _, d in ends}) < len(ends):
        raise ValueError(f"ppermute sources and destinations must be unique, got {perm}.")
    # a group's devices in id order, whatever order the axes were named in (JAX: same)
    pairs = [[g[s], g[d]] for g in map(sorted, groups) for s, d in perm]
    rows = ", ".join(f"[{s}, {d}]" for s, d in pairs)
    props = (f"{_CHANNEL}, source_target_pairs = dense<[{rows}]> : "
             f"tensor<{len(pairs)}x2xi64>")
    return [_generic("stablehlo.collective_permute", [x], x.type, props)]


def _axis_index_rule(ctx, *, axis_name):
    mesh = _mesh()
    k = mesh.axis_names.index(axis_name)
    inner = int(np.prod(mesh.axis_sizes[k + 1:]))  # logical ids are row-major in the mesh
    stride = ir_constant(np.array(inner, np.uint32))
    size = ir_constant(np.array(mesh.axis_sizes[k], np.uint32))
    pid = ir.Operation("stablehlo.partition_id", [], ["tensor<ui32>"],
                       lambda p, op: f"{p.op_name(op)} : {op.result.type}").result
    coord = hlo.elementwise("remainder",
                            hlo.elementwise("divide", pid, stride), size)
    return [hlo.convert(coord, "tensor<i32>")]


register_lowering(P.psum_p, _allreduce_rule("add", get_sum_identity))
register_lowering(P.psum_invariant_p, lambda ctx, x, *, axes: _allreduce_rule(
    "add", get_sum_identity)(ctx, x, axes=axes, axis_index_groups=None))
register_lowering(vma.pvary_p, lambda ctx, x, *, axes: [x])  # a change of type only
register_lowering(P.pmax_p, _allreduce_rule("maximum", get_max_identity))
register_lowering(P.pmin_p, _allreduce_rule("minimum", get_min_identity))
register_lowering(P.all_gather_p, _all_gather_rule)
register_lowering(P.reduce_scatter_p, _reduce_scatter_rule)
register_lowering(P.ppermute_p, _ppermute_rule)
register_lowering(P.all_to_all_p, _all_to_all_rule)
register_lowering(P.axis_index_p, _axis_index_rule)


# --8<-- [start:vma_rules]
def _invariant_over(key: str):
    """A reduction or gather: the result is the same along the axes it went over."""
    def rule(in_vmas, **params):
        return [in_vmas[0] - frozenset(_named(params[key]))]
    return rule


def _varying_over(key: str):
    """A scatter or a permute: the result differs along the axes it went over."""
    def rule(in_vmas, **params):
        return [in_vmas[0] | frozenset(_named(params[key]))]
    return rule


vma_rules[P.psum_p] = _invariant_over("axes")
vma_rules[P.psum_invariant_p] = _invariant_over("axes")
vma_rules[P.pmax_p] = _invariant_over("axes")
vma_rules[P.pmin_p] = _invariant_over("axes")
vma_rules[P.all_gather_p] = _varying_over("axis_name")  # as JAX 0.10.2 (not all_gather_invariant)
vma_rules[P.reduce_scatter_p] = _varying_over("axis_name")
vma_rules[P.ppermute_p] = _varying_over("axis_name")
vma_rules[P.all_to_all_p] = _varying_over("axis_name")
vma_rules[P.axis_index_p] = lambda in_vmas, *, axis_name: [frozenset([axis_name])]
# --8<-- [end:vma_rules]

__all__ = ["collective_groups", "manual_mesh", "replica_groups"]
