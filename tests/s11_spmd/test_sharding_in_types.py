"""Explicit mesh axes: shardings in types. Each rule on its own, against what JAX 0.10.2 gives
for the same call (the values below were printed by `jax.typeof` on 4 CPU devices); the whole
programs are compared with JAX in test_jit_sharded.py."""

from __future__ import annotations

import numpy as np
import pytest

import stages.s04_autodiff as s04
import stages.s11_spmd as s11
from stages.s02_tracing import core, lax
from stages.s02_tracing import numpy as snp
from stages.s11_spmd import P
from stages.s11_spmd.sharding_in_types import ShardingTypeError, _groups


@pytest.fixture
def mesh(four):
    return s11.make_mesh((2, 2), ("x", "y"))


def put(mesh, shape, spec):
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) / 10
    return s11.device_put(x, s11.NamedSharding(mesh, spec))


def typeof(x):
    return str(core.typeof(x))


def test_make_meshs_axes_are_explicit_and_an_auto_mesh_types_nothing(four):
    assert s11.make_mesh((4,), ("x",)).axis_types == (s11.AxisType.Explicit,)
    auto = s11.make_mesh((4,), ("x",), (s11.AxisType.Auto,))
    x = s11.device_put(np.ones(8, np.float32), s11.NamedSharding(auto, P("x")))
    assert typeof(x) == "float32[8]" and core.typeof(x).sharding is None


def test_a_spec_is_typed_per_dimension_with_only_explicit_axes(four):
    mixed = s11.make_mesh((2, 2), ("x", "y"), (s11.AxisType.Explicit, s11.AxisType.Auto))
    x = s11.device_put(np.ones((4, 4), np.float32), s11.NamedSharding(mixed, P(("x", "y"))))
    assert typeof(x) == "float32[4@x,4]"
    assert core.typeof(x).sharding.spec == P("x", None)


def test_elementwise_broadcasts_size_one_and_scalars(mesh):
    x = put(mesh, (4, 4), P("x", None))
    row = put(mesh, (1, 4), P(None, "y"))
    assert typeof(x * 2.0) == "float32[4@x,4]"
    assert typeof(x + row) == "float32[4@x,4@y]"  # the size-1 dimension takes x's split
    with pytest.raises(ShardingTypeError, match=r"mul got incompatible shardings for "
                       r"broadcasting: \('x', None\), \('y', None\)\."):
        x * put(mesh, (4, 4), P("y", None))


def test_dot_general_batch_and_contracting_dimensions(mesh):
    a, b = put(mesh, (2, 4, 4), P("x", None, None)), put(mesh, (2, 4, 4), P("y", None, None))
    dims = (((2,), (1,)), ((0,), (0,)))
    with pytest.raises(ShardingTypeError, match="dot_general requires lhs batch dimensions "
                       r"and rhs batch dimensions to have the consistent sharding, got \('x',\) "
                       r"and \('y',\)\."):
        lax.dot_general(a, b, dims)
    c = put(mesh, (4, 4), P(None, "x"))
    out = lax.dot_general(c, put(mesh, (4, 4), P("x", None)), (((1,), (0,)), ((), ())),
                          out_sharding=s11.NamedSharding(mesh, P("y", None)))
    assert typeof(out) == "float32[4@y,4]"  # told, not guessed: the partitioner all-reduces
    np.testing.assert_allclose(np.asarray(out), np.asarray(c) @ np.asarray(c).T.T, rtol=1e-6)


def test_reshape_splits_and_merges_the_way_jax_does(mesh):
    x = put(mesh, (8, 4), P("x", None))
    assert typeof(x.reshape(2, 4, 4)) == "float32[2@x,4,4]"
    assert typeof(x.reshape(32)) == "float32[32@x]"
    assert typeof(x.reshape(8, 4, 1)) == "float32[8@x,4,1]"
    assert typeof(put(mesh, (8, 4), P(("x", "y"), None)).reshape(2, 2, 2, 4)) == \
        "float32[2@x,2@y,2,4]"
    with pytest.raises(ShardingTypeError, match=r"This reshape is not supported\. .* Got "
                       r"operand type: float32\[8@x,4\], new sizes: \(4, 8\)"):
        x.reshape(4, 8)
    with pytest.raises(ShardingTypeError, match="new sizes"):
        put(mesh, (4, 8), P(None, "x")).reshape(32)  # a split dimension after a whole one
    assert _groups((8, 4), (2, 4, 4)) == [([0], [0, 1]), ([1], [2])]
    assert _groups((2, 4, 4), (32,)) == [([0, 1, 2], [0])]


def test_reductions_transpose_and_full_like_keep_the_layout(mesh):
    x = put(mesh, (4, 6), P("x", "y"))
    assert [typeof(v) for v in (x.sum(0), x.max(1), x.T, snp.zeros_like(x), x.sum())] == \
        ["float32[6@y]", "float32[4@x]", "float32[6@y,4@x]", "float32[4@x,6@y]", "float32[]"]


def test_a_primitive_without_a_rule_is_refused_by_name(mesh):
    with pytest.raises(ShardingTypeError, match="sharding rule for slice is not implemented"):
        put(mesh, (4, 4), P("x", None))[0]  # JAX's own rule for it is not built here


def test_reshard_moves_the_layout_and_its_transpose_moves_it_back(mesh):
    x = put(mesh, (4, 4), P("x", None))
    with s11.set_mesh(mesh):
        y = s11.reshard(x, P(None, "y"))
        assert typeof(y) == "float32[4,4@y]" and y.sharding.spec == P(None, "y")
        g = s11.jit(s04.grad(lambda a: snp.sum(s11.reshard(a, P(None, "y")) ** 2)))(x)
    assert typeof(g) == "float32[4@x,4]"
    np.testing.assert_allclose(np.asarray(g), 2 * np.asarray(x), rtol=1e-6)
    assert s11.get_mesh() is None  # the block restored the mesh before it


def test_a_shard_maps_outputs_are_typed_by_out_specs(mesh):
    x = put(mesh, (4, 4), P("x", None))
    f = s11.shard_map(lambda a: a * 2, mesh=mesh, in_specs=P("x"), out_specs=P("x"))
    assert typeof(f(x)) == "float32[4@x,4]"
    np.testing.assert_allclose(np.asarray(f(x)), 2 * np.asarray(x))


def test_types_enter_jits_cache_key(mesh):
    f = s11.jit(lambda a: a + 1)
    a, b = put(mesh, (4, 4), P("x", None)), put(mesh, (4, 4), P(None, "x"))
    assert typeof(f(a)) == "float32[4@x,4]" and typeof(f(b)) == "float32[4,4@x]"
    assert core.ShapedArray((4, 4), np.float32) != core.typeof(a)
