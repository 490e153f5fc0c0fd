"""checkpoint/remat: a remat2 equation whose residuals are what the policy saves, as in JAX."""

from __future__ import annotations

import jax
import jax._src.ad_checkpoint as jax_ad_checkpoint
import numpy as np
import pytest
from jax._src.interpreters import partial_eval as jax_pe
from jax.ad_checkpoint import checkpoint_name as jax_checkpoint_name

from shared.testing import RTOL_ELEMENTWISE
from stages.s02_tracing import lax as olax
from stages.s02_tracing import make_jaxpr
from stages.s03_partial_eval import partial_eval as pe
from stages.s04_autodiff import ad_checkpoint, checkpoint, checkpoint_name, grad, jvp, remat

pytestmark = pytest.mark.oracle

rng = np.random.default_rng(6)
W1 = rng.standard_normal((4, 3)).astype(np.float32)
B1 = rng.standard_normal(4).astype(np.float32)
W2 = rng.standard_normal((2, 4)).astype(np.float32)
X = rng.standard_normal(3).astype(np.float32)
MATVEC = (((1,), (0,)), ((), ()))


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
    # JAX adds " from <file>:<line> (<function>)"; ours carries no source through partial eval
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
    helpers.assert_trees_close(got, want, rtol=helpers.RTOL_REDUCTION)  # two dots and a sum


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


# ------------------------------------------------------------------ a checkpoint in a checkpoint

NESTED = {
    "checkpoint(checkpoint(sin))": lambda ck, lax: ck(ck(lax.sin)),
    "checkpoint(sin(checkpoint(cos)))": lambda ck, lax: ck(lambda x: lax.sin(ck(lax.cos)(x))),
    "checkpoint(x * checkpoint(sin(y * y)))": lambda ck, lax: ck(
        lambda x: lax.mul(x, ck(lambda y: lax.sin(lax.mul(y, y)))(x))),
}


@pytest.mark.parametrize("name", list(NESTED))
def test_grad_of_a_checkpoint_nested_in_a_checkpoint_equals_jax(name):
    # the inner remat2 is split by its partial_eval_jaxpr_custom rule: without it, the whole
    # inner equation is staged and the primal output waits on a tangent
    f, their_f = NESTED[name](checkpoint, olax), NESTED[name](jax.checkpoint, jax.lax)
    np.testing.assert_allclose(grad(f)(0.5), jax.grad(their_f)(0.5), rtol=RTOL_ELEMENTWISE)
    assert str(make_jaxpr(grad(f))(0.5)) == str(jax.make_jaxpr(jax.grad(their_f))(0.5))
    ours = ad_checkpoint.saved_residuals(f, 0.5)
    theirs = jax_ad_checkpoint.saved_residuals(their_f, 0.5)
    assert [s for _, s in ours] == [_without_source(s) for _, s in theirs]


@pytest.mark.parametrize("policy", ["nothing_saveable", "everything_saveable"])
def test_the_splitter_splits_an_inner_remat2_like_jax(policy):
    def f(ck, lax):
        return ck(lambda x: lax.sin(ck(lambda y: lax.cos(lax.mul(y, y)))(x)))

    mine = make_jaxpr(lambda x, t: jvp(f(checkpoint, olax), (x,), (t,)))(0.5, 1.0)
    real = jax.make_jaxpr(lambda x, t: jax.jvp(f(jax.checkpoint, jax.lax), (x,), (t,)))(0.5, 1.0)
    assert str(mine) == str(real)
    # the outer remat2's jaxpr holds the inner one: split it with the primal known
    args = ([False, True], True, False, False)
    known, staged, out_unknowns, out_inst, num_res = pe.partial_eval_jaxpr_custom(
        mine.eqns[0].params["jaxpr"], *args, getattr(ad_checkpoint, policy))
    j_known, j_staged, j_out_unknowns, j_out_inst, j_num_res = jax_pe.partial_eval_jaxpr_custom(
        real.eqns[0].params["jaxpr"], *args, getattr(jax_ad_checkpoint, policy))
    assert (str(known), str(staged)) == (str(j_known), str(j_staged))
    assert (out_unknowns, out_inst, num_res) == (list(j_out_unknowns), list(j_out_inst),
                                                 j_num_res)


@pytest.mark.parametrize("outer, inner", [("nothing_saveable", "dots_saveable"),
                                          ("dots_saveable", "nothing_saveable"),
                                          ("everything_saveable", "nothing_saveable")])
def test_nested_policies_save_what_jax_saves(outer, inner, helpers):
    def f(ck, lax, name, policies):
        def block(w2, h):
            return lax.reduce_sum(lax.tanh(lax.dot_general(w2, name(h, "h"), MATVEC)), (0,))

        def net(w1, w2, x):
            h = lax.tanh(lax.dot_general(w1, x, MATVEC))
            return ck(block, policy=getattr(policies, inner))(w2, h)

        return ck(net, policy=getattr(policies, outer))

    mine = f(checkpoint, olax, checkpoint_name, ad_checkpoint)
    real = f(jax.checkpoint, jax.lax, jax_checkpoint_name, jax.checkpoint_policies)
    ours = ad_checkpoint.saved_residuals(mine, W1, W2, X)
    theirs = jax_ad_checkpoint.saved_residuals(real, W1, W2, X)
    assert [s for _, s in ours] == [_without_source(s) for _, s in theirs]
    helpers.assert_trees_close(grad(mine, (0, 1, 2))(W1, W2, X),
                               jax.grad(real, (0, 1, 2))(W1, W2, X),
                               rtol=helpers.RTOL_REDUCTION)  # dots and a sum


def test_checkpoint_resolves_negative_static_argnums_like_jax():
    def f(lax):
        def fn(x, n):
            return lax.integer_pow(x, n)
        return fn

    for argnums in (1, -1, (-1,)):
        mine = checkpoint(f(olax), static_argnums=argnums)
        real = jax.checkpoint(f(jax.lax), static_argnums=argnums)
        assert str(make_jaxpr(mine, static_argnums=1)(2.0, 3)) == str(
            jax.make_jaxpr(real, static_argnums=1)(2.0, 3))
        # equal values, dtypes and weak types: both print `Array(12., ..., weak_type=True)`
        assert repr(grad(mine)(2.0, 3)) == repr(jax.grad(real)(2.0, 3))
        assert float(grad(mine)(2.0, 3)) == 12.0


def test_a_static_argument_may_be_a_tracer_or_unhashable_as_in_jax():
    # checkpoint never caches its trace, so a static argument is only closed over
    from stages.s07_caches import jit

    def build(cp, lax):
        return lambda a: cp(lambda u, n: lax.mul(u, n[0]), static_argnums=(1,))(a, [a])

    mine, real = build(checkpoint, olax), build(jax.checkpoint, jax.lax)
    for ours, theirs in [(jit, jax.jit), (grad, jax.grad),
                         (lambda f: jit(grad(f)), lambda f: jax.jit(jax.grad(f)))]:
        assert repr(ours(mine)(0.5)) == repr(theirs(real)(0.5))


@pytest.mark.parametrize("argnums", [2, -3, [1]])
def test_bad_static_argnums_fail_with_jaxs_messages(argnums):
    def f(x, n):
        return x

    with pytest.raises((TypeError, ValueError)) as mine:
        checkpoint(f, static_argnums=argnums)(1.0, 2)
    with pytest.raises((TypeError, ValueError)) as real:
        jax.checkpoint(f, static_argnums=argnums)(1.0, 2)
    assert (type(mine.value), str(mine.value)) == (type(real.value), str(real.value))
    assert "static_argnums" in str(mine.value)
