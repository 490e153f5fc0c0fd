"""shard_map: write the program one device runs, on its block; the specs say how the blocks
make the global arrays.

JAX: jax/_src/shard_map.py. `shard_map(f, mesh=, in_specs=, out_specs=)(x)` checks the specs
(shard_map_checks.py), traces `f` once on the *per-device* shapes (each split dimension divided
by the product of its mesh axes), and binds `shard_map_p` with that jaxpr. Inside a jit it
lowers to one manual region: Shardy's `sdy.manual_computation`, or GSPMD's
`SPMDFullToShardShape` / `SPMDShardToFullShape` custom calls around a call of `@shmap_body`;
the partitioner leaves everything inside alone. Called eagerly it runs as such a jit.

Which outputs may be declared replicated (an axis left out of their spec) is read from their
types: with check_vma=True every value of the body records the mesh axes it may vary along
(`vma`, stage 2's vma.py). Inputs vary along the axes of their spec; an equation's outputs
along the union of its inputs'; a collective such as psum makes its result the same across the
axes it reduces (`vma_rules`, filled in by the collectives). `infer_vma` is that rule as one
walk over a finished jaxpr.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from stages.s01_pytrees import tree_flatten, tree_unflatten
from stages.s02_tracing import core, vma
from stages.s02_tracing import linear_util as lu
from stages.s02_tracing import partial_eval as s02_pe
from stages.s02_tracing.api_util import flatten_fun_nokwargs
from stages.s02_tracing.axis_env import check_vma_axes, extend_axis_env_nd, get_axis_env
from stages.s07_caches.api_util import fun_name as get_fun_name

from . import shard_map_checks as checks
from .mesh import Mesh
from .partition_spec import PartitionSpec
from .sharding_impls import NamedSharding
from .sharding_in_types import get_mesh, with_sharding_type

shard_map_p = core.Primitive("shard_map")
shard_map_p.multiple_results = True

# primitive -> rule(in_vmas, **params) -> out_vmas; an absent primitive unions its inputs'.
# The same table gives values their types inside a check_vma body (stage 2's vma.py).
vma_rules: dict[core.Primitive, Callable[..., list[frozenset[str]]]] = vma.vma_rules


def split_aval(mesh: Mesh, spec: PartitionSpec, aval: core.ShapedArray) -> core.ShapedArray:
    """The per-device aval: each split dimension divided by its mesh axes' sizes; where values
    are typed (check_vma=True), it varies along the axes its spec splits it over."""
    shape = list(aval.shape)
    for d in range(len(spec)):
        for name in spec.axes_of(d):
            shape[d] //= mesh.shape[name]
    return aval.update(shape=tuple(shape),
                       vma=frozenset(spec.used_axes()) & get_axis_env().vma_axes)


def merge_aval(mesh: Mesh, spec: PartitionSpec, aval: core.ShapedArray) -> core.ShapedArray:
    """The global aval of a per-device output: the blocks concatenated along its spec."""
    shape = list(aval.shape)
    for d in range(len(spec)):
        for name in spec.axes_of(d):
            shape[d] *= mesh.shape[name]
    return aval.update(shape=tuple(shape), vma=frozenset())  # one global value outside


# --8<-- [start:shard_map]
def shard_map(f: Callable | None = None, /, *, out_specs: Any, in_specs: Any,
              mesh: Mesh | None = None, check_vma: bool = True) -> Callable:
    """`f` run on every device of `mesh` with its block of each argument (JAX: jax.shard_map);
    without `f`, a decorator; without `mesh`, the one `set_mesh` entered."""
    if f is None:
        return functools.partial(shard_map, out_specs=out_specs, in_specs=in_specs, mesh=mesh,
                                 check_vma=check_vma)
    if not callable(f):
        raise TypeError("shard_map requires a callable for its first argument, but got "
                        f"{f} of type {type(f)}.")
    if mesh is None:
        mesh = get_mesh()
        if mesh is None:
            raise ValueError("The context mesh cannot be empty. Use `jax.set_mesh(mesh)` to "
                             "enter into a mesh context")
    name = get_fun_name(f)

    @functools.wraps(f)
    def wrapped(*args: Any) -> Any:
        leaves, in_tree = tree_flatten(args)
        checks.check_specs("in", in_specs, mesh)
        checks.check_specs("out", out_specs, mesh)
        flat_in = checks.flat_specs("in", in_specs, args)
        avals = [core.get_aval(x) for x in leaves]
        checks.check_rank("in", f, name, in_specs, args, avals)
        checks.check_divisible(f, name, mesh, in_specs, args, avals)
        checks.check_duplicates(in_specs, mesh)
        checks.check_explicit_specs(mesh, flat_in, avals)
        with check_vma_axes(mesh.axis_names if check_vma else ()):  # values typed inside
            # EXERCISE 11.4 (per-device-trace): trace f once, on each argument's block
            block_avals = [split_aval(mesh, s, a) for s, a in zip(flat_in, avals, strict=True)]
            flat_f, out_tree = flatten_fun_nokwargs(lu.wrap_init(f), in_tree)
            with extend_axis_env_nd(mesh.shape.items()):  # the mesh axes are named axes inside
                jaxpr, out_avals, consts = s02_pe.trace_to_jaxpr_dynamic(flat_f, block_avals)
            # END EXERCISE
        if any(isinstance(c, core.Tracer) for c in consts):
            # it closed over an enclosing trace's values (a w under grad): they become leading
            # arguments, replicated on every device, so the transformation sees them (JAX: same)
            jaxpr = s02_pe.convert_constvars_jaxpr(jaxpr)
            leaves, flat_in = [*consts, *leaves], [PartitionSpec()] * len(consts) + flat_in
            consts = []
        closed = core.ClosedJaxpr(jaxpr, consts)
        outs_tree = tree_unflatten(out_tree(), list(out_avals))  # avals stand in as leaves
        flat_out = checks.flat_specs("out", out_specs, outs_tree)
        checks.check_rank("out", f, name, out_specs, outs_tree, out_avals)
        checks.check_duplicates(out_specs, mesh)
        if check_vma:  # the outputs' types say which axes they vary along (JAX reads them)
            checks.check_replication(name, mesh, out_specs, outs_tree,
                                     [a.vma for a in out_avals])
        params = dict(jaxpr=closed, mesh=mesh, in_specs=tuple(flat_in),
                      out_specs=tuple(flat_out), check_vma=check_vma)
        if any(isinstance(x, core.Tracer) for x in leaves):
            outs = shard_map_p.bind(*leaves, **params)
        else:  # values: run now, as one sharded program (not op by op)
            outs = _impl(*leaves, **params)
        return tree_unflatten(out_tree(), outs)
    return wrapped
# --8<-- [end:shard_map]


# --8<-- [start:vma]
def infer_vma(jaxpr: core.Jaxpr, in_vmas: Sequence[frozenset[str]]) -> list[frozenset[str]]:
    """The mesh axes each output may vary along, from those of the inputs: what the types of a
    check_vma body record as it is traced, re-derived from the finished jaxpr."""
    # EXERCISE 11.5 (vma): propagate the varying axes through the equations
    env: dict[Any, frozenset[str]] = dict(zip(jaxpr.invars, in_vmas, strict=True))

    def read(x: Any) -> frozenset[str]:
        return env.get(x, frozenset()) if isinstance(x, core.Var) else frozenset()

    for eqn in jaxpr.eqns:
        ins = [read(x) for x in eqn.invars]
        rule = vma_rules.get(eqn.primitive)
        if rule is not None:
            outs = rule(ins, **eqn.params)
        else:  # any input that differs between devices makes every output differ
            union = frozenset().union(*ins)
            outs = [union] * len(eqn.outvars)
        env.update(zip(eqn.outvars, outs, strict=True))
    return [read(x) for x in jaxpr.outvars]
    # END EXERCISE
# --8<-- [end:vma]


def _abstract_eval(*avals: core.ShapedArray, jaxpr: core.ClosedJaxpr, mesh: Mesh,
                   out_specs: tuple[PartitionSpec, ...], **_: Any) -> list[core.ShapedArray]:
    # on a mesh with Explicit axes the outputs' types say how out_specs splits them
    return [with_sharding_type(merge_aval(mesh, s, a), NamedSharding(mesh, s))
            for s, a in zip(out_specs, jaxpr.out_avals, strict=True)]


def _impl(*args: Any, jaxpr: core.ClosedJaxpr, mesh: Mesh, in_specs: tuple,
          out_specs: tuple, **params: Any) -> list[Any]:
    """Eagerly: the same equation inside a jit over the mesh, each argument laid out as its
    spec says (JAX runs an eager shard_map through jit too)."""
    from .array import ArrayImpl, device_put
    from .pjit import jit

    # an array laid out otherwise is laid out as its spec says first (JAX relayouts it too)
    args = tuple(device_put(x, NamedSharding(mesh, s)) if isinstance(x, ArrayImpl) and
                 not x.sharding.is_equivalent_to(NamedSharding(mesh, s), x.ndim) else x
                 for x, s in zip(args, in_specs, strict=True))

    def call(*xs: Any) -> list[Any]:
        return shard_map_p.bind(*xs, jaxpr=jaxpr, mesh=mesh, in_specs=in_specs,
                                out_specs=out_specs, **params)
    jitted = _eager_jits.get((id(jaxpr), mesh, in_specs, out_specs))
    if jitted is None or jitted[0] is not jaxpr:
        jitted = (jaxpr, jit(call, in_shardings=tuple(NamedSharding(mesh, s) for s in in_specs),
                             out_shardings=[NamedSharding(mesh, s) for s in out_specs]))
        _eager_jits[(id(jaxpr), mesh, in_specs, out_specs)] = jitted
    return jitted[1](*args)


_eager_jits: dict[Any, tuple[core.ClosedJaxpr, Any]] = {}

shard_map_p.def_impl(_impl)
shard_map_p.own_impl = True  # eagerly a sharded jit of its own, not stage 7's one-op jit
shard_map_p.def_abstract_eval(_abstract_eval)
