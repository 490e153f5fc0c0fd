"""The trace-level form: PartialVal, JaxprTrace and trace_to_jaxpr_nounits (what stage 4's
linearize runs over a jvp), against JAX's own `pe.trace_to_jaxpr_nounits`."""

from __future__ import annotations

import numpy as np
import pytest
from jax._src import api_util as jax_api_util
from jax._src import core as jax_core
from jax._src import linear_util as jax_lu

from shared.testing import RTOL_ELEMENTWISE
from stages.s02_tracing import Array, ShapedArray, UnexpectedTracerError, core, lax
from stages.s02_tracing import linear_util as lu
from stages.s03_partial_eval import JaxprTrace, JaxprTracer, PartialVal, trace_to_jaxpr_nounits
from stages.s03_partial_eval import partial_eval as pe

F32_3 = ShapedArray((3,), np.float32)
X = np.linspace(0.0, 1.0, 3, dtype=np.float32)


def test_a_partial_val_is_a_value_or_an_aval_never_both():
    known, unknown = PartialVal.known(X), PartialVal.unknown(F32_3)
    assert known.is_known() and known.get_known() is X and known.get_aval() == F32_3
    assert not unknown.is_known() and unknown.get_known() is None and unknown.get_aval() == F32_3
    with pytest.raises(ValueError, match=r"a PartialVal is \(aval, None\) or \(None, value\)"):
        PartialVal((F32_3, X))


def _f(lax):
    return lambda x, y: [lax.add(lax.mul(lax.sin(x), y), lax.cos(x)), lax.exp(x)]


@pytest.mark.oracle
def test_top_level_split_runs_known_work_now_like_jaxs(theirs):
    jaxpr, out_pvals, residuals = trace_to_jaxpr_nounits(
        lu.wrap_init(_f(lax)), [PartialVal.known(X), PartialVal.unknown(F32_3)])

    f = _f(theirs.lax)
    dbg = jax_api_util.debug_info("test", f, (X, X), {})
    j_jaxpr, j_out_pvals, j_residuals = theirs.pe.trace_to_jaxpr_nounits(
        jax_lu.wrap_init(f, debug_info=dbg),
        [theirs.pe.PartialVal.known(X), theirs.pe.PartialVal.unknown(
            jax_core.ShapedArray((3,), np.float32))])

    # sin x and cos x were computed eagerly: they are the unknown jaxpr's constvars (residuals)
    assert str(jaxpr) == str(j_jaxpr) == (
        "{ lambda a:f32[3] b:f32[3]; c:f32[3]. let\n"
        "    d:f32[3] = mul a c\n"
        "    e:f32[3] = add d b\n"
        "  in (e,) }"
    )
    assert len(residuals) == len(j_residuals) == 2
    for r, jr in zip(residuals, j_residuals, strict=True):
        np.testing.assert_allclose(r, np.asarray(jr), rtol=RTOL_ELEMENTWISE)
    assert [p.is_known() for p in out_pvals] == [p.is_known() for p in j_out_pvals]
    np.testing.assert_allclose(out_pvals[1].get_known(), np.exp(X), rtol=RTOL_ELEMENTWISE)


def test_running_the_unknown_jaxpr_finishes_the_computation():
    y = np.float32([2.0, -1.0, 0.5])
    jaxpr, out_pvals, residuals = trace_to_jaxpr_nounits(
        lu.wrap_init(_f(lax)), [PartialVal.known(X), PartialVal.unknown(F32_3)])
    (out,) = core.eval_jaxpr(jaxpr, residuals, y)
    np.testing.assert_allclose(out, np.sin(X) * y + np.cos(X), rtol=RTOL_ELEMENTWISE)


def test_an_equation_with_every_input_known_returns_a_plain_value():
    seen = []

    def f(x, y):
        s = lax.sin(x)  # x known: runs now, on the parent (eval) trace
        p = lax.mul(s, y)  # y unknown: recorded
        seen.extend([s, p])
        return [p]

    trace_to_jaxpr_nounits(lu.wrap_init(f), [PartialVal.known(X), PartialVal.unknown(F32_3)])
    s, p = seen
    assert isinstance(s, Array) and not isinstance(s, core.Tracer)  # an eager Array
    assert isinstance(p, JaxprTracer) and not p.is_known()


@pytest.mark.parametrize("constant", [2.0, np.float32(2.0), np.array(2.0, np.float32)],
                         ids=["python-float", "numpy-scalar", "0d-numpy-array"])
