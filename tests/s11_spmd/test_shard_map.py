"""shard_map on 4 CPU devices: the body sees blocks, values against numpy, the varying-axes
analysis, vmap and grad of a shard_map, and the rules stage 11's primitives have in each table."""

from __future__ import annotations

import numpy as np
import pytest

import stages.s04_autodiff as s04
import stages.s05_vmap as s05
import stages.s11_spmd as s11
from stages.s02_tracing import core
from stages.s02_tracing import linear_util as lu
from stages.s02_tracing import numpy as snp
from stages.s02_tracing.api import make_jaxpr
from stages.s02_tracing.axis_env import check_vma_axes, extend_axis_env_nd
from stages.s02_tracing.partial_eval import trace_to_closed_jaxpr
from stages.s03_partial_eval import partial_eval as pe
from stages.s04_autodiff import ad
from stages.s05_vmap import batching, parallel
from stages.s08_lowering import lowering_rules
from stages.s11_spmd import P
from stages.s11_spmd.shard_map import infer_vma, split_aval

# shard_map's numpy arguments are replicated by type: on an Explicit mesh JAX refuses an
# in_spec that splits them, so these meshes are Auto
AUTO = s11.AxisType.Auto


def test_the_body_is_traced_once_on_each_devices_block(four):
    mesh = s11.make_mesh((2, 2), ("x", "y"), (AUTO, AUTO))
    seen = []

    def body(a, b):
        seen.append((a.shape, b.shape))
        return a * 2.0, b

    f = s11.shard_map(body, mesh=mesh, in_specs=(P("x", "y"), P(None, ("x", "y"))),
                      out_specs=(P("x", "y"), P(None, ("x", "y"))))
    a, b = np.ones((4, 6), np.float32), np.arange(16, dtype=np.float32).reshape(2, 8)
    out_a, out_b = f(a, b)
    assert seen == [((2, 3), (2, 2))]
    np.testing.assert_array_equal(np.asarray(out_a), a * 2)
    np.testing.assert_array_equal(np.asarray(out_b), b)
    assert out_a.sharding.spec == P("x", "y")


def test_the_varying_axes_of_each_output():
    def body(a, b, c):
        return a + 1.0, a * b, c * 3.0, np.float32(2.0) * c
    jaxpr = make_jaxpr(body)(*[np.ones(2, np.float32)] * 3).jaxpr
    x, y, none = frozenset("x"), frozenset("y"), frozenset()
    assert infer_vma(jaxpr, [x, y, none]) == [x, x | y, none, none]


def test_grad_of_a_shard_map_is_two_shard_maps_and_one_devices_numbers(four):
    mesh = s11.make_mesh((4,), ("x",), (AUTO,))
    f = s11.shard_map(lambda a, w: snp.tanh(a * w), mesh=mesh, in_specs=(P("x"), P("x")),
                      out_specs=P("x"))
    a = np.linspace(-1, 1, 8, dtype=np.float32)
    w = np.linspace(0.5, 2, 8, dtype=np.float32)

    def loss(a, w):
        return snp.sum(f(a, w) ** 2)
    text = str(make_jaxpr(s04.grad(loss, argnums=1))(a, w))
    assert text.count("shard_map[") == 2  # the primal one, and the transposed jvp one
    g = s11.jit(s04.grad(loss, argnums=1))(a, w)
    t = np.tanh(a * w)
    np.testing.assert_allclose(np.asarray(g), 2 * t * (1 - t * t) * a, rtol=1e-5)


def test_vmap_of_a_shard_map_leaves_the_mapped_dimension_unsplit(four):
    mesh = s11.make_mesh((4,), ("x",), (AUTO,))
    f = s11.shard_map(lambda a: snp.sin(a) * 2.0, mesh=mesh, in_specs=P("x"),
                      out_specs=P("x"))
    xs = np.linspace(-1, 1, 24, dtype=np.float32).reshape(3, 8)
    jaxpr = make_jaxpr(s05.vmap(f))(xs)
    (eqn,) = jaxpr.jaxpr.eqns
    assert eqn.params["in_specs"] == (P(None, "x"),)
    out = s11.jit(s05.vmap(f))(xs)
    np.testing.assert_allclose(np.asarray(out), np.sin(xs) * 2, rtol=1e-6)


