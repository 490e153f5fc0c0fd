"""cumlogsumexp's derivative where logaddexp meets infinities: JAX's logaddexp is a custom_jvp
whose rule counts an infinite input or output as 0 in exp(x - out); ours is the same rule, so
its gradients have NaN and finite entries where JAX's do (values, dtypes, eagerly)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import stages.s02_tracing as s02
import stages.s04_autodiff as s04
from stages.s04_autodiff.cumulative_rules import logaddexp

INF = np.array([-np.inf, -np.inf, np.inf, np.inf, 1.0], np.float32)
FINITE = np.array([0.5, 1.0, -3.0, 2.0, 2.0], np.float32)


@pytest.mark.parametrize("x", [INF, FINITE], ids=["infinities", "finite"])
def test_the_jvp_of_cumlogsumexp_is_jaxs(x):
    t = np.array([1.0, -2.0, 0.5, 3.0, 1.5], np.float32)
    ours = s04.jvp(lambda a: s02.lax.cumlogsumexp(a), (x,), (t,))
    theirs = jax.jvp(lambda a: jax.lax.cumlogsumexp(a), (x,), (t,))
    for a, e in zip(ours, theirs, strict=True):
        a, e = np.asarray(a), np.asarray(e)
        assert a.dtype == e.dtype
        np.testing.assert_allclose(a, e, rtol=1e-6)  # NaN exactly where JAX's is NaN


@pytest.mark.parametrize("last", range(5))
def test_the_gradient_of_cumlogsumexp_over_infinities_is_jaxs(last):
    ours = s04.grad(lambda a: s02.lax.cumlogsumexp(a)[last])(INF)
    theirs = jax.grad(lambda a: jax.lax.cumlogsumexp(a)[last])(INF)
    assert np.asarray(ours).dtype == theirs.dtype
    np.testing.assert_allclose(np.asarray(ours), theirs, rtol=1e-6)


def test_logaddexp_of_equal_infinities_is_that_infinity():
    a = np.array([-np.inf, np.inf, np.inf, 1.0, np.nan], np.float32)
    b = np.array([-np.inf, np.inf, -np.inf, -np.inf, 0.0], np.float32)
    ours = s02.make_jaxpr(logaddexp)(a, b)
    got = s02.core.eval_jaxpr(ours.jaxpr, ours.consts, a, b)[0]
    np.testing.assert_array_equal(np.asarray(got), jax.numpy.logaddexp(a, b))
