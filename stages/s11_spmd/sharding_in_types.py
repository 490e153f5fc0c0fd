"""Shardings in types: on a mesh with Explicit axes, how a value is split is part of its type.

JAX: `call_sharding_rule` in jax/_src/lax/utils.py (the rules themselves beside each primitive
in lax.py; ours in sharding_rules.py), `core.update_aval_with_sharding`, `set_mesh` in
sharding_impls.py, `mlir.lower_with_sharding_in_types`. On an Auto mesh the compiler decides
how every intermediate value is split (propagation). On an Explicit one the tracer decides: an
array put on devices with `NamedSharding(mesh, P('x'))` has the type `f32[8@x,4]`, every
primitive's sharding rule computes its result's type from its operands' (as its shape rule
computes the shape), a combination the rule cannot type is an error at trace time, and the
lowering pins each result to its type with a constraint (`lower_with_sharding_in_types`), so
what the program prints is what the partitioner does.
"""

from __future__ import annotations

import types
import weakref
from collections.abc import Sequence
from typing import Any

from stages.s02_tracing import config, core
from stages.s02_tracing.vma import has_jaxpr
from stages.s08_lowering import sharding_in_types as s08_types

from .mesh import AxisType, Mesh
from .partition_spec import PartitionSpec
from .sharding_impls import DuplicateSpecError, NamedSharding
from .sharding_rules import ShardingTypeError, sharding_rules

# ------------------------------------------------------------------ the mesh in context


# The mesh set_mesh entered, per thread, as a flag of jit's trace context, so a function traced
# under one mesh is traced again under another (a bare PartitionSpec inside names it). JAX's
# set_mesh sets two flags: abstract_mesh_context_manager (the axes' names, sizes and types), of
# the trace context, and device_context (the mesh itself), of jit's key only: another mesh of the
# same shape there re-lowers without tracing again; here it traces again too.
device_context = config.config.add(config.State(
    "device_context", None, "the mesh jax.set_mesh entered", lambda text: None,
    include_in_trace_context=True))


class set_mesh:
    """Make `mesh` the one a bare PartitionSpec refers to (JAX: jax.set_mesh): called, for
    good; as a context manager, until the block ends."""

    def __init__(self, mesh: Mesh | None):
        self.prev = device_context.swap_local(mesh)

    def __enter__(self) -> Mesh | None:
        return device_context.value

    def __exit__(self, *exc_info: Any) -> None:
        device_context.set_local(self.prev)


def get_mesh() -> Mesh | None:
    return device_context.value


def committed_sharding(given: Any, x: Any) -> Any:
    """The sharding jit runs an argument already laid out with: its own where jit gives none,
    else jit's, which must lay it out the same (JAX's error: no silent relayout)."""
    if given is None:
        return x.sharding
    if not given.is_equivalent_to(x.sharding, len(x.shape)):
        raise ValueError("Sharding passed to jit does not match the sharding on the respective "
                         f"arg. Got jit sharding: {given},\narg sharding: {x.sharding} for arg "
                         f"type: {x.aval.str_short()}")
    return given


def canonicalize_sharding(sharding: Any, api_name: str) -> NamedSharding:
    """A NamedSharding from a NamedSharding, or from a PartitionSpec and the mesh in context."""
    if isinstance(sharding, PartitionSpec):
        if get_mesh() is None:
            raise ValueError(
                "Using PartitionSpec when you are not under a mesh context is not allowed. "
                "Please pass a NamedSharding instance or enter into a mesh context via "
                f"`jax.set_mesh`. Got {sharding}")
        return NamedSharding(get_mesh(), sharding)
    if not isinstance(sharding, NamedSharding):
        raise TypeError(f"{api_name} takes a NamedSharding or a PartitionSpec, got {sharding}")
    return sharding


