"""checkpoint/remat: a remat2 equation whose residuals are what the policy saves, as in JAX."""

from __future__ import annotations

import jax
import jax._src.ad_checkpoint as jax_ad_checkpoint
import numpy as np
import pytest
from jax.ad_checkpoint import checkpoint_name as jax_checkpoint_name

from stages.s02_tracing import lax as olax
from stages.s02_tracing import make_jaxpr
from stages.s04_autodiff import ad_checkpoint, checkpoint, checkpoint_name, grad, remat

pytestmark = pytest.mark.oracle

rng = np.random.default_rng(6)
W1 = rng.standard_normal((4, 3)).astype(np.float32)
B1 = rng.standard_normal(4).astype(np.float32)
W2 = rng.standard_normal((2, 4)).astype(np.float32)
X = rng.standard_normal(3).astype(np.float32)


def mlp_block(lax, name):
    """sum(tanh(W2 @ tanh(W1 @ x + b1))), the hidden layer tagged 'hidden'."""
    def f(w1, b1, w2, x):
        h = lax.tanh(lax.add(lax.dot_general(w1, x, (((1,), (0,)), ((), ()))), b1))
        h = name(h, "hidden")
        return lax.reduce_sum(lax.tanh(lax.dot_general(w2, h, (((1,), (0,)), ((), ())))), (0,))
    return f


POLICIES = {
    "default": (None, None),
    "nothing_saveable": (ad_checkpoint.nothing_saveable,
                         jax.checkpoint_policies.nothing_saveable),
    "everything_saveable": (ad_checkpoint.everything_saveable,
                            jax.checkpoint_policies.everything_saveable),
    "dots_saveable": (ad_checkpoint.dots_saveable, jax.checkpoint_policies.dots_saveable),
    "dots_with_no_batch_dims_saveable": (
        ad_checkpoint.dots_with_no_batch_dims_saveable,
        jax.checkpoint_policies.dots_with_no_batch_dims_saveable),
    "save_only_these_names": (ad_checkpoint.save_only_these_names("hidden"),
                              jax.checkpoint_policies.save_only_these_names("hidden")),
    "save_any_names_but_these": (ad_checkpoint.save_any_names_but_these("hidden"),
                                 jax.checkpoint_policies.save_any_names_but_these("hidden")),
}


def _without_source(description: str) -> str:
    # JAX adds " from <file>:<line> (<function>)" to an equation's output; we keep no sources
    return description.split(" from /")[0]


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_residuals_saved_under_each_policy_equal_jax(policy):
    ours_policy, their_policy = POLICIES[policy]
    ours = ad_checkpoint.saved_residuals(
        checkpoint(mlp_block(olax, checkpoint_name), policy=ours_policy), W1, B1, W2, X)
    theirs = jax_ad_checkpoint.saved_residuals(
        jax.checkpoint(mlp_block(jax.lax, jax_checkpoint_name),
                       policy=their_policy), W1, B1, W2, X)
    assert len(ours) == len(theirs)
    assert [(a.shape, s) for a, s in ours] == [(a.shape, _without_source(s)) for a, s in theirs]


def test_without_checkpoint_every_intermediate_is_saved():
    ours = ad_checkpoint.saved_residuals(mlp_block(olax, checkpoint_name), W1, B1, W2, X)
    theirs = jax_ad_checkpoint.saved_residuals(
        mlp_block(jax.lax, jax_checkpoint_name), W1, B1, W2, X)
    assert [s for _, s in ours] == [_without_source(s) for _, s in theirs]


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_gradients_do_not_depend_on_the_policy(policy, helpers):
    got = grad(checkpoint(mlp_block(olax, checkpoint_name), policy=POLICIES[policy][0]),
               (0, 1, 2))(W1, B1, W2, X)
    want = jax.grad(mlp_block(jax.lax, jax_checkpoint_name), (0, 1, 2))(
        W1, B1, W2, X)
    helpers.assert_trees_close(got, want)


def test_checkpoint_stages_a_remat2_equation_like_jax():
    f = checkpoint(lambda x: olax.sin(olax.cos(x)))
    their_f = jax.checkpoint(lambda x: jax.lax.sin(jax.lax.cos(x)))
    assert str(make_jaxpr(f)(1.0)) == str(jax.make_jaxpr(their_f)(1.0))


def test_the_backward_pass_recomputes_inside_remat2_like_jax():
    f = checkpoint(lambda x: olax.sin(olax.cos(x)))
    their_f = jax.checkpoint(lambda x: jax.lax.sin(jax.lax.cos(x)))
    got = str(make_jaxpr(grad(f))(1.0))
    assert got == str(jax.make_jaxpr(jax.grad(their_f))(1.0))
    assert "differentiated=True" in got


def test_print_saved_residuals(capsys):
    # JAX (fact sheet): sin(cos(x)) keeps sin(x) and cos(cos(x)); checkpointed, only x
    ad_checkpoint.print_saved_residuals(lambda x: olax.sin(olax.cos(x)), 1.0)
    ad_checkpoint.print_saved_residuals(checkpoint(lambda x: olax.sin(olax.cos(x))), 1.0)
    assert capsys.readouterr().out.splitlines() == [
        "f32[] output of sin", "f32[] output of cos", "f32[] from the argument x"]


def test_remat_is_a_separate_alias_of_checkpoint():
    assert remat is not checkpoint
    f = lambda x: olax.sin(olax.cos(x))  # noqa: E731
    assert str(make_jaxpr(remat(f))(1.0)) == str(make_jaxpr(checkpoint(f))(1.0))
    assert grad(remat(f))(0.4) == grad(f)(0.4)
