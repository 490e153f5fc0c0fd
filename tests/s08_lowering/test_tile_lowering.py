"""tile lowers as JAX lowers it: a reshape to (1, d0, 1, d1, ...), a broadcast_in_dim to
(r0, d0, r1, d1, ...) and a reshape to the tiled shape. Our module text is jax.jit(f).lower()'s
for tile alone, through jnp.tile, under grad (its transpose: a reshape and a reduce_sum) and
under vmap; the compiled module computes JAX's values, bit for bit (tiling only copies)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import stages.s02_tracing as s02
import stages.s04_autodiff as s04
import stages.s05_vmap as s05

from .conftest import Program, assert_jaxpr_text_and_values_are_jaxs

pytestmark = pytest.mark.oracle

M23 = np.arange(6, dtype=np.float32).reshape(2, 3) / 4
I4 = np.array([3, -1, 0, 7], np.int32)
W = np.arange(48, dtype=np.float32).reshape(4, 12) / 10  # a weight per copy: a copy mixed up
# with another in the transpose gives another gradient


def _program(name, make, *args):
    ours = make(s02.numpy, s02.lax, s04.grad, s05.vmap)
    theirs = make(jnp, jax.lax, jax.grad, jax.vmap)
    ours.__name__ = theirs.__name__ = name
    return Program(name, ours, theirs, args)


PROGRAMS = [
    _program("lax_tile", lambda np_, lax, grad, vmap: lambda x: lax.tile(x, (3, 2)), M23),
    _program("lax_tile_ints_zero_reps", lambda np_, lax, grad, vmap: lambda i: (
        lax.tile(i, (2,)), lax.tile(i, (0,))), I4),
    _program("jnp_tile_more_reps", lambda np_, lax, grad, vmap: lambda x: np_.tile(x, (2, 1, 3)),
             M23),
    _program("grad_tile", lambda np_, lax, grad, vmap: grad(
        lambda x: np_.sum(np_.tile(x, (2, 4)) * W)), M23),
    _program("vmap_tile", lambda np_, lax, grad, vmap: vmap(lambda x: np_.tile(x, (2, 2)), 1),
             M23),
]


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_the_jaxpr_and_our_text_are_jaxs_and_compute_jaxs_values(program):
    assert_jaxpr_text_and_values_are_jaxs(program)
