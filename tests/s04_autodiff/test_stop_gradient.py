"""stop_gradient: the identity on values, a zero on derivatives, one equation in a jaxpr."""

from __future__ import annotations

import jax
import numpy as np

import stages.s04_autodiff as s04
from stages.s02_tracing import lax, make_jaxpr

X = np.array([0.5, -1.0, 2.0], np.float32)


def test_stop_gradient_is_the_identity_on_values_and_pytrees():
    np.testing.assert_array_equal(s04.stop_gradient(X), X)
    out = s04.stop_gradient({"a": X, "b": (X * 2,)})
    np.testing.assert_array_equal(out["b"][0], X * 2)


def test_grad_through_stop_gradient_is_zero_like_jax():
    def build(grad, stop_gradient, lax):
        return grad(lambda x: lax.reduce_sum(lax.mul(stop_gradient(x), x), (0,)))

    ours = build(s04.grad, s04.stop_gradient, lax)(X)
    theirs = build(jax.grad, jax.lax.stop_gradient, jax.lax)(X)
    np.testing.assert_array_equal(ours, X)  # only the unstopped factor contributes
    np.testing.assert_array_equal(ours, np.asarray(theirs))
    np.testing.assert_array_equal(s04.grad(lambda x: s04.stop_gradient(x) * 3.0)(2.0), 0.0)


def test_jvp_of_stop_gradient_has_a_zero_tangent():
    _, tangent = s04.jvp(s04.stop_gradient, (X,), (np.ones(3, np.float32),))
    np.testing.assert_array_equal(tangent, np.zeros(3, np.float32))


def test_stop_gradient_prints_like_jax():
    def f(stop_gradient, lax):
        return lambda x: lax.sin(stop_gradient(x))

    ours = make_jaxpr(f(s04.stop_gradient, lax))(X)
    theirs = jax.make_jaxpr(f(jax.lax.stop_gradient, jax.lax))(X)
    assert str(ours) == str(theirs)
    assert "stop_gradient a" in str(ours)


def test_grad_of_stop_gradient_prints_like_jax():
    def f(stop_gradient, lax):
        return lambda x: lax.mul(stop_gradient(x), x)

    ours = make_jaxpr(s04.grad(f(s04.stop_gradient, lax)))(np.float32(2.0))
    theirs = jax.make_jaxpr(jax.grad(f(jax.lax.stop_gradient, jax.lax)))(np.float32(2.0))
    assert str(ours) == str(theirs)
