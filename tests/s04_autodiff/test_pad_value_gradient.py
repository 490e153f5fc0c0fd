"""The gradient of pad's padding value when the padded array is not differentiated.

JAX 0.10.2's `_pad_transpose` computes the padding value's cotangent as the sum of the output's
cotangent minus the sum of the operand's, but computes the operand's only when the operand is
linear; when it is a constant (or a zero tangent made concrete), it sums `None` and raises
TypeError. Its forward mode is right, so `jax.jacfwd` is the oracle here: each padding value's
derivative counts the places it fills.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import stages.s02_tracing as s02
import stages.s04_autodiff as s04

pytestmark = pytest.mark.oracle

CONFIGS = [[(3, 3, 0)], [(1, 0, 2)], [(-1, 2, 1)]]  # outside, interior, and a negative low
JAX_ERROR = ("Error interpreting argument to reduce_sum as a JAX value. The problematic value is "
             "of type <class 'NoneType'> and was passed to reduce_sum at position 0.")


def _weighted_pad(lax, jnp, config):
    c = np.arange(1, 5, dtype=np.float32)  # the padded array: a constant
    w = np.linspace(0.5, 2.0, len(c) + sum(lo + hi for lo, hi, _ in config)
                    + sum(i * (len(c) - 1) for _, _, i in config), dtype=np.float32)
    return lambda s: jnp.sum(lax.pad(c, s, config) * w)  # a weight per place, so a place
    # counted twice or missed changes the answer


@pytest.mark.parametrize("config", CONFIGS, ids=str)
def test_the_padding_values_gradient_is_jax_jacfwds(config):
    s = np.float32(2.0)
    want = jax.jacfwd(_weighted_pad(jax.lax, jax.numpy, config))(s)
    got = s04.grad(_weighted_pad(s02.lax, s02.numpy, config))(s)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert np.asarray(got).dtype == want.dtype and np.shape(got) == ()


def test_jaxs_grad_still_fails_there():
    """Pinned so that the page's note is retired when JAX mends its transpose."""
    with pytest.raises(TypeError) as err:
        jax.grad(_weighted_pad(jax.lax, jax.numpy, CONFIGS[0]))(np.float32(2.0))
    assert str(err.value).splitlines()[0] == JAX_ERROR


def test_with_both_operands_differentiated_ours_equals_jaxs_grad():
    c = np.arange(1, 5, dtype=np.float32)
    f = lambda lax, jnp: lambda x, s: jnp.sum(lax.pad(x, s, [(1, 2, 1)]) ** 2)
    want = jax.grad(f(jax.lax, jax.numpy), (0, 1))(c, np.float32(0.5))
    got = s04.grad(f(s02.lax, s02.numpy), (0, 1))(c, np.float32(0.5))
    for o, t in zip(got, want, strict=True):
        np.testing.assert_allclose(o, t, rtol=1e-6)
