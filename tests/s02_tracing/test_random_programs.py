"""Random programs over the primitive set: printed like JAX's, evaluated like JAX's.

Hypothesis draws a short sequence of lax operations over four inputs (f32[3,4], f32[4], a weak
f32 scalar, and an i32[3,4] holding integer edge cases) from `shared.random_programs`, using
every kind of step there: float math, reductions, slicing and padding, and integer arithmetic,
bitwise ops, shifts, comparisons, selects and conversions. Each step picks operands of
compatible shapes and dtypes from the values made so far. The same program runs on our lax and
on jax.lax.
"""

from __future__ import annotations

import jax
import numpy as np
from hypothesis import HealthCheck, given, settings

from shared.random_programs import ALL_KINDS, INT_KINDS, Program, example_inputs, programs
from shared.testing import RTOL_REDUCTION
from stages.s02_tracing import core, make_jaxpr
from stages.s02_tracing import lax as olax

INPUTS = example_inputs(seed=1, with_int=True)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(ALL_KINDS + INT_KINDS, max_steps=8))
def test_random_programs_print_and_evaluate_like_jax(program: Program):
    ours = make_jaxpr(program.as_function(olax))(*INPUTS)
    theirs = jax.make_jaxpr(program.as_function(jax.lax))(*INPUTS)
    assert str(ours) == str(theirs)
    got = core.eval_jaxpr(ours.jaxpr, ours.consts, *INPUTS)
    want = [np.asarray(w) for w in program.as_function(jax.lax)(*INPUTS)]
    for g, w in zip(got, want, strict=True):
        g = np.asarray(g)
        assert g.shape == w.shape and g.dtype == w.dtype
        if not np.issubdtype(w.dtype, np.floating):
            np.testing.assert_array_equal(g, w)  # integer ops are exact: wraparound included
            continue
        # dots and sums of sums accumulate rounding: relative to the values' scale
        scale = max(1.0, float(np.max(np.abs(w), initial=0.0)))
        np.testing.assert_allclose(g, w, rtol=RTOL_REDUCTION, atol=RTOL_REDUCTION * scale)
