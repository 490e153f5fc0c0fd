"""Smoke test of stage 12 on the installed JAX: keys, a sampler, a module, Adam and a few
training steps of the finale's model agree with jax.random, optax and jax.jit. Values only,
so that it holds on a GPU machine's environment too."""

from __future__ import annotations

import jax
import numpy as np
import optax

import stages.s12_system as ujax
from shared import char_transformer as ct


def test_keys_and_a_normal_draw_match_jax_random():
    with ujax.use_pjrt():
        k, kj = ujax.random.split(ujax.random.PRNGKey(3))[1], jax.random.split(
            jax.random.PRNGKey(3))[1]
        np.testing.assert_array_equal(np.asarray(k), np.asarray(kj))
        np.testing.assert_allclose(np.asarray(ujax.random.normal(k, (5,))),
                                   np.asarray(jax.random.normal(kj, (5,))), rtol=1e-6)


def test_an_adam_step_matches_optax():
    params, grads = {"w": np.ones(3, np.float32)}, {"w": np.array([1.0, -2.0, 3.0], np.float32)}
    ours, theirs = ujax.optim.adam(0.1), optax.adam(0.1)
    u, _ = ours.update(grads, ours.init(params))
    v, _ = theirs.update(grads, theirs.init(params))
    np.testing.assert_allclose(np.asarray(u["w"]), np.asarray(v["w"]), rtol=1e-6)


def test_the_finale_model_trains_as_jax_trains_it():
    config = ct.Config(context=8, d_model=16, layers=1, heads=2, batch=4)
    with ujax.use_pjrt(eager_ops=False):
        run_ours, run_jax = ct.both_steps(config)
        ours = [float(run_ours()) for _ in range(3)]
        theirs = [float(run_jax()) for _ in range(3)]
    np.testing.assert_allclose(ours, theirs, rtol=1e-4)
    assert ours[-1] < ours[0]