# table -> (stage 11 primitive, why it has no rule there)
NO_RULE = {
    "custom_partial_eval_rules": "the default (stage the whole equation when an input is "
                                 "unknown) is right for both: the jvp binds the primal "
                                 "shard_map apart, so primal outputs stay known",
    "partial_eval_jaxpr_custom_rules": "remat of a shard_map body is not built here",
    "dce_rules": "the default keeps an equation whole while any output is used",
}


def test_each_primitive_has_its_rules_and_the_absences_are_the_listed_ones():
    for prim in (s11.shard_map_p, s11.sharding_constraint_p):
        for table in (ad.primitive_jvps, ad.primitive_transposes,
                      batching.primitive_batchers, lowering_rules):
            assert prim in table, (prim, table)
        assert "impl" in vars(prim) and "abstract_eval" in vars(prim)
        for name in NO_RULE:
            assert prim not in getattr(pe, name)


def test_a_psum_makes_an_output_that_may_be_declared_replicated(four):
    from stages.s05_vmap.parallel import all_gather, axis_index, psum

    mesh = s11.make_mesh((2, 2), ("x", "y"), (AUTO, AUTO))
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    total = s11.shard_map(lambda a: psum(a, ("x", "y")), mesh=mesh, in_specs=P("x", "y"),
                          out_specs=P())  # checked: the psum made it the same everywhere
    np.testing.assert_allclose(np.asarray(total(x)), x.reshape(2, 2, 2, 1).sum((0, 2)))
    # an all_gather's result still varies along its axis (JAX 0.10.2: all_gather_invariant's
    # does not), so it may not be declared replicated over it
    rows = s11.shard_map(lambda a: all_gather(a, "y", axis=1, tiled=True), mesh=mesh,
                         in_specs=P("x", "y"), out_specs=P("x"))
    with pytest.raises(ValueError, match="replicated across mesh axis 'y'"):
        rows(x)
    rows = s11.shard_map(lambda a: all_gather(a, "y", axis=1, tiled=True), mesh=mesh,
                         in_specs=P("x", "y"), out_specs=P("x"), check_vma=False)
    np.testing.assert_array_equal(np.asarray(rows(x)), x)
    jaxpr = make_jaxpr(lambda a: (psum(a, "y"), axis_index("x") + a),
                       axis_env=[("x", 2), ("y", 2)])(np.ones(2, np.float32)).jaxpr
    assert infer_vma(jaxpr, [frozenset("xy")]) == [frozenset("x"), frozenset("xy")]


def test_a_gradient_inside_the_body_is_summed_only_where_values_are_typed(four):
    """With check_vma=True the replicated `v` meets the varying `a` through a pvary, whose
    transpose is a psum: the gradient taken inside the body is the sum over the devices, and
    may be declared replicated. With check_vma=False it is each device's own part."""
    mesh = s11.make_mesh((4,), ("i",), (AUTO,))
    v, a = np.float32(0.5), np.linspace(-1, 2, 8, dtype=np.float32)

    def body(v, a):
        return s04.grad(lambda v: snp.sum(snp.sin(a * v)))(v)
    summed = s11.shard_map(body, mesh=mesh, in_specs=(P(), P("i")), out_specs=P())(v, a)
    np.testing.assert_allclose(float(summed), np.sum(a * np.cos(a * v)), rtol=1e-5)
    own = s11.shard_map(lambda v, a: body(v, a)[None], mesh=mesh, in_specs=(P(), P("i")),
                        out_specs=P("i"), check_vma=False)(v, a)
    blocks = a.reshape(4, 2)
    np.testing.assert_allclose(np.asarray(own), (blocks * np.cos(blocks * v)).sum(1),
                               rtol=1e-5)


