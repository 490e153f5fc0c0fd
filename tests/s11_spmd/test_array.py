"""Sharded arrays: device_put with a sharding puts one block per device, the global value reads
back, shards say where they are; with_sharding_constraint under grad and vmap, and its rules."""

from __future__ import annotations

import numpy as np
import pytest

import stages.s04_autodiff as s04
import stages.s05_vmap as s05
import stages.s11_spmd as s11
from stages.s02_tracing import numpy as snp
from stages.s02_tracing.api import make_jaxpr
from stages.s04_autodiff import ad
from stages.s05_vmap import batching
from stages.s08_lowering import lowering_rules
from stages.s11_spmd import P


def test_device_put_puts_one_block_per_device(four):
    mesh = s11.make_mesh((2, 2), ("data", "model"))
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    a = s11.device_put(x, s11.NamedSharding(mesh, P("data", "model")))
    assert isinstance(a, s11.ArrayImpl) and a.shape == (4, 6)
    shards = a.addressable_shards
    assert [s.device.id for s in shards] == [0, 1, 2, 3]
    assert [s.data.shape for s in shards] == [(2, 3)] * 4
    np.testing.assert_array_equal(np.asarray(shards[3].data), x[2:, 3:])
    np.testing.assert_array_equal(np.asarray(a), x)
    r = s11.device_put(x, s11.NamedSharding(mesh, P(None, "model")))
    assert [s.replica_id for s in r.addressable_shards] == [0, 0, 1, 1]
    assert a.devices() == set(mesh.devices.flat)
    a.delete()
    with pytest.raises(RuntimeError, match="Array has been deleted"):
        np.asarray(a)


@pytest.mark.parametrize("spec", [P("data", "model"), P()], ids=["split", "replicated"])
def test_the_values_numpy_sees_are_read_only_as_in_jax(four, spec):
    mesh = s11.make_mesh((2, 2), ("data", "model"))
    a = s11.device_put(np.zeros((4, 6), np.float32), s11.NamedSharding(mesh, spec))
    with pytest.raises(ValueError, match="^assignment destination is read-only$"):
        np.asarray(a)[0, 0] = 5.0
    assert float(s11.jit(lambda v: v.sum())(a)) == float(np.asarray(a).sum()) == 0.0


def test_a_scalar_put_on_a_mesh_stays_a_scalar_in_every_shard_as_in_jax(four):
    import jax  # the oracle, on the devices this process's JAX has

    n = len(jax.devices())
    theirs = jax.device_put(np.float32(3.0), jax.sharding.NamedSharding(
        jax.make_mesh((n,), ("x",)), jax.sharding.PartitionSpec()))
    a = s11.device_put(np.float32(3.0), s11.NamedSharding(s11.make_mesh((4,), ("x",)), P()))
    assert np.asarray(a).shape == np.asarray(theirs).shape == ()
    assert [np.asarray(s.data).shape for s in a.addressable_shards] == [()] * 4
    assert {np.asarray(s.data).shape for s in theirs.addressable_shards} == {()}
    assert float(a * 2.0) == 6.0


def test_device_put_of_a_pytree_and_an_uneven_split(four):
    mesh = s11.make_mesh((4,), ("x",))
    tree = {"a": np.ones((8, 2), np.float32), "b": np.zeros(4, np.float32)}
    out = s11.device_put(tree, s11.NamedSharding(mesh, P("x")))
    assert out["a"].sharding.shard_shape((8, 2)) == (2, 2)
    with pytest.raises(ValueError, match="implies that array axis 0 is partitioned 4 times"):
        s11.device_put(np.ones(6, np.float32), s11.NamedSharding(mesh, P("x")))


def test_eager_ops_on_a_sharded_array_see_its_global_value(four):
    mesh = s11.make_mesh((4,), ("x",))
    x = np.arange(8, dtype=np.float32)
    a = s11.device_put(x, s11.NamedSharding(mesh, P("x")))
    np.testing.assert_allclose(np.asarray(a * 2.0 + 1.0), x * 2 + 1)
    c = s11.with_sharding_constraint(x, s11.NamedSharding(mesh, P("x")))
    assert c.sharding.spec == P("x")


def test_the_constraint_survives_grad_and_vmap_in_the_jaxpr(four):
    mesh = s11.make_mesh((2, 2), ("data", "model"))
    sharding = s11.NamedSharding(mesh, P("data", None))

    def f(x):
        return snp.sum(snp.sin(s11.with_sharding_constraint(x, sharding)))

    x = np.ones((4, 2), np.float32)
    jaxpr = make_jaxpr(s04.grad(f))(x)
    assert str(jaxpr).count("sharding_constraint") == 2  # the value and its cotangent
    batched = make_jaxpr(s05.vmap(lambda v: s11.with_sharding_constraint(v, sharding)))(
        np.ones((3, 4, 2), np.float32))
    (eqn,) = batched.jaxpr.eqns
    assert eqn.params["sharding"].spec == P(None, "data", None)
    g = s11.jit(s04.grad(f), in_shardings=sharding)(x)
    np.testing.assert_allclose(np.asarray(g), np.cos(x), rtol=1e-6)


def test_the_constraint_has_a_rule_in_every_table():
    p = s11.sharding_constraint_p
    for table in (ad.primitive_jvps, ad.primitive_transposes, batching.primitive_batchers,
                  lowering_rules):
        assert p in table
    assert "impl" in vars(p) and "abstract_eval" in vars(p)
