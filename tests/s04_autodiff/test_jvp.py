"""Forward mode: jvp of the stage-2 corpus equals jax.jvp; symbolic zeros cost nothing."""

from __future__ import annotations

import numpy as np
import pytest

from stages.s02_tracing import core
from stages.s04_autodiff import ad_util

pytestmark = pytest.mark.oracle


def test_jvp_matches_jax_on_the_corpus(case, ours, theirs, helpers):
    f_ours, args = helpers.dynamic(case, ours.lax, ours.jnp)
    f_theirs, _ = helpers.dynamic(case, theirs.lax, theirs.jnp)
    tangents = helpers.random_like_tree(args, np.random.default_rng(0))
    primals_out, tangents_out = ours.jvp(f_ours, args, tangents)
    want_primals, want_tangents = theirs.jvp(f_theirs, args, tangents)
    rtol = helpers.rtol_for(lambda *a: ours.jvp(f_ours, a, tangents), *args)
    helpers.assert_trees_close(primals_out, want_primals, rtol=rtol)
    helpers.assert_trees_close(tangents_out, want_tangents, rtol=rtol)


def test_a_value_without_tangent_adds_no_tangent_equations(ours, theirs):
    # y is only a constant to the inner jvp: sin(y) has a Zero tangent, so no `cos y` appears
    def outer(jvp, lax):
        return lambda x, y: jvp(lambda x: lax.mul(lax.sin(y), x), (x,), (x,))

    got = ours.make_jaxpr(outer(ours.jvp, ours.lax))(1.0, 2.0)
    want = theirs.make_jaxpr(outer(theirs.jvp, theirs.lax))(1.0, 2.0)
    assert "cos" not in str(got)
    assert str(got) == str(want)


def test_a_primitive_without_jvp_rule_is_fine_when_its_inputs_have_no_tangent(ours):
    no_rule_p = core.Primitive("no_rule")
    no_rule_p.def_impl(lambda x: x * 3)
    no_rule_p.def_abstract_eval(lambda x: x)
    const = np.float32(2.0)
    out, tangent = ours.jvp(lambda x: ours.lax.mul(x, no_rule_p.bind(const)), (1.0,), (1.0,))
    assert float(out) == 6.0 and float(tangent) == 6.0


def test_zero_stays_symbolic_until_instantiated():
    z = ad_util.Zero(core.ShapedArray((2, 3), np.float32))
    assert ad_util.add_jaxvals(z, 5.0) == 5.0  # adding a Zero is free: no array is made
    assert np.array_equal(ad_util.instantiate(z), np.zeros((2, 3), np.float32))
    assert repr(z) == "Zero(float32[2,3])"


def test_jvp_over_pytrees_and_has_aux(ours, theirs, helpers):
    def f(lax):
        def fn(d):
            y = lax.mul(d["a"], lax.sin(d["b"]))
            return {"y": y, "both": (y, d["a"])}, lax.cos(d["a"])
        return fn

    primals = ({"a": np.float32(0.5), "b": np.arange(3, dtype=np.float32)},)
    tangents = ({"a": np.float32(1.0), "b": np.ones(3, np.float32)},)
    got = ours.jvp(f(ours.lax), primals, tangents, has_aux=True)
    want = theirs.jvp(f(theirs.lax), primals, tangents, has_aux=True)
    for g, w in zip(got, want, strict=True):
        helpers.assert_trees_close(g, w, rtol=helpers.RTOL_ELEMENTWISE)


def test_integer_inputs_and_outputs_have_float0_tangents(ours, theirs, helpers):
    def f(lax):
        return lambda x, i: (lax.mul(x, lax.convert_element_type(i, np.float32)), lax.add(i, 1))

    args = (np.float32(2.0), np.int32(3))
    tangents = (np.float32(1.0), np.zeros((), helpers.FLOAT0))
    got = ours.jvp(f(ours.lax), args, tangents)
    want = theirs.jvp(f(theirs.lax), args, tangents)
    helpers.assert_trees_close(got, want, rtol=helpers.RTOL_ELEMENTWISE)
    assert np.asarray(got[1][1]).dtype == helpers.FLOAT0


def test_python_control_flow_on_a_primal_comparison_works(ours, theirs):
    # a comparison has a zero tangent, so it runs on the parent trace and comes back concrete
    def f(lax):
        def fn(x):
            if lax.gt(x, 0.0):
                return lax.sin(x)
            return lax.cos(x)
        return fn

    for x in (1.0, -1.0):
        assert np.allclose(ours.jvp(f(ours.lax), (x,), (1.0,)),
                           theirs.jvp(f(theirs.lax), (x,), (1.0,)))
        assert np.allclose(ours.grad(f(ours.lax))(x), theirs.grad(f(theirs.lax))(x))


def test_nested_jvp_gives_the_second_derivative(ours):
    lax = ours.lax

    def df(x):
        return ours.jvp(lax.sin, (x,), (1.0,))[1]

    _, d2 = ours.jvp(df, (0.5,), (1.0,))
    np.testing.assert_allclose(d2, -np.sin(0.5), rtol=1e-6)


def test_clamp_tangent_follows_whichever_input_the_output_equals(ours, theirs, helpers):
    # the operand below, inside and above its bounds, and once equal to a bound (a tie: zero)
    lo = np.array([0.0, 0.0, 0.0, 1.0], np.float32)
    x = np.array([-1.0, 0.5, 3.0, 1.0], np.float32)
    hi = np.array([2.0, 2.0, 2.0, 2.0], np.float32)
    tangents = (np.full(4, 10.0, np.float32), np.ones(4, np.float32),
                np.full(4, 100.0, np.float32))
    got = ours.jvp(ours.lax.clamp, (lo, x, hi), tangents)
    want = theirs.jvp(theirs.lax.clamp, (lo, x, hi), tangents)
    helpers.assert_trees_close(got, want, rtol=helpers.RTOL_ELEMENTWISE)
    np.testing.assert_array_equal(got[1], [10.0, 1.0, 100.0, 0.0])
    # a scalar bound's tangent spreads over the operand's shape (jax.jvp fails here: its rule
    # selects between the scalar tangent and an operand-shaped zero)
    _, scalar = ours.jvp(lambda x, lo: ours.lax.clamp(lo, x, np.float32(2)),
                         (x, np.float32(0)), (np.ones(4, np.float32), np.float32(5)))
    np.testing.assert_array_equal(scalar, [5.0, 1.0, 0.0, 1.0])


@pytest.mark.parametrize("constant", ["y", "x", "neither"])
def test_mul_tangent_keeps_out_dtype_when_one_tangent_is_zero(constant, ours, theirs):
    # a constant operand (Zero tangent) leaves one term, which must still widen to out_dtype, as
    # in JAX; with both tangents, each of the two terms must
    def f(jvp, lax):
        c = np.float16(3.0)

        def g(x):
            if constant == "y":
                return jvp(lambda x: lax.mul(x, c, out_dtype=np.float32), (x,), (x,))
            if constant == "x":
                return jvp(lambda x: lax.mul(c, x, out_dtype=np.float32), (x,), (x,))
            return jvp(lambda x, y: lax.mul(x, y, out_dtype=np.float32), (x, c),
                       (x, np.float16(0)))
        return g

    got = ours.make_jaxpr(f(ours.jvp, ours.lax))(np.float16(2.0))
    want = theirs.make_jaxpr(f(theirs.jvp, theirs.lax))(np.float16(2.0))
    assert str(got) == str(want)
    _, tangent = f(ours.jvp, ours.lax)(np.float16(2.0))
    assert np.asarray(tangent).dtype == np.float32 and float(tangent) == 6.0
