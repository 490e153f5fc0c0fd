"""`with_sharding_constraint`: ask the partitioner for a sharding on one value in the middle;
`reshard`: change a value's layout where the layout is its type.

JAX: jax/_src/pjit.py (`with_sharding_constraint`, `sharding_constraint_p` and its rules,
`reshard`, `reshard_p`). The
primitive computes nothing (its value is its input); it carries a sharding to the lowering,
which writes `sdy.sharding_constraint` or a `custom_call @Sharding`. Its rules in every table:
the tangent and the cotangent get the same constraint; under vmap the batch dimension is
inserted unsplit into the spec; eagerly it is a device_put.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stages.s01_pytrees import tree_flatten, tree_unflatten
from stages.s01_pytrees.tree_util import broadcast_prefix
from stages.s02_tracing import core, source_info_util
from stages.s02_tracing.lax.utils import drop_params
from stages.s04_autodiff import ad
from stages.s04_autodiff.jvp_rules import deflinear
from stages.s05_vmap import batching
from stages.s07_caches.sharding_impls import UNSPECIFIED
from stages.s08_lowering.mlir import register_lowering

from . import mlir
from .mesh import AxisType
from .partition_spec import PartitionSpec
from .sharding_impls import NamedSharding, Sharding
from .sharding_in_types import (
    canonicalize_sharding,
    get_mesh,
    pjit_check_aval_sharding,
    with_sharding_type,
)
from .sharding_rules import sharding_rules

sharding_constraint_p = core.Primitive("sharding_constraint")


def with_sharding_constraint(x: Any, shardings: Any) -> Any:
    """Each leaf of `x` constrained to its sharding (a prefix tree of `x`, or one for all); a
    PartitionSpec is of set_mesh's mesh. On a mesh whose axes are all Explicit, the layout is
    the value's type already: the constraint only checks that it agrees (JAX: same)."""
    leaves, tree = tree_flatten(x)
    per_leaf = broadcast_prefix(shardings, x, is_leaf=lambda s: isinstance(
        s, (Sharding, PartitionSpec)))
    outs = []
    for leaf, sharding in zip(leaves, per_leaf, strict=True):
        sharding, aval = _create_sharding(sharding), core.get_aval(leaf)
        pjit_check_aval_sharding([sharding], [aval], [""],
                                 "with_sharding_constraint arguments", True)
        mesh = get_mesh()
        if mesh is not None and all(t == AxisType.Explicit for t in mesh.axis_types) \
                and isinstance(sharding, NamedSharding):
            _assert_shardings_equal(aval, sharding)
            outs.append(leaf)
        elif isinstance(leaf, core.Tracer):
            outs.append(sharding_constraint_p.bind(leaf, sharding=sharding))
        else:  # a value: laid out now, not compiled as a one-op program
            outs.append(_impl(leaf, sharding=sharding))
    return tree_unflatten(tree, outs)


def _create_sharding(s: Any) -> Any:  # JAX: pjit._create_sharding_for_array
    if not isinstance(s, PartitionSpec):
        return s
    if get_mesh() is None:
        raise RuntimeError(
            "with_sharding_constraint requires a non-empty mesh in context if you are passing "
            "`PartitionSpec`s to shardings. You can define a context mesh via "
            "`jax.set_mesh(mesh)`. Alternatively, provide `Sharding`s to shardings and then the "
            "mesh context manager is not required.")
    return NamedSharding(get_mesh(), s)


def _assert_shardings_equal(aval: core.ShapedArray, given: NamedSharding) -> None:
    """On an all-Explicit mesh: the value's spec (its type) must be the one asked for."""
    ndim = len(aval.shape)
    have = aval.sharding.spec if aval.sharding is not None else PartitionSpec()
    have, want = (PartitionSpec(*p, *(None,) * (ndim - len(p))) for p in (have, given.spec))
    if have != want:
        raise AssertionError(
            "`with_sharding_constraint` acts as an assert when all axes of mesh are of type "
            f"`Explicit`. The array sharding: {have} did not match the sharding provided: "
            f"{want}. Please use `jax.sharding.reshard` to shard your input to the sharding "
            "you want.")


