"""shard_map on 4 CPU devices: the body sees blocks, values against numpy, the varying-axes
analysis, vmap and grad of a shard_map, and the rules stage 11's primitives have in each table."""

from __future__ import annotations

import numpy as np
import pytest

import stages.s04_autodiff as s04
import stages.s05_vmap as s05
import stages.s11_spmd as s11
from stages.s02_tracing import numpy as snp
from stages.s02_tracing.api import make_jaxpr
from stages.s03_partial_eval import partial_eval as pe
from stages.s04_autodiff import ad
from stages.s05_vmap import batching
from stages.s08_lowering import lowering_rules
from stages.s11_spmd import P
from stages.s11_spmd.shard_map import infer_vma


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
    rows = s11.shard_map(lambda a: all_gather(a, "y", axis=1, tiled=True), mesh=mesh,
                         in_specs=P("x", "y"), out_specs=P("x"))
    np.testing.assert_array_equal(np.asarray(rows(x)), x)
    jaxpr = make_jaxpr(lambda a: (psum(a, "y"), axis_index("x") + a),
                       axis_env=[("x", 2), ("y", 2)])(np.ones(2, np.float32)).jaxpr
    assert infer_vma(jaxpr, [frozenset("xy")]) == [frozenset("x"), frozenset("xy")]


def test_a_gradient_inside_the_body_for_a_replicated_value_needs_check_vma_false(four):
    """JAX types each value by the mesh axes it varies along, so with check_vma=True its
    gradient for the replicated `v` is summed over the devices (pvary's transpose is psum).
    Ours has no such types: it refuses to call that output replicated, and with
    check_vma=False gives each device's own gradient, as JAX does then."""
    mesh = s11.make_mesh((4,), ("i",))
    v, a = np.float32(0.5), np.linspace(-1, 1, 8, dtype=np.float32)

    def body(v, a):
        return s04.grad(lambda v: snp.sum(snp.sin(a * v)))(v)
    with pytest.raises(ValueError, match=r"out_specs is P\(\) which implies that the "
                                         r"corresponding output value is replicated"):
        s11.shard_map(body, mesh=mesh, in_specs=(P(), P("i")), out_specs=P())(v, a)
    own = s11.shard_map(lambda v, a: body(v, a)[None], mesh=mesh, in_specs=(P(), P("i")),
                        out_specs=P("i"), check_vma=False)(v, a)
    blocks = a.reshape(4, 2)
    np.testing.assert_allclose(np.asarray(own), (blocks * np.cos(blocks * v)).sum(1),
                               rtol=1e-5)
