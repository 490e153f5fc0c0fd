"""Every program of the stage 2, 3 and 6 corpora, and grad, vmap, jvp, hessian, custom rules and
checkpoint composed over them, jitted with stage 7's jit: it now compiles and runs through our
PJRT client and gives what jax.jit gives (the very same numbers where our module's text is
JAX's, as stage 8's fidelity test finds it)."""

from __future__ import annotations

import numpy as np
import pytest

import stages.s07_caches as s07
from shared.testing import RTOL_REDUCTION
from stages.s01_pytrees import tree_leaves
from stages.s09_pjrt import ArrayImpl

from .conftest import S08

PROGRAMS = S08.CORPUS + S08.COMPOSITIONS


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_jit_runs_through_pjrt_and_agrees_with_jax_jit(program):
    out = s07.jit(program.ours, static_argnums=program.static_argnums)(*program.args)
    ours = tree_leaves(out)
    assert all(type(x) is ArrayImpl for x in ours)  # device arrays, not host values
    theirs = S08.jax_values(program)
    assert len(ours) == len(theirs)
    same_text = S08.lower_ours(program) == S08.jax_text(program)
    for a, e in zip(ours, theirs, strict=True):
        a = np.asarray(a)
        assert a.shape == e.shape and a.dtype == e.dtype, (a.shape, a.dtype, e.shape, e.dtype)
        if same_text:
            np.testing.assert_array_equal(a, e)  # one program, one compiler: the same bits
        else:
            np.testing.assert_allclose(a, e, rtol=RTOL_REDUCTION, atol=1e-5)
