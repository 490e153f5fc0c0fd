"""split on an Explicit mesh: each piece keeps the operand's layout while every changed split
dimension still divides by its mesh axes, else JAX's refusal; the gradient of a concatenate
(now a split) keeps the layout. The expected types and message were printed by JAX 0.10.2 on 4
CPU devices (`jax.typeof`, and the ShardingTypeError's text)."""

from __future__ import annotations

import numpy as np
import pytest

import stages.s04_autodiff as s04
import stages.s11_spmd as s11
from stages.s02_tracing import core, lax, make_jaxpr
from stages.s02_tracing import numpy as snp
from stages.s11_spmd import P
from stages.s11_spmd.sharding_rules import ShardingTypeError


@pytest.fixture
def x(four):
    mesh = s11.make_mesh((2, 2), ("x", "y"))
    v = np.arange(16, dtype=np.float32).reshape(4, 4) / 10
    return s11.device_put(v, s11.NamedSharding(mesh, P("x", "y")))


def _types(xs):
    return [str(core.typeof(v)) for v in xs]


def test_each_piece_keeps_the_layout_as_in_jax(x):
    assert _types(lax.split(x, (2, 2), 1)) == ["float32[4@x,2@y]", "float32[4@x,2@y]"]
    assert _types(lax.split(x, (2, 2), 0)) == ["float32[2@x,4@y]", "float32[2@x,4@y]"]
    pieces = lax.split(x, (2, 2), 1)
    np.testing.assert_array_equal(np.asarray(pieces[1]), np.asarray(x)[:, 2:])


def test_a_piece_that_no_longer_divides_is_refused_with_jaxs_message(x):
    with pytest.raises(ShardingTypeError) as e:
        lax.split(x, (1, 3), 1)
    assert str(e.value) == (
        "split on sharded dims where out dim (1) is not divisible by mesh axes (2) with spec "
        "(y) is not implemented. Got input type=f32[4@x,4@y] and output shape=(4, 1)")


def test_the_gradient_of_a_concatenate_keeps_the_layout(x):
    f = lambda a: snp.sum(snp.concatenate([a, 2 * a], 1) ** 2)
    g = s11.jit(s04.grad(f))(x)
    assert str(core.typeof(g)) == "float32[4@x,4@y]"
    np.testing.assert_allclose(np.asarray(g), 10 * np.asarray(x), rtol=1e-6)
    # JAX's line: `i:f32[4@x,4@y] j:f32[4@x,4@y] = split[axis=1 sizes=(4, 4)] h`
    (line,) = [t for t in str(make_jaxpr(s04.grad(f))(x)).splitlines() if "split[" in t]
    binders, eqn = line.split(" = ")
    assert [b.split(":")[1] for b in binders.split()] == ["f32[4@x,4@y]", "f32[4@x,4@y]"]
    assert eqn.startswith("split[axis=1 sizes=(4, 4)] ")
