"""The derivatives of atan2(x, y), the angle of the point (y, x), against JAX's.

d/dx = y / (x^2 + y^2) and d/dy = -x / (x^2 + y^2), in every quadrant; the jaxprs print as
JAX's, `square` equations included.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import stages.s02_tracing as s02
import stages.s04_autodiff as s04
from shared.testing import RTOL_ELEMENTWISE, assert_same_typed_values

pytestmark = pytest.mark.oracle

X = np.array([1.0, -1.0, -1.0, 1.0, 0.0, 2.0, -0.5, 3.0], np.float32)
Y = np.array([1.0, 1.0, -1.0, -1.0, 2.0, 0.0, 0.25, -4.0], np.float32)
DX = np.array([0.5, -1.0, 2.0, 1.0, -3.0, 0.25, 1.0, -2.0], np.float32)
DY = np.array([1.0, 0.5, -0.5, 2.0, 1.0, -1.0, 0.0, 3.0], np.float32)


def _ours(x, y):
    return s02.numpy.arctan2(x, y)


def test_jvp_in_every_quadrant_equals_jaxs():
    ours = s04.jvp(_ours, (X, Y), (DX, DY))
    theirs = jax.jvp(jnp.arctan2, (X, Y), (DX, DY))
    assert_same_typed_values(ours, theirs)


def test_each_operands_tangent_alone_is_its_partial_derivative():
    r2 = X * X + Y * Y
    _, dx = s04.jvp(lambda x: _ours(x, Y), (X,), (np.ones_like(X),))
    _, dy = s04.jvp(lambda y: _ours(X, y), (Y,), (np.ones_like(Y),))
    np.testing.assert_allclose(dx, Y / r2, rtol=RTOL_ELEMENTWISE)
    np.testing.assert_allclose(dy, -X / r2, rtol=RTOL_ELEMENTWISE)


@pytest.mark.parametrize("argnums", [0, 1, (0, 1)])
def test_grad_of_python_floats_equals_jaxs_with_weak_types(argnums):
    for x, y in [(1.0, 2.0), (-3.0, 0.5), (-0.5, -0.5), (2.0, -1.0)]:
        assert_same_typed_values(s04.grad(_ours, argnums)(x, y),
                                 jax.grad(jnp.arctan2, argnums)(x, y))


def test_vjp_of_a_broadcast_scalar_sums_its_cotangent_as_jaxs():
    def loss(lib, x, y):
        return lib.sum(lib.arctan2(x, y) * DX)

    ours = s04.grad(lambda x, y: loss(s02.numpy, x, y), (0, 1))(X, np.float32(1.5))
    theirs = jax.grad(lambda x, y: loss(jnp, x, y), (0, 1))(X, np.float32(1.5))
    assert_same_typed_values(ours, theirs)


def test_second_derivatives_equal_jaxs():
    for outer, inner in [(0, 0), (0, 1), (1, 0), (1, 1)]:
        ours = s04.grad(s04.grad(_ours, inner), outer)(0.75, -1.25)
        theirs = jax.grad(jax.grad(jnp.arctan2, inner), outer)(0.75, -1.25)
        assert_same_typed_values(ours, theirs)


def test_the_gradient_at_the_origin_is_nan_as_in_jax():
    ours = s04.grad(_ours, (0, 1))(0.0, 0.0)
    theirs = jax.grad(jnp.arctan2, (0, 1))(0.0, 0.0)
    assert all(np.isnan(o) for o in ours) and all(np.isnan(t) for t in theirs)


def test_complex_jvp_equals_jaxs():
    x = np.array([1 + 1j, 2 - 3j], np.complex64)
    y = np.array([2 + 0j, -1 + 0.5j], np.complex64)
    dx = np.array([1 + 0j, 0.5j], np.complex64)
    assert_same_typed_values(s04.jvp(s02.lax.atan2, (x, y), (dx, dx)),
                             jax.jvp(jax.lax.atan2, (x, y), (dx, dx)), atol=1e-5)


def test_the_jvp_jaxpr_prints_as_jaxs():
    ours = s02.make_jaxpr(lambda x, y: s04.jvp(_ours, (x, y), (x, y)))(X, Y)
    theirs = jax.make_jaxpr(lambda x, y: jax.jvp(jnp.arctan2, (x, y), (x, y)))(X, Y)
    assert str(ours) == str(theirs)


def test_the_grad_jaxpr_prints_as_jaxs():
    ours = s02.make_jaxpr(s04.grad(_ours, (0, 1)))(0.5, 2.0)
    theirs = jax.make_jaxpr(jax.grad(jnp.arctan2, (0, 1)))(0.5, 2.0)
    assert str(ours) == str(theirs)


def test_atan2_has_a_jvp_rule_and_no_transpose_rule():
    assert s02.lax.atan2_p in s04.ad.primitive_jvps
    assert s02.lax.atan2_p not in s04.ad.primitive_transposes
