"""Why `sin(3.0)` is still an equation inside a trace: tracing records, it does not evaluate.

Inside make_jaxpr every primitive bound goes to the jaxpr-building trace, whatever its inputs,
so `sin 3.0:f32[]` is recorded like any other equation. Deciding what can run early is a
separate pass, partial evaluation: with every input known, the equation lands on the known
side; at top level (the eval trace as parent) it simply runs, and its result is a residual.
"""

from __future__ import annotations

import numpy as np
from jax._src import api_util as jax_api_util
from jax._src import core as jax_core
from jax._src import linear_util as jax_lu

from stages.s02_tracing import lax, linear_util, make_jaxpr
from stages.s03_partial_eval import PartialVal, partial_eval_jaxpr_nounits, trace_to_jaxpr_nounits


def _f(lax):
    return lambda x: lax.mul(x, lax.sin(3.0))


SIN_THEN_MUL = "{ lambda ; a:f32[]. let b:f32[] = sin 3.0:f32[]; c:f32[] = mul a b in (c,) }"


def test_tracing_records_sin_of_a_python_constant_as_an_equation(theirs):
    assert str(make_jaxpr(_f(lax))(1.0)) == SIN_THEN_MUL
    assert str(theirs.make_jaxpr(_f(theirs.lax))(1.0)) == SIN_THEN_MUL


def test_outside_any_trace_sin_of_a_constant_is_just_a_number():
    np.testing.assert_allclose(lax.sin(3.0), np.sin(np.float32(3.0)))


def test_with_everything_known_partial_eval_moves_it_to_the_known_side(theirs):
    closed = make_jaxpr(_f(lax))(1.0)
    known, unknown, out_unknowns, res_avals = partial_eval_jaxpr_nounits(closed, [False], False)
    assert str(known) == SIN_THEN_MUL
    assert str(unknown) == "{ lambda ; . let  in () }"
    assert out_unknowns == [False] and res_avals == []


def test_with_x_unknown_sin_3_is_known_work_and_its_result_a_residual(theirs):
    closed = make_jaxpr(_f(lax))(1.0)
    known, unknown, _, res_avals = partial_eval_jaxpr_nounits(closed, [True], False)
    j_known, j_unknown, _, j_res_avals = theirs.pe.partial_eval_jaxpr_nounits(
        theirs.make_jaxpr(_f(theirs.lax))(1.0), [True], False)
    assert str(known) == str(j_known) == "{ lambda ; . let a:f32[] = sin 3.0:f32[] in (a,) }"
    assert str(unknown) == str(j_unknown) == (
        "{ lambda ; a:f32[] b:f32[]. let c:f32[] = mul b a in (c,) }")
    assert len(res_avals) == len(j_res_avals) == 1


def test_at_top_level_partial_eval_runs_it_and_its_result_crosses_like_jaxs(theirs):
    weak_f32 = make_jaxpr(_f(lax))(1.0).in_avals[0]
    jaxpr, _, residuals = trace_to_jaxpr_nounits(
        linear_util.wrap_init(lambda x: [_f(lax)(x)]), [PartialVal.unknown(weak_f32)])

    f = _f(theirs.lax)
    j_jaxpr, _, j_residuals = theirs.pe.trace_to_jaxpr_nounits(
        jax_lu.wrap_init(lambda x: [f(x)], debug_info=jax_api_util.debug_info(
            "test", f, (1.0,), {})),
        [theirs.pe.PartialVal.unknown(jax_core.ShapedArray((), np.float32, weak_type=True))])
    # sin(3.0) ran on the eval trace; its result is an array, not a constant of the program,
    # so it crosses as a residual (JAX: a jax.Array is never inlined as a literal)
    assert str(jaxpr) == str(j_jaxpr) == (
        "{ lambda a:f32[]; b:f32[]. let c:f32[] = mul b a in (c,) }")
    np.testing.assert_allclose(residuals[0], np.sin(np.float32(3.0)))
    np.testing.assert_allclose(residuals[0], np.asarray(j_residuals[0]))
