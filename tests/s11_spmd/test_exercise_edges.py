"""shard_map's edges, each against JAX 0.10.2's own trace of the same body: a mesh axis no input
is split along is still a named axis inside, and every output of a many-output equation gets
its varying axes."""

from __future__ import annotations

import numpy as np

import stages.s11_spmd as s11
from stages.s02_tracing import lax
from stages.s02_tracing.api import make_jaxpr
from stages.s05_vmap import parallel
from stages.s11_spmd import P
from stages.s11_spmd.shard_map import infer_vma

XY = frozenset({"x", "y"})

# shard_map's numpy arguments are replicated by type: on an Explicit mesh JAX refuses an
# in_spec that splits them, so these meshes are Auto
AUTO = s11.AxisType.Auto


def jax_body_vmas(f, in_specs, out_specs, *args) -> list[frozenset[str]]:
    """The varying axes of each output of JAX's shard_map body, on a 2 x 2 mesh (x, y)."""
    import jax
    from jax.sharding import AbstractMesh
    from jax.sharding import PartitionSpec as JP

    g = jax.shard_map(f, mesh=AbstractMesh((2, 2), ("x", "y")),
                      in_specs=tuple(JP(*s) for s in in_specs),
                      out_specs=tuple(JP(*s) for s in out_specs))
    body = jax.make_jaxpr(g)(*args).jaxpr.eqns[0].params["jaxpr"]
    return [v.aval.manual_axis_type.varying for v in body.outvars]


def our_body(f, *args):
    """The ClosedJaxpr of our shard_map's body, as its one equation holds it."""
    (eqn,) = make_jaxpr(f)(*args).jaxpr.eqns
    return eqn.params["jaxpr"]


def test_a_mesh_axis_no_input_is_split_along_is_still_named_inside(four):
    """JAX binds every mesh axis while it traces the body, whether a spec uses it or not."""
    import jax

    x = np.arange(4, dtype=np.float32)
    in_specs, out_specs = [("x",)], [(("x", "y"),)]
    f = s11.shard_map(
        lambda a: (a * 10.0 + lax.convert_element_type(parallel.axis_index("y"), np.float32),),
        mesh=s11.make_mesh((2, 2), ("x", "y"), (AUTO, AUTO)),
        in_specs=tuple(P(*s) for s in in_specs),
        out_specs=tuple(P(*s) for s in out_specs))
    (out,) = f(x)
    # device (i, j) holds x's block i times 10, plus j; the blocks laid out in (x, y) order
    want = np.concatenate([x[2 * i:2 * i + 2] * 10.0 + j for i in range(2) for j in range(2)])
    np.testing.assert_array_equal(np.asarray(out), want)
    theirs = jax_body_vmas(lambda a: (a * 10.0 + jax.lax.axis_index("y").astype(np.float32),),
                           in_specs, out_specs, x)
    assert [v.aval.vma for v in our_body(f, x).jaxpr.outvars] == theirs == [XY]


def test_each_output_of_a_many_output_equation_gets_its_varying_axes(four):
    """A sort of two operands is one equation with two outputs: both vary along the union of
    its inputs' axes, in the body's types, in infer_vma's walk and in JAX's types."""
    import jax

    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    b = np.arange(4, dtype=np.float32)[::-1].copy()
    in_specs, out_specs = [("x", "y"), ("y",)], [(("x", "y"),), (("x", "y"),)]
    f = s11.shard_map(lambda a, b: tuple(lax.sort((b, a[0]), num_keys=1)),
                      mesh=s11.make_mesh((2, 2), ("x", "y"), (AUTO, AUTO)),
                      in_specs=tuple(P(*s) for s in in_specs),
                      out_specs=tuple(P(*s) for s in out_specs))
    body = our_body(f, a, b).jaxpr
    assert [e.primitive.name for e in body.eqns].count("sort") == 1
    typed = [v.aval.vma for v in body.outvars]
    derived = infer_vma(body, [v.aval.vma for v in body.invars])
    theirs = jax_body_vmas(lambda a, b: tuple(jax.lax.sort((b, a[0]), num_keys=1)),
                           in_specs, out_specs, a, b)
    assert derived == typed == theirs == [XY, XY]
