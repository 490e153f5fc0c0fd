"""vmap composed with stage 4's grad: per-example gradients, grad of a vmap, sum vs mean.

`vmap(grad(loss))` differentiates one example's loss and maps that over the batch: one
gradient per example. `grad(vmap(loss))` differentiates a function with a vector output, which
grad refuses; adding a reduction makes it work, and the reduction chosen changes the number.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from shared.testing import RTOL_REDUCTION
from stages.s02_tracing import lax
from stages.s04_autodiff import grad
from stages.s05_vmap import vmap

_rng = np.random.default_rng(7)
W = _rng.standard_normal(3).astype(np.float32)
X = _rng.standard_normal((8, 3)).astype(np.float32)
Y = _rng.standard_normal(8).astype(np.float32)


def _loss(lax):
    """Squared error of a one-example linear model with a tanh: scalar output."""

    def loss(w, x, y):
        pred = lax.tanh(lax.dot_general(x, w, (((0,), (0,)), ((), ()))))
        err = lax.sub(pred, y)
        return lax.mul(err, err)

    return loss


def test_per_example_gradients_equal_a_python_loop_of_grad(close):
    per_example = vmap(grad(_loss(lax)), in_axes=(None, 0, 0))(W, X, Y)
    looped = np.stack([grad(_loss(lax))(W, x, y) for x, y in zip(X, Y, strict=True)])
    assert np.shape(per_example) == (8, 3)
    close(per_example, looped, rtol=RTOL_REDUCTION)  # a dot in each


def test_per_example_gradients_equal_jaxs(close):
    ours = vmap(grad(_loss(lax)), in_axes=(None, 0, 0))(W, X, Y)
    theirs = jax.vmap(jax.grad(_loss(jax.lax)), in_axes=(None, 0, 0))(W, X, Y)
    close(ours, theirs, rtol=RTOL_REDUCTION)


def test_per_example_gradients_sum_to_the_gradient_of_the_summed_loss(close):
    per_example = vmap(grad(_loss(lax)), in_axes=(None, 0, 0))(W, X, Y)
    summed = grad(lambda w: lax.reduce_sum(vmap(_loss(lax), in_axes=(None, 0, 0))(w, X, Y),
                                           (0,)))(W)
    close(np.sum(per_example, axis=0), summed, rtol=RTOL_REDUCTION)


def test_grad_of_a_vmap_fails_with_jaxs_non_scalar_message():
    with pytest.raises(TypeError) as ours:
        grad(vmap(_loss(lax), in_axes=(None, 0, 0)))(W, X, Y)
    with pytest.raises(TypeError) as theirs:
        jax.grad(jax.vmap(_loss(jax.lax), in_axes=(None, 0, 0)))(W, X, Y)
    assert str(ours.value) == str(theirs.value)
    assert str(ours.value) == ("Gradient only defined for scalar-output functions. Output had "
                               "shape: (8,).")


def test_the_reduction_after_vmap_changes_the_gradient(close):
    batched = vmap(_loss(lax), in_axes=(None, 0, 0))
    g_sum = grad(lambda w: batched(w, X, Y).sum())(W)
    g_mean = grad(lambda w: batched(w, X, Y).mean())(W)
    close(g_sum, len(X) * np.asarray(g_mean), rtol=RTOL_REDUCTION)
    assert not np.allclose(g_sum, g_mean)
    jax_batched = jax.vmap(_loss(jax.lax), in_axes=(None, 0, 0))
    close(g_sum, jax.grad(lambda w: jnp.sum(jax_batched(w, X, Y)))(W), rtol=RTOL_REDUCTION)
    close(g_mean, jax.grad(lambda w: jnp.mean(jax_batched(w, X, Y)))(W), rtol=RTOL_REDUCTION)


def test_vmap_of_grad_traces_to_jaxs_jaxpr(ours, theirs):
    # the batched backward pass, equation for equation and parameter for parameter
    mine = ours.make_jaxpr(vmap(grad(_loss(lax)), in_axes=(None, 0, 0)))(W, X, Y)
    want = theirs.make_jaxpr(jax.vmap(jax.grad(_loss(jax.lax)), in_axes=(None, 0, 0)))(W, X, Y)
    assert str(mine) == str(want)
