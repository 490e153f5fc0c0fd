"""atan2 through the front door: jnp.arctan2, jnp.atan2 and lax.atan2 under jit, grad and
vmap compute JAX's values, dtypes and weak types."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import stages.s12_system as ujax
from shared.testing import RTOL_ELEMENTWISE, assert_same_typed_values

pytestmark = pytest.mark.oracle

X = np.array([1.0, -1.0, -1.0, 1.0, 0.0, -0.0, np.inf, 2.0], np.float32)
Y = np.array([1.0, 1.0, -1.0, -1.0, -0.0, -1.0, -np.inf, np.inf], np.float32)


def _program(lib):
    np_ = lib.numpy

    def loss(x, y):
        return np_.sum(np_.arctan2(x, y) ** 2)

    return {"jit": lib.jit(np_.arctan2)(X, Y), "atan2": np_.atan2(1, 2),
            "lax": lib.lax.atan2(X, Y), "ints": np_.arctan2(np.arange(3, dtype=np.int32), 2),
            "grad": lib.grad(loss, (0, 1))(X[:4], Y[:4]),
            "vmap": lib.vmap(lib.grad(np_.arctan2))(X[:4], Y[:4])}


def test_arctan2_under_the_front_door_equals_jax():
    ours, theirs = _program(ujax), _program(jax)
    for key in theirs:
        assert_same_typed_values(ours[key], theirs[key], rtol=RTOL_ELEMENTWISE)


def test_the_front_door_has_jaxs_atan2_names():
    for name in ("arctan2", "atan2"):
        assert hasattr(ujax.numpy, name) and hasattr(jnp, name)
    assert hasattr(ujax.lax, "atan2") and hasattr(jax.lax, "atan2")
