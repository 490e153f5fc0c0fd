"""Shared helpers for stage 3's tests: both sides of a split, run and compared.

JAX's own partial evaluator is the oracle: `jax._src.interpreters.partial_eval` (imported as
`jpe`) applied to `jax.make_jaxpr` of the same function. Stage 2 prints jaxprs exactly as JAX
does, so equal printed text means equal structure (same equations, same order, same wiring).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src import ad_checkpoint as jax_ad_checkpoint
from jax._src.interpreters import partial_eval as jpe

import stages.s02_tracing as s02
from shared.corpus_s02 import Case
from shared.corpus_s03 import DX, W1, W2, X, mlp, mlp_jvp
from stages.s01_pytrees import tree_flatten
from stages.s03_partial_eval import ad_checkpoint, partial_eval


@pytest.fixture(scope="session")
def ours() -> SimpleNamespace:
    return SimpleNamespace(make_jaxpr=s02.make_jaxpr, lax=s02.lax, jnp=s02.numpy, pe=partial_eval,
                           policies=_policies(ad_checkpoint))


@pytest.fixture(scope="session")
def theirs() -> SimpleNamespace:
    return SimpleNamespace(make_jaxpr=jax.make_jaxpr, lax=jax.lax, jnp=jnp, pe=jpe,
                           policies=_policies(jax_ad_checkpoint))


def _policies(module: Any) -> dict[str, Any]:
    names = ("everything_saveable", "nothing_saveable", "dots_saveable",
             "dots_with_no_batch_dims_saveable")
    return {name: getattr(module, name) for name in names}


def trace_case(case: Case, lib: SimpleNamespace) -> Any:
    trace = lib.make_jaxpr(case.bind(lib.lax, lib.jnp), static_argnums=case.static_argnums)
    if lib.jnp is jnp and "jit_inside_in_jax" in case.tags:
        # JAX wraps this case's jnp function in a jit; disable_jit inlines it, as ours is written
        # (shared/corpus_s02.py says more).
        with jax.disable_jit():
            return trace(*case.args)
    return trace(*case.args)


def dynamic_leaves(case: Case) -> list:
    dynamic = [a for i, a in enumerate(case.args) if i not in case.static_argnums]
    return tree_flatten(dynamic)[0]


def masks_for(n: int) -> list[tuple[bool, ...]]:
    """All known, all unknown, and each input alone unknown / alone known."""
    masks = {(False,) * n, (True,) * n}
    for i in range(n):
        masks.add(tuple(j == i for j in range(n)))
        masks.add(tuple(j != i for j in range(n)))
    return sorted(masks)


def run_split(known: Any, unknown: Any, out_unknowns: list[bool], unknowns, args) -> list:
    """Run jaxpr_known on the known arguments, then jaxpr_unknown on residuals + the rest."""
    known_args = [a for a, uk in zip(args, unknowns, strict=True) if not uk]
    unknown_args = [a for a, uk in zip(args, unknowns, strict=True) if uk]
    known_outs = s02.eval_jaxpr(known.jaxpr, known.consts, *known_args)
    num_known_outs = len(out_unknowns) - sum(out_unknowns)
    outs, residuals = known_outs[:num_known_outs], known_outs[num_known_outs:]
    unknown_outs = s02.eval_jaxpr(unknown.jaxpr, unknown.consts, *residuals, *unknown_args)
    outs_iter, unknown_iter = iter(outs), iter(unknown_outs)
    return [next(unknown_iter) if uk else next(outs_iter) for uk in out_unknowns]


def assert_same_values(actual: list, expected: list) -> None:
    """Known-then-unknown runs the same numpy calls as the whole jaxpr: equal, not close."""
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(e))


@pytest.fixture(scope="session")
def mlp_jvp_jaxprs(ours, theirs) -> tuple[Any, Any]:
    """(our jaxpr of mlp_jvp, JAX's jaxpr of jax.jvp(mlp)) on (W1, W2, x, dx).

    The program remat splits: primals known, tangent unknown (shared/corpus_s03.py).
    """
    mine = ours.make_jaxpr(lambda *a: mlp_jvp(ours.lax, *a))(W1, W2, X, DX)
    real = jax.make_jaxpr(
        lambda w1, w2, x, dx: jax.jvp(lambda x: mlp(jax.lax, w1, w2, x), (x,), (dx,))
    )(W1, W2, X, DX)
    return mine, real


@pytest.fixture(scope="session")
def helpers() -> SimpleNamespace:
    """The helpers above, for test modules (which never import each other or this file)."""
    return SimpleNamespace(
        trace_case=trace_case, dynamic_leaves=dynamic_leaves, masks_for=masks_for,
        run_split=run_split, assert_same_values=assert_same_values, mlp=mlp, mlp_jvp=mlp_jvp,
        W1=W1, W2=W2, X=X, DX=DX,
    )
