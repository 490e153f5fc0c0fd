"""Random programs over the primitive set: printed like JAX's, evaluated like JAX's.

Hypothesis draws a short sequence of lax operations over four inputs (f32[3,4], f32[4], a weak
f32 scalar, and an i32[3,4] holding integer edge cases) from `shared.random_programs`, using
every kind of step there: float math, reductions, slicing and padding, integer arithmetic,
bitwise ops, shifts, comparisons, selects and conversions, and steps that mix in eager Arrays
(an f32, an i32 or a weak scalar made outside the trace, met through Python operators) and go
through int or bool and back. Each step picks operands of compatible shapes and dtypes from the
values made so far. The same program runs on our lax and on jax.lax, traced and eagerly.
"""

from __future__ import annotations

import jax
import numpy as np
from hypothesis import HealthCheck, given, settings

from shared.random_programs import (
    ALL_KINDS,
    CAST_KINDS,
    EAGER_KINDS,
    INT_KINDS,
    Program,
    example_inputs,
    programs,
)
from shared.testing import RTOL_REDUCTION, assert_same_typed_values
from stages.s02_tracing import core, make_jaxpr
from stages.s02_tracing import lax as olax

INPUTS = example_inputs(seed=1, with_int=True)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(ALL_KINDS + INT_KINDS + EAGER_KINDS + CAST_KINDS, max_steps=8))
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


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(ALL_KINDS + INT_KINDS + EAGER_KINDS + CAST_KINDS, max_steps=8))
def test_random_programs_run_eagerly_like_jax(program: Program):
    # every value an eager Array: dtypes and weak types promoted as JAX's, through operators too
    got = program.as_function(olax)(*INPUTS)
    want = program.as_function(jax.lax)(*INPUTS)
    scale = max([1.0] + [float(np.max(np.abs(w), initial=0.0)) for w in want
                         if np.issubdtype(np.asarray(w).dtype, np.floating)])
    assert_same_typed_values(got, want, rtol=RTOL_REDUCTION, atol=RTOL_REDUCTION * scale)
