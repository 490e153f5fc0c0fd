"""Random programs (shared/random_programs.py), lowered by us and run by jaxlib, compute what
eval_jaxpr computes on the same jaxpr; and their text is the text jax.jit lowers them to.

Every kind of step is drawn, integer ones included (their edge cases: x / 0, MIN / -1, shifts
past 31, which StableHLO defines as XLA does and stage 2's impls follow). The inputs are the
ones stage 2 uses: O(1) floats, so no intermediate becomes subnormal, which XLA on CPU would
flush to zero where numpy keeps it. Sums and dots may add in another order than numpy's.
"""

from __future__ import annotations

import jax
import numpy as np
from hypothesis import HealthCheck, given, settings

from shared.random_programs import ALL_KINDS, INT_KINDS, Program, example_inputs, programs
from shared.testing import RTOL_REDUCTION
from shared.xla_runner import run_text
from stages.s02_tracing import core
from stages.s02_tracing import lax as olax
from stages.s02_tracing import partial_eval as pe

from .conftest import lower_with_args

INPUTS = example_inputs(seed=2, with_int=True)


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(programs(ALL_KINDS + INT_KINDS, max_steps=8))
def test_random_programs_run_by_jaxlib_as_eval_jaxpr_evaluates_them(program: Program):
    f = program.as_function(olax)
    closed, flat, out_tree = pe.trace_to_jaxpr(f, INPUTS, {}, None)
    text, kept = lower_with_args(closed, flat, "f", out_tree)
    assert text == jax.jit(program.as_function(jax.lax)).lower(*INPUTS).as_text()
    got = run_text(text, kept)
    want = core.eval_jaxpr(closed.jaxpr, closed.consts, *flat)
    for g, w, v in zip(got, want, closed.jaxpr.outvars, strict=True):
        w = np.asarray(w, v.aval.dtype)  # a weak scalar passed through is a Python float
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        if not np.issubdtype(w.dtype, np.floating):
            np.testing.assert_array_equal(g, w)  # integer ops are exact: wraparound included
            continue
        scale = max(1.0, float(np.max(np.abs(w), initial=0.0)))
        np.testing.assert_allclose(g, w, rtol=RTOL_REDUCTION, atol=RTOL_REDUCTION * scale)
