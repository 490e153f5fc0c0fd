"""Shared helpers for stage 5's tests: ours and JAX's side by side, and a tree comparison.

`both` hands a test the pair (vmap, lax, jnp, make_jaxpr) for ours and for JAX, so one function
written against those names runs on both. `assert_close` compares two output pytrees leaf by
leaf: same structure, same shapes, values within a tolerance.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import jax
import jax.numpy as jnp
import jax.tree_util as jtu
import numpy as np
import pytest

import stages.s02_tracing as s02
import stages.s05_vmap as s05
from shared.testing import RTOL_REDUCTION

OURS = SimpleNamespace(name="ours", vmap=s05.vmap, lax=s02.lax, jnp=s02.numpy,
                       make_jaxpr=s02.make_jaxpr)
THEIRS = SimpleNamespace(name="jax", vmap=jax.vmap, lax=jax.lax, jnp=jnp,
                         make_jaxpr=jax.make_jaxpr)


@pytest.fixture(scope="session")
def ours() -> SimpleNamespace:
    return OURS


@pytest.fixture(scope="session")
def theirs() -> SimpleNamespace:
    return THEIRS


def assert_close(actual: Any, expected: Any, rtol: float = RTOL_REDUCTION,
                 atol: float = 1e-6) -> None:
    """Same pytree structure, same shapes and dtypes, values within rtol/atol."""
    actual_leaves, actual_tree = jtu.tree_flatten(actual)
    expected_leaves, expected_tree = jtu.tree_flatten(expected)
    assert actual_tree == expected_tree, (actual_tree, expected_tree)
    for a, e in zip(actual_leaves, expected_leaves, strict=True):
        assert np.shape(a) == np.shape(e), (np.shape(a), np.shape(e))
        if isinstance(a, np.ndarray) and isinstance(e, jax.Array):
            assert a.dtype == e.dtype, (a.dtype, e.dtype)
        np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=rtol, atol=atol)


@pytest.fixture(scope="session")
def close():
    return assert_close


def stack_along(x: Any, axis: int, size: int, seed: int = 0) -> np.ndarray:
    """`size` different examples shaped like x, stacked along `axis` (negative allowed)."""
    arr = np.asarray(x)
    rng = np.random.default_rng(seed)
    if arr.dtype == np.bool_:
        examples = [rng.random(arr.shape) < 0.5 for _ in range(size)]
    elif np.issubdtype(arr.dtype, np.integer):
        examples = [(arr + i).astype(arr.dtype) for i in range(size)]
    else:
        dtype = np.float32 if arr.dtype == np.float64 else arr.dtype
        examples = [(arr + rng.standard_normal(arr.shape) * 0.1).astype(dtype)
                    for _ in range(size)]
    return np.stack(examples, axis=axis)


@pytest.fixture(scope="session")
def stack():
    return stack_along