def with_out_constraints(jitted: Callable, out_shardings: Any) -> Callable:
    """Inside a transformation: the stage 7 jit, its outputs constrained as asked."""
    def call(*args: Any, **kwargs: Any) -> Any:
        out = jitted(*args, **kwargs)
        if out_shardings is None or out_shardings is UNSPECIFIED:
            return out
        return with_sharding_constraint(out, out_shardings)
    return call


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
    typed = ctx.avals_out[0].sharding
    if typed is not None and typed == with_sharding_type(ctx.avals_out[0], sharding).sharding:
        return [x]  # the type says the same: stage 8 pins the result to it
    return [mlir.wrap_with_sharding_op(x, sharding, ctx.avals_in[0].ndim)]


register_lowering(sharding_constraint_p, _lowering)


# ------------------------------------------------------------------ reshard: a change of type

reshard_p = core.Primitive("reshard")


def reshard(x: Any, out_shardings: Any) -> Any:
    """Each leaf of `x` laid out anew, its type changed to say so (JAX: jax.sharding.reshard).
    On a mesh with Explicit axes this is how a program moves data between layouts: the rules
    never do it silently. A PartitionSpec refers to the mesh of `set_mesh`."""
    leaves, tree = tree_flatten(x)
    per_leaf = broadcast_prefix(out_shardings, x, is_leaf=lambda s: isinstance(
        s, (Sharding, PartitionSpec)))
    outs = []
    for leaf, s in zip(leaves, per_leaf, strict=True):
        s = canonicalize_sharding(s, "reshard")
        _check_explicit(s)
        s.check_compatible_aval(core.get_aval(leaf).shape)
        outs.append(reshard_p.bind(leaf, dst_sharding=s) if isinstance(leaf, core.Tracer)
                    else _impl(leaf, sharding=s))  # a value: laid out now
    return tree_unflatten(tree, outs)


def _check_explicit(s: NamedSharding) -> None:
    """reshard changes a type: only Explicit axes are in types (JAX's message)."""
    types = dict(zip(s.mesh.axis_names, s.mesh.axis_types, strict=True))
    for name in s.spec.used_axes():
        if types[name] != AxisType.Explicit:
            raise ValueError(
                "PartitionSpec passed to reshard cannot contain axis names that are of type Auto "
                f"or Manual. Got PartitionSpec: {s.spec} with axis name: {name} of type: "
                f"{types[name]}. This error occurs at source:  "
                f"{source_info_util.summarize(source_info_util.current())}")


def _reshard_abstract_eval(aval: core.ShapedArray, *, dst_sharding: NamedSharding
                           ) -> core.ShapedArray:
    return with_sharding_type(aval, dst_sharding)


reshard_p.def_impl(lambda x, *, dst_sharding: _impl(x, sharding=dst_sharding))
reshard_p.own_impl = True
reshard_p.def_abstract_eval(_reshard_abstract_eval)
sharding_rules[reshard_p] = lambda aval, *, dst_sharding: dst_sharding
# a constraint leaves a value's type as it is (JAX: _sharding_constraint_abstract_eval)
sharding_rules[sharding_constraint_p] = lambda aval, *, sharding: \
    None if aval.sharding is None else tuple(aval.sharding.spec)
core.pp_eqn_rules[reshard_p] = drop_params("dst_sharding", only_none=False)  # as JAX prints it
deflinear(reshard_p)


def _reshard_transpose(ct: Any, x: Any, *, dst_sharding: NamedSharding) -> list[Any]:
    """The cotangent goes back to the input's layout."""
    typed = x.aval.sharding
    spec = typed.spec if typed is not None else PartitionSpec()
    return [reshard_p.bind(ct, dst_sharding=NamedSharding(dst_sharding.mesh, spec))]


def _reshard_lowering(ctx: Any, x: Any, *, dst_sharding: NamedSharding) -> list[Any]:
    # a result typed by its sharding is pinned to it by stage 8 (lower_with_sharding_in_types)
    if ctx.avals_out[0].sharding is not None:
        return [x]
    return [mlir.wrap_with_sharding_op(x, dst_sharding, ctx.avals_out[0].ndim)]


ad.primitive_transposes[reshard_p] = _reshard_transpose
register_lowering(reshard_p, _reshard_lowering)
