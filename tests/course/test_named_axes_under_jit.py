"""A jit inside a named vmap: the axis environment is part of jit's trace-cache key, as JAX's
axis_env_state is, so a trace that folded axis_size('i') to 2 never serves a vmap of size 3."""

from __future__ import annotations

import jax
import numpy as np

import stages.s05_vmap as s05
import stages.s07_caches as s07


def _f(ns_axis_size, ns_psum):
    return lambda x: x * ns_axis_size("i") + ns_psum(x, "i")


def test_a_jit_under_named_vmaps_of_two_sizes_retraces_as_jax_does():
    ours = s07.jit(_f(s05.axis_size, s05.psum))
    theirs = jax.jit(_f(jax.lax.axis_size, jax.lax.psum))
    for n in (2, 3, 2):
        xs = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
        np.testing.assert_allclose(s05.vmap(ours, axis_name="i")(xs),
                                   jax.vmap(theirs, axis_name="i")(xs))


def test_grad_of_a_jitted_collective_under_vmap_matches_jax():
    def build(jit, vmap, grad, par):
        f = jit(lambda w, x: par.pmean(w * x, "i") * x)
        return grad(lambda w, xs: vmap(lambda x: f(w, x), axis_name="i")(xs).sum())
    w, xs = np.float32(0.7), np.linspace(-1, 1, 4, dtype=np.float32)
    from stages.s04_autodiff import grad
    np.testing.assert_allclose(build(s07.jit, s05.vmap, grad, s05)(w, xs),
                               build(jax.jit, jax.vmap, jax.grad, jax.lax)(w, xs), rtol=1e-5)