def test_a_known_scalar_constant_is_inlined_but_a_computed_one_crosses(constant, theirs):
    def f(lax):
        return lambda c, y: [lax.mul(c, y), lax.mul(lax.neg(c), y)]

    f32 = ShapedArray((), np.float32)
    jaxpr, _, residuals = trace_to_jaxpr_nounits(
        lu.wrap_init(f(lax)), [PartialVal.known(constant), PartialVal.unknown(f32)])
    j_f = f(theirs.lax)
    j_jaxpr, _, _ = theirs.pe.trace_to_jaxpr_nounits(
        jax_lu.wrap_init(j_f, debug_info=jax_api_util.debug_info("test", j_f, (1.0, 1.0), {})),
        [theirs.pe.PartialVal.known(constant),
         theirs.pe.PartialVal.unknown(jax_core.ShapedArray((), np.float32))])
    # the constant itself is inlined; neg(constant), computed now, is a residual
    assert str(jaxpr) == str(j_jaxpr) == (
        "{ lambda a:f32[]; b:f32[]. let\n"
        "    c:f32[] = mul 2.0:f32[] b\n"
        "    d:f32[] = mul a b\n"
        "  in (c, d) }")
    np.testing.assert_array_equal(residuals, [np.float32(-2.0)])


def _two_outputs(core_module, lax_module):
    """A primitive with two results (x and -x), made with one library's core, and a function
    that binds it and uses each result."""
    split_p = core_module.Primitive("plus_minus")
    split_p.multiple_results = True
    split_p.def_impl(lambda x: [x, -x])
    split_p.def_abstract_eval(lambda aval: [aval, aval])
    return lambda x: [lax_module.mul(*split_p.bind(x)), lax_module.sin(split_p.bind(x)[1])]


@pytest.mark.oracle
def test_an_unknown_equation_with_two_results_gives_two_unknown_tracers_like_jaxs(theirs):
    jaxpr, out_pvals, _ = trace_to_jaxpr_nounits(lu.wrap_init(_two_outputs(core, lax)),
                                                 [PartialVal.unknown(F32_3)])
    f = _two_outputs(jax_core, theirs.lax)
    j_jaxpr, j_out_pvals, _ = theirs.pe.trace_to_jaxpr_nounits(
        jax_lu.wrap_init(f, debug_info=jax_api_util.debug_info("test", f, (X,), {})),
        [theirs.pe.PartialVal.unknown(jax_core.ShapedArray((3,), np.float32))])
    assert str(jaxpr) == str(j_jaxpr)
    assert "b:f32[3] c:f32[3] = plus_minus a" in str(jaxpr)
    assert [p.is_known() for p in out_pvals] == [p.is_known() for p in j_out_pvals] == [False] * 2


def test_instantiate_makes_a_known_output_a_residual_returned_by_the_jaxpr():
    jaxpr, out_pvals, residuals = trace_to_jaxpr_nounits(
        lu.wrap_init(lambda x: [lax.exp(x)]), [PartialVal.known(X)], instantiate=True)
    assert not out_pvals[0].is_known()
    assert str(jaxpr) == "{ lambda a:f32[3]; . let  in (a,) }"
    np.testing.assert_allclose(residuals[0], np.exp(X), rtol=RTOL_ELEMENTWISE)


def test_a_tracer_that_escapes_the_trace_fails_when_used():
    leaked = []

    def f(y):
        z = lax.sin(y)
        leaked.append(z)
        return [z]

    trace_to_jaxpr_nounits(lu.wrap_init(f), [PartialVal.unknown(F32_3)])
    with pytest.raises(UnexpectedTracerError,
                       match="intermediate value with type float32\\[3\\] wrapped in a "
                             "JaxprTracer to escape the scope of the transformation"):
        lax.cos(leaked[0])


def test_a_custom_partial_eval_rule_replaces_the_default_rule():
    twice_p = core.Primitive("twice")
    twice_p.def_impl(lambda x: 2 * x)
    twice_p.def_abstract_eval(lambda aval: aval)
    calls = []

    def rule(trace: JaxprTrace, x: JaxprTracer) -> JaxprTracer:
        calls.append(x.is_known())
        # stage the equation even though its input is known (a primitive may choose to)
        return trace.default_process_primitive(lax.mul_p, [trace.instantiate_const(x), 2.0], {})

    pe.custom_partial_eval_rules[twice_p] = rule
    try:
        jaxpr, out_pvals, residuals = trace_to_jaxpr_nounits(
            lu.wrap_init(lambda x: [twice_p.bind(x)]), [PartialVal.known(X)])
    finally:
        del pe.custom_partial_eval_rules[twice_p]
    assert calls == [True]
    assert str(jaxpr) == "{ lambda a:f32[3]; . let b:f32[3] = mul a 2.0:f32[] in (b,) }"