def pspec_to_sharding(api_name: str, s: Any) -> Any:
    """A PartitionSpec given to `api_name` as a NamedSharding of set_mesh's mesh; anything
    else as it is (JAX: api.pspec_to_sharding)."""
    if not isinstance(s, PartitionSpec):
        return s
    if get_mesh() is None:
        raise ValueError("Please set a mesh via `jax.set_mesh` if a PartitionSpec is passed "
                         f"to {api_name}")
    return NamedSharding(get_mesh(), s)


def pjit_check_aval_sharding(shardings: Sequence[Any], avals: Sequence[Any],
                             names: Sequence[str], what_aval: str,
                             allow_uneven_sharding: bool) -> None:
    """Each sharding fits its value's rank, and divides it unless uneven is allowed (JAX:
    pjit.pjit_check_aval_sharding, its message naming the value and the API)."""
    for aval, s, name in zip(avals, shardings, names, strict=False):  # kwargs get none
        if not isinstance(s, NamedSharding):  # None: the compiler chooses
            continue
        name_str = f" with pytree key path {name}" if name else ""
        try:
            s.check_compatible_aval(aval.shape)
        except ValueError as e:
            raise ValueError(f"One of {what_aval}{name_str} is incompatible with its sharding "
                             f"annotation {s}: {e}") from None
        if not allow_uneven_sharding:
            s.shard_shape(aval.shape)  # raises JAX's IndivisibleError


def recover_user_shardings(executable: Any, args: Sequence[Any]) -> list[Any]:
    """The results' shardings as JAX reports them (JAX: pxla.maybe_recover_user_shardings): a
    result the partitioner laid out like the first argument, of its rank, and computed from
    an array already on that mesh (whose type then holds the mesh) gets that argument's own
    sharding, spelled as the user spelled it (`P('x', None)`, not the shortest `P('x')`)."""
    program, outs = executable.program, executable.out_shardings
    first = executable.in_shardings[program.kept[0]] if program.kept else None
    if not isinstance(first, NamedSharding):
        return outs
    key = (first.mesh.axis_names, first.mesh.axis_sizes, first.mesh.axis_types)
    on_mesh = tuple(isinstance(s := getattr(x, "sharding", None), NamedSharding) and
                    (s.mesh.axis_names, s.mesh.axis_sizes, s.mesh.axis_types) == key
                    for x in args)
    if not any(on_mesh):
        return outs
    known = _recovered.setdefault(executable, {})  # the jaxpr is walked once per pattern
    if on_mesh not in known:
        known[on_mesh] = _recover(program, outs, first, on_mesh)
    return known[on_mesh]


_recovered: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _recover(program: Any, outs: list[Any], first: NamedSharding, on_mesh: tuple[bool, ...]
             ) -> list[Any]:
    jaxpr = program.closed.jaxpr
    from_mesh = {v for v, on in zip(jaxpr.invars, on_mesh, strict=True) if on}
    for eqn in jaxpr.eqns:  # the mesh in the operands' types passes to the results'
        if any(isinstance(v, core.Var) and v in from_mesh for v in eqn.invars):
            from_mesh.update(eqn.outvars)
    ndim = jaxpr.invars[program.kept[0]].aval.ndim
    return [first if asked is None and isinstance(v, core.Var) and v in from_mesh and
            v.aval.ndim == ndim and o.is_equivalent_to(first, ndim) else o
            for v, o, asked in zip(jaxpr.outvars, outs, program.out_shardings, strict=True)]


# ------------------------------------------------------------------ types


def typed_spec(sharding: NamedSharding, ndim: int) -> PartitionSpec:
    """The spec a type holds: one entry per dimension, only the mesh's Explicit axes kept,
    a one-axis tuple written as the name (JAX: `modify_spec_for_auto_manual`)."""
    explicit = {n for n, t in zip(sharding.mesh.axis_names, sharding.mesh.axis_types,
                                  strict=True) if t is AxisType.Explicit}
    entries = []
    for d in range(ndim):
        axes = [a for a in sharding.spec.axes_of(d) if a in explicit]
        entries.append(None if not axes else axes[0] if len(axes) == 1 else tuple(axes))
    return PartitionSpec(*entries)


