"""vmap of split, and of the gradients that hold split, pad and empty2, against jax.vmap: the
same values and the same printed jaxprs (the split axis shifts past the batch axis; pad's
batch rule keeps the np.int64 numbers of slice's transpose)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import stages.s02_tracing as s02
import stages.s04_autodiff as s04
import stages.s05_vmap as s05
import stages.s06_control_flow as s06
from shared.testing import assert_same_typed_values

pytestmark = pytest.mark.oracle

XS = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7

SPLITS = {  # name -> (sizes, axis, in_axes)
    "axis 0, batch 0": ((1, 2), 0, 0),
    "axis 1, batch 0": ((2, 1, 1), 1, 0),
    "axis 0, batch 1": ((1, 1), 0, 1),
    "axis 1, batch 2": ((1, 2), 1, 2),
    "negative axis, batch 1": ((3, 1), -1, 1),
}


@pytest.mark.parametrize("name", SPLITS)
def test_vmap_of_split_equals_jaxs(name):
    sizes, axis, in_axes = SPLITS[name]
    f = lambda lax: lambda x: lax.split(x, sizes, axis)
    assert_same_typed_values(s05.vmap(f(s02.lax), in_axes)(XS),
                             jax.vmap(f(jax.lax), in_axes)(XS))
    assert str(s02.make_jaxpr(s05.vmap(f(s02.lax), in_axes))(XS)) == \
        str(jax.make_jaxpr(jax.vmap(f(jax.lax), in_axes))(XS))


def test_split_of_an_unbatched_operand_stays_unbatched():
    f = lambda lax: lambda x, y: (lax.split(y, (1, 3), 0)[1] * x)
    y = np.arange(4, dtype=np.float32)
    assert_same_typed_values(s05.vmap(f(s02.lax), (0, None))(XS[0, 0], y),
                             jax.vmap(f(jax.lax), (0, None))(XS[0, 0], y))


GRADS = {
    "concatenate": lambda np_, cond: lambda x: np_.sum(np_.concatenate([x, 2 * x]) ** 2),
    "slice": lambda np_, cond: lambda x: np_.sum(x[1:3]),
    "strided_slice": lambda np_, cond: lambda x: np_.sum(x[::2] ** 2),
    "index": lambda np_, cond: lambda x: x[0] * x[2],
    "cond_residuals": lambda np_, cond: lambda x: np_.sum(
        cond(True, lambda x: np_.sin(x) * x[:2].sum(), lambda x: x * 2.0, x)),
}


@pytest.mark.parametrize("name", GRADS)
def test_vmap_of_grad_equals_jaxs(name):
    xs = XS[:, 0]
    ours = s05.vmap(s04.grad(GRADS[name](s02.numpy, s06.cond)))
    theirs = jax.vmap(jax.grad(GRADS[name](jnp, jax.lax.cond)))
    assert_same_typed_values(ours(xs), theirs(xs))
    assert str(s02.make_jaxpr(ours)(xs)) == str(jax.make_jaxpr(theirs)(xs))


def test_split_and_empty2_have_batching_rules():
    assert s02.lax.split_p in s05.batching.primitive_batchers
    assert s02.lax.empty2_p in s05.batching.primitive_batchers


def test_jnp_split_and_array_split_under_grad_and_vmap_equal_jaxs():
    def f(m):  # each piece weighted differently, so a piece sent back to the wrong place fails
        return lambda a: sum((p ** 2).sum() * (i + 1)
                             for i, p in enumerate(m.array_split(a, 3, axis=-1)))

    g = lambda m: lambda a: m.split(a, [1, 3])
    x = XS[0]
    ours = (s04.grad(f(s02.numpy)), s05.vmap(g(s02.numpy)), s05.vmap(s04.grad(f(s02.numpy))))
    theirs = (jax.grad(f(jnp)), jax.vmap(g(jnp)), jax.vmap(jax.grad(f(jnp))))
    for o, t, arg in zip(ours, theirs, (x, x, XS), strict=True):
        assert_same_typed_values(o(arg), t(arg))
        assert str(s02.make_jaxpr(o)(arg)) == str(jax.make_jaxpr(t)(arg))
