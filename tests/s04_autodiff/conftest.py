"""Shared helpers for stage 4's tests: the stage-2 corpus as differentiable functions, random
tangents and cotangents, and tree comparison against JAX (the oracle) in float32 tolerance:
RTOL_ELEMENTWISE unless the compared program sums many terms (`rtol_for`)."""

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
from shared.testing import RTOL_ELEMENTWISE, RTOL_REDUCTION
from stages.s01_pytrees import tree_flatten, tree_unflatten
from stages.s02_tracing import core, lax
from stages.s04_autodiff import ad_util

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


def assert_trees_close(ours: Any, theirs: Any, *, rtol: float) -> None:
    """Same leaves (float0 leaves just by shape), values within rtol of the leaf's scale.

    rtol is the caller's: RTOL_ELEMENTWISE for a program that rounds once per value,
    RTOL_REDUCTION for one that sums many terms (`rtol_for` decides from the program).
    """
    ours_leaves, ours_tree = tree_flatten(ours)
    theirs_leaves = jax.tree_util.tree_leaves(theirs)
    assert len(ours_leaves) == len(theirs_leaves), (ours_tree, theirs)
    for o, t in zip(ours_leaves, theirs_leaves, strict=True):
        t = np.asarray(t)
        assert np.shape(o) == t.shape
        if t.dtype == FLOAT0:
            assert np.asarray(o).dtype == FLOAT0
            continue
        # atol: an entry near zero (a difference of close values, a cos near pi/2) carries the
        # absolute rounding error of the leaf's largest entries, not a relative error of its own
        scale = max(1.0, float(np.max(np.abs(t), initial=0.0)))
        np.testing.assert_allclose(np.asarray(o), t, rtol=rtol, atol=rtol * scale)


# Primitives whose float32 result sums many terms, so its rounding error grows with the count.
ACCUMULATING = frozenset({"reduce_sum", "cumsum", "dot_general"})


def _accumulates(jaxpr: Any) -> bool:
    for eqn in jaxpr.eqns:
        if eqn.primitive.name in ACCUMULATING:
            return True
        for param in eqn.params.values():
            for value in param if isinstance(param, tuple) else (param,):
                inner = getattr(value, "jaxpr", value)  # a ClosedJaxpr's jaxpr, or a Jaxpr
                if isinstance(inner, core.Jaxpr) and _accumulates(inner):
                    return True
    return False


def rtol_for(fn: Any, *args: Any) -> float:
    """The tolerance for fn(*args): RTOL_REDUCTION if our jaxpr of it sums (a reduction or a
    dot, at any depth, e.g. a broadcast's transpose), else RTOL_ELEMENTWISE."""
    def float_outputs(*a: Any) -> list[Any]:  # a float0 tangent is not a value to trace
        leaves, _ = tree_flatten(fn(*a))
        return [x for x in leaves if not (isinstance(x, np.ndarray) and x.dtype == FLOAT0)]

    closed = s02.make_jaxpr(float_outputs)(*args)
    return RTOL_REDUCTION if _accumulates(closed.jaxpr) else RTOL_ELEMENTWISE


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


# The linear primitives: each is linear in some of its inputs (mul and dot_general in one
# operand at a time, select_n in its cases, pad in operand and padding value, dynamic_slice in
# its operand, gather in its operand, the scatters in operand and updates) and has a transpose
# rule. A linear jaxpr holds nothing else.
LINEAR_PRIMITIVES = frozenset({
    lax.neg_p, lax.add_p, lax.sub_p, lax.mul_p, lax.div_p, ad_util.add_jaxvals_p,
    lax.convert_element_type_p, lax.reduce_sum_p, lax.cumsum_p, lax.broadcast_in_dim_p,
    lax.reshape_p, lax.transpose_p, lax.squeeze_p, lax.rev_p, lax.select_n_p, lax.slice_p,
    lax.pad_p,
    lax.dynamic_slice_p, lax.dynamic_update_slice_p, lax.concatenate_p, lax.split_p, lax.tile_p,
    lax.dot_general_p,
    lax.real_p, lax.imag_p, lax.complex_p, lax.conj_p,
    lax.gather_p, lax.scatter_p, lax.scatter_add_p, lax.scatter_mul_p,
})


@pytest.fixture(scope="session")
def linear_primitives() -> frozenset:
    return LINEAR_PRIMITIVES


@pytest.fixture(scope="session")
def helpers() -> SimpleNamespace:
    return SimpleNamespace(like=like, random_like_tree=random_like_tree, is_float=is_float,
                           assert_trees_close=assert_trees_close, rtol_for=rtol_for,
                           dynamic=dynamic, FLOAT0=FLOAT0, RTOL_ELEMENTWISE=RTOL_ELEMENTWISE,
                           RTOL_REDUCTION=RTOL_REDUCTION)


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
