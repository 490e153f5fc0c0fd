"""Every lowered module of the corpora parses, compiles and runs with jaxlib, and computes
what jax.jit of the same function computes: the stage 2, 3 and 6 corpora, and grad, vmap,
jvp, hessian, custom rules and checkpoint composed over them."""

from __future__ import annotations

import numpy as np
import pytest

from shared.testing import RTOL_REDUCTION

from .conftest import (
    COMPOSITIONS,
    CORPUS,
    RULE_PROGRAMS,
    jax_text,
    jax_values,
    lower_ours,
    run_ours,
)

PROGRAMS = CORPUS + COMPOSITIONS + RULE_PROGRAMS


def test_the_corpora_are_all_here():
    assert len(CORPUS) >= 50 and len(COMPOSITIONS) >= 50
    names = [p.name for p in PROGRAMS]
    assert len(set(names)) == len(names)


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_our_module_runs_and_agrees_with_jax_jit(program):
    ours, theirs = run_ours(program), jax_values(program)
    assert len(ours) == len(theirs)
    same_text = lower_ours(program) == jax_text(program)
    for a, e in zip(ours, theirs, strict=True):
        assert a.shape == e.shape and a.dtype == e.dtype, (a.shape, a.dtype, e.shape, e.dtype)
        if same_text:
            # one text, one compiler: the very same numbers
            np.testing.assert_array_equal(a, e)
        else:
            # the programs differ as their jaxprs do (see test_fidelity): float32 roundings
            # of a few dozen ops on O(1) values
            np.testing.assert_allclose(a, e, rtol=RTOL_REDUCTION, atol=1e-5)
