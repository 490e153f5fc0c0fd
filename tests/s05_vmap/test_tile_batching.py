"""vmap of tile, and of its transpose under grad, against jax.vmap: the batch axis gets a rep of
1 where it sits, so the same values and the same printed jaxprs for every in_axes."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import stages.s02_tracing as s02
import stages.s04_autodiff as s04
import stages.s05_vmap as s05
from shared.testing import assert_same_typed_values

pytestmark = pytest.mark.oracle

XS = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7
W = np.arange(48, dtype=np.float32).reshape(6, 8) / 10


@pytest.mark.parametrize("in_axes", [0, 1, 2])
def test_vmap_of_tile_equals_jaxs(in_axes):
    f = lambda lax: lambda x: lax.tile(x, (2, 3))
    assert_same_typed_values(s05.vmap(f(s02.lax), in_axes)(XS),
                             jax.vmap(f(jax.lax), in_axes)(XS))
    assert str(s02.make_jaxpr(s05.vmap(f(s02.lax), in_axes))(XS)) == \
        str(jax.make_jaxpr(jax.vmap(f(jax.lax), in_axes))(XS))


def test_vmap_of_grad_of_tile_and_an_unbatched_tile_equal_jaxs():
    def f(np_):  # weights differ per copy: summing the wrong copies gives another gradient
        return lambda x: np_.sum(np_.tile(x, (2, 2)) * W)

    ours = s05.vmap(lambda x, y: (s04.grad(f(s02.numpy))(x), s02.numpy.tile(y, 2)), (0, None))
    theirs = jax.vmap(lambda x, y: (jax.grad(f(jnp))(x), jnp.tile(y, 2)), (0, None))
    y = XS[0, 0]
    assert_same_typed_values(ours(XS, y), theirs(XS, y))
    assert str(s02.make_jaxpr(ours)(XS, y)) == str(jax.make_jaxpr(theirs)(XS, y))