def has_explicit_axes(mesh: Mesh) -> bool:
    return AxisType.Explicit in mesh.axis_types


def with_sharding_type(aval: core.ShapedArray, sharding: Any) -> core.ShapedArray:
    """`aval` typed by `sharding` if its mesh has Explicit axes; else with no sharding in its
    type (on an Auto mesh the type says nothing of the layout). JAX: update_aval_with_sharding."""
    typed = None
    if isinstance(sharding, NamedSharding) and has_explicit_axes(sharding.mesh):
        typed = NamedSharding(sharding.mesh, typed_spec(sharding, aval.ndim))
    if typed == aval.sharding:
        return aval
    return core.ShapedArray(aval.shape, aval.dtype, aval.weak_type, aval.vma, typed)


def _mesh(avals: Sequence[Any]) -> Mesh:
    meshes = {a.sharding.mesh for a in avals if getattr(a, "sharding", None) is not None}
    if len(meshes) > 1:
        one, other = list(meshes)[:2]
        raise ValueError(f"Mesh for all inputs should be equal. Got one mesh: {one} and "
                         f"another mesh: {other}")
    return meshes.pop() if meshes else get_mesh()


# --8<-- [start:out_sharding]
def with_out_sharding(prim: core.Primitive, avals: Sequence[Any], out: Any, params: dict) -> Any:
    """Stage 2's abstract eval calls this for every equation: when an operand's type holds a
    sharding (or the params name one), the rule types the results (JAX: call_sharding_rule)."""
    named = params.get("sharding", params.get("out_sharding"))
    if not any(getattr(a, "sharding", None) is not None for a in avals) and not (
            isinstance(named, NamedSharding) and has_explicit_axes(named.mesh)):
        return out
    if has_jaxpr(params):  # a call, a loop, a cond: its inner jaxpr typed the results
        return out
    rule = sharding_rules.get(prim)
    if rule is None:
        raise ShardingTypeError(
            f"sharding rule for {prim.name} is not implemented. You can work around this "
            "error by dropping that operation into full auto sharding mode via: "
            "`jax.sharding.auto_axes(fun, out_shardings=...)`")
    mesh = _mesh(avals)
    outs = out if prim.multiple_results else [out]
    got = rule(*avals, **params)
    got = got if prim.multiple_results else [got]
    named = [s if s is None or isinstance(s, NamedSharding) else _named(prim, avals, o, mesh, s)
             for o, s in zip(outs, got, strict=True)]
    typed = [o if s is None else o.update(sharding=NamedSharding(s.mesh, typed_spec(s, o.ndim)))
             for o, s in zip(outs, named, strict=True)]
    return typed if prim.multiple_results else typed[0]
# --8<-- [end:out_sharding]


def _named(prim: core.Primitive, avals: Sequence[Any], out: Any, mesh: Mesh, spec: tuple
           ) -> NamedSharding:
    try:
        return NamedSharding(mesh, PartitionSpec(*spec))
    except DuplicateSpecError as e:  # a rule's result uses one mesh axis twice
        bad = out.update(sharding=types.SimpleNamespace(spec=spec)).str_short(True)
        raise ShardingTypeError(
            f"{prim} operation with inputs: {', '.join(a.str_short(True) for a in avals)} "
            f"produces an illegally sharded result: {bad}") from e


core.out_type_rules.append(with_out_sharding)


def constrain_to_type(op: Any, aval: core.ShapedArray) -> Any:
    """The lowering's half: a result whose type holds a sharding is pinned to it (JAX:
    mlir.lower_with_sharding_in_types); stage 8 calls this through its hook."""
    from .mlir import wrap_with_sharding_op

    return wrap_with_sharding_op(op, aval.sharding, aval.ndim)


s08_types.sharding_in_types_lowering.append(constrain_to_type)
