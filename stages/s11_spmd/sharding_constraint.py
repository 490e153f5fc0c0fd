"""`with_sharding_constraint`: ask the partitioner for a sharding on one value in the middle.

JAX: jax/_src/pjit.py (`with_sharding_constraint`, `sharding_constraint_p` and its rules). The
primitive computes nothing (its value is its input); it carries a sharding to the lowering,
which writes `sdy.sharding_constraint` or a `custom_call @Sharding`. Its rules in every table:
the tangent and the cotangent get the same constraint; under vmap the batch dimension is
inserted unsplit into the spec; eagerly it is a device_put.
"""

from __future__ import annotations

from typing import Any

from stages.s01_pytrees import tree_flatten, tree_unflatten
from stages.s01_pytrees.tree_util import broadcast_prefix
from stages.s02_tracing import core
from stages.s04_autodiff import ad
from stages.s04_autodiff.jvp_rules import deflinear
from stages.s05_vmap import batching
from stages.s08_lowering.mlir import register_lowering

from . import mlir
from .partition_spec import PartitionSpec
from .sharding_impls import NamedSharding, Sharding

sharding_constraint_p = core.Primitive("sharding_constraint")


def with_sharding_constraint(x: Any, shardings: Any) -> Any:
    """Each leaf of `x` constrained to its sharding (a prefix tree of `x`, or one for all)."""
    leaves, tree = tree_flatten(x)
    per_leaf = broadcast_prefix(shardings, x, is_leaf=lambda s: isinstance(s, Sharding))
    outs = []
    for leaf, sharding in zip(leaves, per_leaf, strict=True):
        if isinstance(sharding, NamedSharding):
            sharding.check_compatible_aval(core.get_aval(leaf).shape)
        if isinstance(leaf, core.Tracer):
            outs.append(sharding_constraint_p.bind(leaf, sharding=sharding))
        else:  # a value: laid out now, not compiled as a one-op program
            outs.append(_impl(leaf, sharding=sharding))
    return tree_unflatten(tree, outs)


def _impl(x: Any, *, sharding: Sharding) -> Any:
    from .array import device_put  # eagerly, the value laid out as asked

    return device_put(x, sharding)


sharding_constraint_p.def_impl(_impl)
sharding_constraint_p.own_impl = True  # eagerly a device_put, not stage 7's one-op jit
sharding_constraint_p.def_abstract_eval(lambda aval, *, sharding: aval)

# jvp: the tangent constrained the same way; transpose: the cotangent too
deflinear(sharding_constraint_p)


def _transpose(ct: Any, x: Any, *, sharding: Sharding) -> list[Any]:
    return [sharding_constraint_p.bind(ct, sharding=sharding)]


ad.primitive_transposes[sharding_constraint_p] = _transpose


def _batcher(axis_data: batching.AxisData, vals: Any, dims: Any, *, sharding: Sharding):
    (x,), (d,) = vals, dims
    if d is batching.not_mapped or not isinstance(sharding, NamedSharding):
        return sharding_constraint_p.bind(x, sharding=sharding), d
    entries = list(sharding.spec) + [None] * (x.ndim - 1 - len(sharding.spec))
    entries.insert(d, None)  # JAX: the vmapped dimension is not split (spmd_axis_name aside)
    return sharding_constraint_p.bind(
        x, sharding=NamedSharding(sharding.mesh, PartitionSpec(*entries))), d


batching.primitive_batchers[sharding_constraint_p] = _batcher


def _lowering(ctx: Any, x: Any, *, sharding: Sharding) -> list[Any]:
    return [mlir.wrap_with_sharding_op(x, sharding, ctx.avals_in[0].ndim)]


register_lowering(sharding_constraint_p, _lowering)
