"""Shared helpers for stage 5's tests: ours and JAX's side by side, and a tree comparison.

`both` hands a test the pair (vmap, lax, jnp, make_jaxpr) for ours and for JAX, so one function
written against those names runs on both. `assert_close` compares two output pytrees leaf by
leaf: same structure, same shapes, values within the tolerance the caller names
(RTOL_ELEMENTWISE, RTOL_REDUCTION, or `rtol_for` of the program, which picks one).
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
from shared.testing import RTOL_ELEMENTWISE, RTOL_REDUCTION

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


def assert_close(actual: Any, expected: Any, *, rtol: float, atol: float = 1e-6) -> None:
    """Same pytree structure, same shapes and dtypes, values within rtol/atol.

    atol: a value that is zero in one library can be a rounding residue in the other (about
    1e-7 next to the O(1) values these tests use); 1e-6 is about 8 float32 ulps at 1.0.
    """
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


# Primitives whose float32 result sums many terms, so its rounding error grows with the count.
ACCUMULATING = frozenset({"reduce_sum", "cumsum", "dot_general"})


def _accumulates(jaxpr: Any) -> bool:
    for eqn in jaxpr.eqns:
        if eqn.primitive.name in ACCUMULATING:
            return True
        for param in eqn.params.values():
            for value in param if isinstance(param, tuple) else (param,):
                inner = getattr(value, "jaxpr", value)  # a ClosedJaxpr's jaxpr, or a Jaxpr
                if isinstance(inner, s02.core.Jaxpr) and _accumulates(inner):
                    return True
    return False


def rtol_for(fn: Any, *args: Any) -> float:
    """The tolerance for fn(*args): RTOL_REDUCTION if our jaxpr of it sums (a reduction or a
    dot, at any depth, e.g. a transpose inside a jacrev), else RTOL_ELEMENTWISE."""
    closed = s02.make_jaxpr(fn)(*args)
    return RTOL_REDUCTION if _accumulates(closed.jaxpr) else RTOL_ELEMENTWISE


@pytest.fixture(scope="session")
def tol():
    """rtol_for, and the two tolerances by name."""
    return SimpleNamespace(rtol_for=rtol_for, ELEMENTWISE=RTOL_ELEMENTWISE,
                           REDUCTION=RTOL_REDUCTION)


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
