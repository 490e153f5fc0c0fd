"""The stage-2 corpus under vmap: values, shapes and printed jaxprs equal jax.vmap's.

Each corpus function runs on a batch of 3 examples stacked along the mapped axis. Three ways
of mapping: every argument along axis 0; every argument along its last axis with outputs
batched last; only the last argument mapped (the others passed whole, as None).
"""

from __future__ import annotations

import contextlib

import jax
import jax.tree_util as jtu
import pytest

from shared.corpus_s02 import CASES, Case

B = 3
IDS = [c.name for c in CASES]

# Where JAX's printed jaxpr differs for a reason we choose not to copy.
# cases whose batched jaxpr is not JAX's, and why (none: dynamic slices batch into gather and
# scatter as JAX's do)
NOT_COPIED: dict[str, str] = {}

VARIANTS = {
    "axis0": lambda n: (0, 0),
    "last_axis": lambda n: (-1, -1),
    "last_arg_only": lambda n: (tuple([None] * (n - 1) + [0]), 0),
}


def _dynamic(case: Case) -> list[int]:
    return [i for i in range(len(case.args)) if i not in case.static_argnums]


def _function(case: Case, lib):
    """The case as a function of its dynamic arguments only (static ones closed over)."""
    f = case.bind(lib.lax, lib.jnp)
    dyn = _dynamic(case)

    def g(*dyn_args):
        args = list(case.args)
        for i, a in zip(dyn, dyn_args, strict=True):
            args[i] = a
        return f(*args)

    g.__name__ = case.name
    return g


def _batched_args(case: Case, in_axes, stack) -> list:
    dyn = _dynamic(case)
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(dyn)
    return [case.args[i] if ax is None else
            jtu.tree_map(lambda x, ax=ax: stack(x, ax, B), case.args[i])
            for i, ax in zip(dyn, axes, strict=True)]


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_values_and_shapes_equal_jax_vmap(case, variant, ours, theirs, stack, close, tol):
    in_axes, out_axes = VARIANTS[variant](len(_dynamic(case)))
    args = _batched_args(case, in_axes, stack)
    mapped = ours.vmap(_function(case, ours), in_axes, out_axes)
    got = mapped(*args)
    want = theirs.vmap(_function(case, theirs), in_axes, out_axes)(*args)
    close(got, want, rtol=tol.rtol_for(mapped, *args))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_printed_jaxpr_of_vmap_equals_jaxs(case, ours, theirs, stack):
    if case.name in NOT_COPIED:
        pytest.xfail(NOT_COPIED[case.name])
    args = _batched_args(case, 0, stack)
    got = ours.make_jaxpr(ours.vmap(_function(case, ours)))(*args)
    # JAX wraps some jnp functions in a jit; disable_jit inlines them, as ours are written.
    with contextlib.ExitStack() as scope:
        if "jit_inside_in_jax" in case.tags:
            scope.enter_context(jax.disable_jit())
        want = theirs.make_jaxpr(theirs.vmap(_function(case, theirs)))(*args)
    assert str(got) == str(want)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_traced_vmap_evaluates_to_the_eager_answer(case, ours, stack, close, tol):
    # vmap under make_jaxpr, then eval_jaxpr: the same numbers as vmap run eagerly on numpy
    from stages.s02_tracing import eval_jaxpr

    args = _batched_args(case, 0, stack)
    f = ours.vmap(_function(case, ours))
    closed = ours.make_jaxpr(f)(*args)
    flat = eval_jaxpr(closed.jaxpr, closed.consts, *jtu.tree_leaves(args))
    # the same numpy operations in the same order either way
    close(flat, jtu.tree_leaves(f(*args)), rtol=tol.ELEMENTWISE)