@pytest.mark.parametrize("body", [
    lambda a, b: (a * b, snp.sum(a), b + 1.0),
    lambda a, b: (parallel.psum(a * b, "x"), parallel.psum(b, ("x", "y"))),
    lambda a, b: (parallel.all_gather(a, "y", tiled=True), parallel.axis_index("x") * b),
    lambda a, b: (s04.grad(lambda b: snp.sum(snp.sin(a * b)))(b),),
], ids=["elementwise", "psum", "gather-and-index", "grad-inside"])
def test_the_types_of_a_check_vma_body_are_what_infer_vma_derives(four, body):
    """With check_vma=True every value of the body carries its varying axes in its type; the
    replication check's own pass over the equations (infer_vma) reaches the same sets."""
    mesh = s11.make_mesh((2, 2), ("x", "y"), (AUTO, AUTO))
    a, b = np.ones((4, 4), np.float32), np.ones((4,), np.float32)
    with check_vma_axes(mesh.axis_names), extend_axis_env_nd(mesh.shape.items()):
        typed = trace_to_closed_jaxpr(
            lu.wrap_init(lambda *xs: list(body(*xs))),
            [split_aval(mesh, s, core.get_aval(v))
             for s, v in zip((P("x", "y"), P("y")), (a, b), strict=True)])
    in_vmas = [frozenset({"x", "y"}), frozenset({"y"})]
    assert [v.aval.vma for v in typed.jaxpr.invars] == in_vmas
    assert infer_vma(typed.jaxpr, in_vmas) == [v.aval.vma for v in typed.jaxpr.outvars]


@pytest.mark.parametrize("perm", [[(0, 1), (1, 1)], [(0, 1), (0, 0)], [(0, 1), (2, 0)]])
def test_ppermute_refuses_repeated_sources_or_destinations_when_lowered(four, perm):
    # JAX's check is in the lowering, indices taken modulo the axis size ((2, 0) is (0, 0))
    mesh = s11.make_mesh((2, 2), ("x", "y"), (AUTO, AUTO))
    f = s11.jit(s11.shard_map(lambda a: parallel.ppermute(a, "x", perm), mesh=mesh,
                              in_specs=P("x"), out_specs=P("x")))
    with pytest.raises(ValueError) as err:
        f(np.ones((4,), np.float32))
    assert str(err.value) == ("ppermute sources and destinations must be unique, got "
                              f"{tuple(map(tuple, perm))}.")


def test_a_closed_over_constant_varies_along_no_axis(four):
    """A numpy constant the body closes over is a constvar of the traced jaxpr, not an input:
    infer_vma reads it as varying along no axis, as the check_vma trace types it and as JAX
    0.10.2 types it (JAX makes it a replicated input of the shard_map, P())."""
    import jax
    from jax.sharding import AbstractMesh
    from jax.sharding import PartitionSpec as JP

    k = np.arange(2, dtype=np.float32) + 1
    mesh = s11.make_mesh((2, 2), ("x", "y"), (AUTO, AUTO))
    a, b = np.ones((4, 4), np.float32), np.ones((4,), np.float32)
    with check_vma_axes(mesh.axis_names), extend_axis_env_nd(mesh.shape.items()):
        typed = trace_to_closed_jaxpr(
            lu.wrap_init(lambda a, b: [b * k, snp.asarray(k), snp.sin(k) * 2.0]),
            [split_aval(mesh, s, core.get_aval(v))
             for s, v in zip((P("x", "y"), P("y")), (a, b), strict=True)])
    assert len(typed.jaxpr.constvars) == 1
    in_vmas = [frozenset({"x", "y"}), frozenset({"y"})]
    expected = [frozenset({"y"}), frozenset(), frozenset()]
    assert [v.aval.vma for v in typed.jaxpr.outvars] == expected
    assert infer_vma(typed.jaxpr, in_vmas) == expected
    f = jax.shard_map(lambda a, b: (b * k, jax.numpy.asarray(k), jax.numpy.sin(k) * 2.0),
                      mesh=AbstractMesh((2, 2), ("x", "y")), in_specs=(JP("x", "y"), JP("y")),
                      out_specs=(JP("y"), JP(), JP()))
    body = jax.make_jaxpr(f)(a, b).jaxpr.eqns[0].params["jaxpr"]
    assert [v.aval.manual_axis_type.varying for v in body.outvars] == expected


