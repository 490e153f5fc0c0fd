"""vmap with every stage-4 feature: custom_jvp, custom_vjp, checkpoint, checkpoint_name, add_any.

Both orders: vmap(grad(f)) (grad inside: stage 4's traces see batched values) and
grad(vmap(f)) (vmap inside: the batch trace must hand the custom rule on to grad, not inline
the function and lose it). Each result is compared with JAX's.
"""

from __future__ import annotations

import importlib
import pkgutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.ad_checkpoint import checkpoint_name as jax_checkpoint_name

import stages.s04_autodiff as s04
from stages.s02_tracing import core, make_jaxpr
from stages.s02_tracing import lax as olax
from stages.s04_autodiff import custom_derivatives
from stages.s05_vmap import BatchTrace, jacfwd, jacrev, primitive_batchers, vmap

XS = np.array([1.0, 2.0, -0.5, 0.25], np.float32)


def _custom_jvp_fn(custom_jvp, lax):
    @custom_jvp
    def f(x):
        return lax.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), lax.mul(t, 100.0)  # not sin's derivative: proves the rule is used

    return f


def _custom_vjp_fn(custom_vjp, lax):
    @custom_vjp
    def g(x):
        return lax.sin(x)

    def g_fwd(x):
        return g(x), lax.cos(x)

    def g_bwd(res, ct):
        return (lax.mul(lax.mul(ct, res), 7.0),)

    g.defvjp(g_fwd, g_bwd)
    return g


def _checkpoint_fn(checkpoint, lax):
    return checkpoint(lambda x: lax.sin(lax.cos(lax.mul(x, x))))


def _nested_checkpoint_fn(checkpoint, lax):
    return checkpoint(lambda x: lax.sin(checkpoint(lambda y: lax.cos(lax.mul(y, y)))(x)))


def _policy_fn(checkpoint, policy, lax):
    def f(x):
        h = lax.sin(lax.mul(x, 3.0))
        axes = tuple(range(np.ndim(h)))  # a dot of h with itself, at any rank
        return lax.cos(lax.dot_general(h, h, ((axes, axes), ((), ()))))

    return checkpoint(f, policy=policy)


def _named_fn(checkpoint_name, lax):
    return lambda x: lax.sin(checkpoint_name(lax.mul(x, 3.0), "y"))


FEATURES = {
    "custom_jvp": (lambda: _custom_jvp_fn(s04.custom_jvp, olax),
                   lambda: _custom_jvp_fn(jax.custom_jvp, jax.lax)),
    "custom_vjp": (lambda: _custom_vjp_fn(s04.custom_vjp, olax),
                   lambda: _custom_vjp_fn(jax.custom_vjp, jax.lax)),
    "checkpoint": (lambda: _checkpoint_fn(s04.checkpoint, olax),
                   lambda: _checkpoint_fn(jax.checkpoint, jax.lax)),
    "nested_checkpoint": (lambda: _nested_checkpoint_fn(s04.checkpoint, olax),
                          lambda: _nested_checkpoint_fn(jax.checkpoint, jax.lax)),
    "checkpoint_dots_saveable": (
        lambda: _policy_fn(s04.checkpoint, s04.ad_checkpoint.dots_saveable, olax),
        lambda: _policy_fn(jax.checkpoint, jax.checkpoint_policies.dots_saveable, jax.lax)),
    "checkpoint_name": (lambda: _named_fn(s04.checkpoint_name, olax),
                        lambda: _named_fn(jax_checkpoint_name, jax.lax)),
}


@pytest.mark.parametrize("feature", list(FEATURES))
def test_vmap_of_grad_matches_jax(feature, close, tol):
    ours, theirs = (make() for make in FEATURES[feature])
    mapped = vmap(s04.grad(ours))
    close(mapped(XS), jax.vmap(jax.grad(theirs))(XS), rtol=tol.rtol_for(mapped, XS))


@pytest.mark.parametrize("feature", list(FEATURES))
def test_grad_of_summed_vmap_matches_jax(feature, close, tol):
    ours, theirs = (make() for make in FEATURES[feature])
    got = s04.grad(lambda x: olax.reduce_sum(vmap(ours)(x), (0,)))(XS)
    close(got, jax.grad(lambda x: jnp.sum(jax.vmap(theirs)(x)))(XS), rtol=tol.REDUCTION)


