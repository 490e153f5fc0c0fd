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


def test_the_body_is_traced_once_on_each_devices_block(four):
    mesh = s11.make_mesh((2, 2), ("x", "y"))
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
    mesh = s11.make_mesh((4,), ("x",))
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
    mesh = s11.make_mesh((4,), ("x",))
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

    mesh = s11.make_mesh((2, 2), ("x", "y"))
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
    mesh = s11.make_mesh((4,), ("i",))
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
    mesh = s11.make_mesh((2, 2), ("x", "y"))
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
    mesh = s11.make_mesh((2, 2), ("x", "y"))
    f = s11.jit(s11.shard_map(lambda a: parallel.ppermute(a, "x", perm), mesh=mesh,
                              in_specs=P("x"), out_specs=P("x")))
    with pytest.raises(ValueError) as err:
        f(np.ones((4,), np.float32))
    assert str(err.value) == ("ppermute sources and destinations must be unique, got "
                              f"{tuple(map(tuple, perm))}.")