@pytest.mark.parametrize("axes", [("y", "x"), ("x", "y"), ("y",)], ids=["yx", "xy", "y"])
def test_a_psum_over_axes_in_any_order_has_jaxs_replica_groups(four, axes):
    """The ids in a group run along `axes` in the order given: psum over ('y', 'x') on a
    (2, 2) mesh ('x', 'y') groups [[0, 2, 1, 3]], not the mesh's order [[0, 1, 2, 3]]."""
    import re

    import jax
    from jax.sharding import AbstractMesh
    from jax.sharding import PartitionSpec as JP

    def groups(text):
        return re.findall(r"replica_groups = dense<[^>]*> : tensor<\w+>", text)

    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    out_spec = ("x",) if axes == ("y",) else ()
    mesh = s11.make_mesh((2, 2), ("x", "y"), (AUTO, AUTO))
    ours = s11.jit(s11.shard_map(lambda a: parallel.psum(a, axes), mesh=mesh,
                                 in_specs=P("x", "y"), out_specs=P(*out_spec)))
    theirs = jax.jit(jax.shard_map(lambda a: jax.lax.psum(a, axes),
                                   mesh=AbstractMesh((2, 2), ("x", "y")),
                                   in_specs=JP("x", "y"), out_specs=JP(*out_spec)))
    jax_text = theirs.trace(jax.ShapeDtypeStruct(x.shape, x.dtype)).lower(
        lowering_platforms=("cpu",)).as_text()
    assert groups(ours.lower(x).as_text()) == groups(jax_text) != []
    if axes == ("y", "x"):
        assert groups(jax_text) == ["replica_groups = dense<[[0, 2, 1, 3]]> : tensor<1x4xi64>"]
    blocks = x.reshape(2, 2, 2, 2).transpose(0, 2, 1, 3)  # [i, j] is device (i, j)'s block
    summed = blocks.sum(tuple(mesh.axis_names.index(n) for n in axes))
    np.testing.assert_allclose(np.asarray(ours(x)), summed.reshape(-1, 2) if axes == ("y",)
                               else summed)


def test_replica_groups_are_positions_in_the_mesh_not_device_ids(four):
    """On a mesh whose devices are not in id order (0, 2, 1, 3), a group names the mesh
    positions that share the axis: [[0, 1], [2, 3]] for a psum over 'y', as JAX's text for the
    same mesh shape. Ids would give [[0, 2], [1, 3]], which sums the wrong blocks."""
    import re

    import jax
    from jax.sharding import AbstractMesh
    from jax.sharding import PartitionSpec as JP

    devices = list(s11.devices())
    mesh = s11.make_mesh((2, 2), ("x", "y"), (AUTO, AUTO),
                         devices=[devices[i] for i in (0, 2, 1, 3)])
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    ours = s11.jit(s11.shard_map(lambda a: parallel.psum(a, "y"), mesh=mesh,
                                 in_specs=P("x", "y"), out_specs=P("x")))
    theirs = jax.jit(jax.shard_map(lambda a: jax.lax.psum(a, "y"),
                                   mesh=AbstractMesh((2, 2), ("x", "y")),
                                   in_specs=JP("x", "y"), out_specs=JP("x")))
    jax_text = theirs.trace(jax.ShapeDtypeStruct(x.shape, x.dtype)).lower(
        lowering_platforms=("cpu",)).as_text()
    groups = re.compile(r"replica_groups = dense<[^>]*>")
    assert groups.findall(ours.lower(x).as_text()) == groups.findall(jax_text) == [
        "replica_groups = dense<[[0, 1], [2, 3]]>"]
    blocks = x.reshape(2, 2, 2, 2)  # [i, r, j, c]: block (i, j) is rows 2i.., columns 2j..
    np.testing.assert_array_equal(np.asarray(ours(x)), blocks.sum(axis=2).reshape(4, 2))