def test_vmap_of_grad_of_a_nested_checkpoint_traces_to_jaxs_jaxpr():
    # the batched backward pass recomputes inside two remat2s, as JAX's does
    ours, theirs = (make() for make in FEATURES["nested_checkpoint"])
    assert str(make_jaxpr(vmap(s04.grad(ours)))(XS)) == str(
        jax.make_jaxpr(jax.vmap(jax.grad(theirs)))(XS))


def test_a_custom_jvp_rule_survives_a_vmap_inside_grad(close, tol):
    f = _custom_jvp_fn(s04.custom_jvp, olax)
    got = s04.grad(lambda x: olax.reduce_sum(vmap(f)(x), (0,)))(XS)
    close(got, np.full_like(XS, 100.0), rtol=tol.ELEMENTWISE)  # the rule's 100, not cos(x)


@pytest.mark.parametrize("feature", ["custom_jvp", "custom_vjp", "checkpoint",
                                     "nested_checkpoint"])
def test_make_jaxpr_of_vmap_keeps_the_call_primitive_like_jax(feature, ours, theirs):
    mine, want = (make() for make in FEATURES[feature])
    assert str(ours.make_jaxpr(vmap(mine))(XS)) == str(theirs.make_jaxpr(jax.vmap(want))(XS))


@pytest.mark.parametrize("feature", list(FEATURES))
def test_jacrev_matches_jax(feature, close, tol):
    ours, theirs = (make() for make in FEATURES[feature])
    close(jacrev(ours)(XS), jax.jacrev(theirs)(XS), rtol=tol.rtol_for(jacrev(ours), XS))


@pytest.mark.parametrize("feature", ["custom_jvp", "checkpoint", "nested_checkpoint",
                                     "checkpoint_dots_saveable", "checkpoint_name"])
def test_jacfwd_matches_jax(feature, close, tol):
    ours, theirs = (make() for make in FEATURES[feature])
    close(jacfwd(ours)(XS), jax.jacfwd(theirs)(XS), rtol=tol.rtol_for(jacfwd(ours), XS))


def test_jacfwd_of_a_custom_vjp_function_fails_as_in_jax():
    ours, theirs = (make() for make in FEATURES["custom_vjp"])
    with pytest.raises(TypeError) as mine:
        jacfwd(ours)(XS)
    with pytest.raises(TypeError) as want:
        jax.jacfwd(theirs)(XS)
    assert str(mine.value) == str(want.value) == (
        "can't apply forward-mode autodiff (jvp) to a custom_vjp function.")


def _two_arg_custom_vjp(custom_vjp, lax):
    @custom_vjp
    def g(w, x):
        return lax.mul(w, x)

    def fwd(w, x):
        return g(w, x), (w, x)

    def bwd(res, ct):
        w, x = res
        return lax.mul(lax.mul(ct, x), 3.0), lax.mul(ct, w)

    g.defvjp(fwd, bwd)
    return g


def test_a_shared_inputs_cotangent_from_a_batched_bwd_is_summed(close, tol):
    # w is the same for every example: its cotangent is the sum over the batch
    g, gj = _two_arg_custom_vjp(s04.custom_vjp, olax), _two_arg_custom_vjp(jax.custom_vjp,
                                                                         jax.lax)
    w = np.float32(0.7)
    got = s04.grad(lambda w: olax.reduce_sum(vmap(g, in_axes=(None, 0))(w, XS), (0,)))(w)
    want = jax.grad(lambda w: jnp.sum(jax.vmap(gj, in_axes=(None, 0))(w, XS)))(w)
    close(got, want, rtol=tol.REDUCTION)  # summed over the batch
    close(got, 3.0 * XS.sum(), rtol=tol.REDUCTION)


def test_every_stage4_primitive_can_be_batched():
    found = {}
    for info in pkgutil.iter_modules(s04.__path__):
        module = importlib.import_module(f"stages.s04_autodiff.{info.name}")
        found.update({v.name: v for v in vars(module).values() if isinstance(v, core.Primitive)})
    assert {"add_any", "custom_jvp_call", "custom_vjp_call", "remat2"} <= set(found)
    # custom calls go through a rule per trace type (stage 4's tables of them), the rest the rules
    by_trace = {custom_derivatives.custom_jvp_call_p.name:
                custom_derivatives.custom_jvp_call_rules,
                custom_derivatives.custom_vjp_call_p.name:
                custom_derivatives.custom_vjp_call_rules}
    missing = [name for name, p in found.items()
               if p not in primitive_batchers and BatchTrace not in by_trace.get(name, {})]
    assert missing == []
