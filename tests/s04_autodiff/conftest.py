"""Shared helpers for stage 4's tests: the stage-2 corpus as differentiable functions, random
tangents and cotangents, and tree comparison against JAX (the oracle) in float32 tolerance."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import stages.s02_tracing as s02
import stages.s04_autodiff as s04
from shared.corpus_s02 import CASES, Case
from shared.testing import RTOL_REDUCTION
from stages.s01_pytrees import tree_flatten, tree_unflatten

FLOAT0 = jax.dtypes.float0


def is_float(x: Any) -> bool:
    return np.issubdtype(np.asarray(x).dtype, np.inexact)


def like(x: Any, rng: np.random.Generator) -> Any:
    """A random tangent or cotangent for x: float32 noise, or float0 zeros for an int/bool."""
    if not is_float(x):
        return np.zeros(np.shape(x), FLOAT0)
    return rng.standard_normal(np.shape(x)).astype(np.float32)


def random_like_tree(tree: Any, rng: np.random.Generator) -> Any:
    leaves, treedef = tree_flatten(tree)
    return tree_unflatten(treedef, [like(x, rng) for x in leaves])


def assert_trees_close(ours: Any, theirs: Any, rtol: float = RTOL_REDUCTION) -> None:
    """Same leaves (float0 leaves just by shape), values within rtol of the leaf's scale."""
    ours_leaves, ours_tree = tree_flatten(ours)
    theirs_leaves = jax.tree_util.tree_leaves(theirs)
    assert len(ours_leaves) == len(theirs_leaves), (ours_tree, theirs)
    for o, t in zip(ours_leaves, theirs_leaves, strict=True):
        t = np.asarray(t)
        assert np.shape(o) == t.shape
        if t.dtype == FLOAT0:
            assert np.asarray(o).dtype == FLOAT0
            continue
        scale = max(1.0, float(np.max(np.abs(t), initial=0.0)))
        np.testing.assert_allclose(np.asarray(o), t, rtol=rtol, atol=rtol * scale)


def dynamic(case: Case, lax: Any, jnp_: Any) -> tuple[Any, tuple]:
    """The case as a function of its non-static arguments only, and those arguments."""
    fn = case.bind(lax, jnp_)
    if not case.static_argnums:
        return fn, case.args
    dyn = [i for i in range(len(case.args)) if i not in case.static_argnums]

    def f(*dyn_args: Any) -> Any:
        full = list(case.args)
        for i, a in zip(dyn, dyn_args, strict=True):
            full[i] = a
        return fn(*full)

    return f, tuple(case.args[i] for i in dyn)


@pytest.fixture(scope="session")
def helpers() -> SimpleNamespace:
    return SimpleNamespace(like=like, random_like_tree=random_like_tree, is_float=is_float,
                           assert_trees_close=assert_trees_close, dynamic=dynamic,
                           FLOAT0=FLOAT0)


@pytest.fixture(scope="session")
def ours() -> SimpleNamespace:
    return SimpleNamespace(lax=s02.lax, jnp=s02.numpy, make_jaxpr=s02.make_jaxpr, jvp=s04.jvp,
                           vjp=s04.vjp, grad=s04.grad, linearize=s04.linearize)


@pytest.fixture(scope="session")
def theirs() -> SimpleNamespace:
    return SimpleNamespace(lax=jax.lax, jnp=jnp, make_jaxpr=jax.make_jaxpr, jvp=jax.jvp,
                           vjp=jax.vjp, grad=jax.grad, linearize=jax.linearize)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """`case` parametrizes a test over the whole stage-2 corpus."""
    if "case" in metafunc.fixturenames:
        metafunc.parametrize("case", CASES, ids=[c.name for c in CASES])
