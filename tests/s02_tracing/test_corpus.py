"""The corpus (shared/corpus_s02.py): each function's jaxpr prints exactly as jax.make_jaxpr's,
and evaluating it agrees with running the function eagerly on ours and on JAX."""

from __future__ import annotations

import contextlib

import jax
import numpy as np
import pytest

from shared.corpus_s02 import CASES, Case
from shared.testing import RTOL_ELEMENTWISE, RTOL_REDUCTION
from stages.s01_pytrees import tree_flatten
from stages.s02_tracing import core

# JAX 0.10.2 wraps some jnp functions (jnp.where, jnp.clip, ...) in a `jit`, printed as a nested
# `jit[name=_where jaxpr={...}]` equation; stage 2 has no jit (stage 7 builds it). Cases with this
# tag are compared with JAX traced under jax.disable_jit(), which inlines the function as ours is.
JIT_INSIDE_IN_JAX = "jit_inside_in_jax"

# Reductions and dots accumulate in a different order than XLA's (shared/testing.py's tolerances).
_ACCUMULATING = {"reduce_sum", "reduce_max", "reduce_min", "cumsum", "dot_general", "argmax"}

IDS = [c.name for c in CASES]


def _trace(case: Case, lib) -> object:
    return lib.make_jaxpr(case.bind(lib.lax, lib.jnp), static_argnums=case.static_argnums)(
        *case.args)


def test_the_corpus_has_at_least_25_functions():
    assert len(CASES) >= 25
    assert len(set(IDS)) == len(IDS)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_printed_jaxpr_equals_jaxs(case, ours, theirs):
    inline = jax.disable_jit() if JIT_INSIDE_IN_JAX in case.tags else contextlib.nullcontext()
    with inline:
        expected = str(_trace(case, theirs))
    assert str(_trace(case, ours)) == expected


def _dynamic_leaves(case: Case) -> list:
    dynamic = [a for i, a in enumerate(case.args) if i not in case.static_argnums]
    return tree_flatten(dynamic)[0]


def _assert_close(actual, expected, rtol: float) -> None:
    actual_leaves, expected_leaves = tree_flatten(actual)[0], tree_flatten(expected)[0]
    assert len(actual_leaves) == len(expected_leaves)
    for a, e in zip(actual_leaves, expected_leaves, strict=True):
        # a Python scalar passed straight through compares as the dtype JAX gives it
        a = np.asarray(a, core.get_aval(a).dtype)
        e = np.asarray(e, core.get_aval(e).dtype)
        assert a.shape == e.shape and a.dtype == e.dtype
        np.testing.assert_allclose(a, e, rtol=rtol, atol=1e-6)


def _jax_arrays(case: Case) -> list:
    """The example arguments with arrays made jax Arrays, so operators on them are JAX's."""
    return [a if i in case.static_argnums else jax.tree.map(jax.numpy.asarray, a)
            for i, a in enumerate(case.args)]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_eval_jaxpr_agrees_with_eager_ours_and_eager_jax(case, ours, theirs):
    closed = _trace(case, ours)
    names = {e.primitive.name for e in closed.eqns}
    rtol = RTOL_REDUCTION if names & _ACCUMULATING else RTOL_ELEMENTWISE
    out_flat = core.eval_jaxpr(closed.jaxpr, closed.consts, *_dynamic_leaves(case))
    eager_jax = jax.tree.map(np.asarray, case.bind(theirs.lax, theirs.jnp)(*_jax_arrays(case)))
    _assert_close(out_flat, tree_flatten(eager_jax)[0], rtol)
    if "operators" not in case.tags:  # see the corpus docstring
        eager_ours = case.bind(ours.lax, ours.jnp)(*case.args)
        _assert_close(eager_ours, eager_jax, rtol)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_every_corpus_jaxpr_type_checks(case, ours):
    core.check_jaxpr(_trace(case, ours).jaxpr)
