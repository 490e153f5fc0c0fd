"""Every construct on the corpus against jax.lax: values, jvp, grad and vmap agree."""

from __future__ import annotations

import numpy as np
import pytest

from .conftest import CASES

IDS = [c.name for c in CASES]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_values_agree_with_jax(case, ours, theirs, close):
    close(case.build(ours)(*case.args), case.build(theirs)(*case.args))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_jvp_agrees_with_jax(case, ours, theirs, close, helpers):
    tangents = tuple(helpers.xs(*np.shape(a), seed=100 + i) for i, a in enumerate(case.args))
    close(ours.jvp(case.build(ours), case.args, tangents),
          theirs.jvp(case.build(theirs), case.args, tangents))


@pytest.mark.parametrize("case", [c for c in CASES if c.grad],
                         ids=[c.name for c in CASES if c.grad])
def test_grad_agrees_with_jax(case, ours, theirs, close, helpers):
    argnums = tuple(range(len(case.args)))
    ours_grad = ours.grad(helpers.scalarize(ours, case.build(ours)), argnums)(*case.args)
    jax_grad = theirs.grad(helpers.scalarize(theirs, case.build(theirs)), argnums)(*case.args)
    close(ours_grad, jax_grad)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_vmap_agrees_with_jax(case, ours, theirs, close, helpers):
    # three different examples of every argument: predicates and trip counts differ per example
    batched = tuple(np.stack([a, a * 1.5 + 0.25, a * 0.5 - 0.1]) for a in case.args)
    close(ours.vmap(case.build(ours))(*batched), theirs.vmap(case.build(theirs))(*batched))


@pytest.mark.parametrize("case", [c for c in CASES if c.grad],
                         ids=[c.name for c in CASES if c.grad])
def test_per_example_grad_agrees_with_jax(case, ours, theirs, close, helpers):
    batched = tuple(np.stack([a, a * -1.5 + 0.25]) for a in case.args)
    ours_fun = ours.vmap(ours.grad(helpers.scalarize(ours, case.build(ours))))
    jax_fun = theirs.vmap(theirs.grad(helpers.scalarize(theirs, case.build(theirs))))
    close(ours_fun(*batched), jax_fun(*batched))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_traced_then_evaluated_agrees_with_eager(case, ours, close):
    # the staged equation, run by eval_jaxpr, computes what the eager call computes
    from stages.s01_pytrees import tree_flatten
    from stages.s02_tracing import eval_jaxpr

    closed = ours.make_jaxpr(case.build(ours))(*case.args)
    flat_args, _ = tree_flatten(case.args)
    staged = eval_jaxpr(closed.jaxpr, closed.consts, *flat_args)
    eager, _ = tree_flatten(case.build(ours)(*case.args))
    close([np.asarray(x) for x in staged], eager)
