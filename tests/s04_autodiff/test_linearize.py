"""linearize = jvp + partial eval: a linear jaxpr of linear primitives, residuals counted as
JAX's linearize counts them: what known work computed crosses, a constant the program wrote is
an inline literal."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from stages.s04_autodiff import custom_jvp, linearize

pytestmark = pytest.mark.oracle



def _scalars_and_arrays(values) -> tuple[int, int]:
    shapes = [np.shape(v) for v in values]
    return sum(s == () for s in shapes), sum(s != () for s in shapes)


def test_linear_jaxpr_holds_only_linear_primitives(case, ours, helpers, linear_primitives):
    f, args = helpers.dynamic(case, ours.lax, ours.jnp)
    _, f_jvp = linearize(f, *args)
    used = {eqn.primitive for eqn in f_jvp.jaxpr.eqns}
    assert used <= linear_primitives, used - linear_primitives


def test_residual_count_equals_jax_linearize(case, ours, theirs, helpers):
    f_ours, args = helpers.dynamic(case, ours.lax, ours.jnp)
    f_theirs, _ = helpers.dynamic(case, theirs.lax, theirs.jnp)
    _, f_jvp = linearize(f_ours, *args)
    _, their_f_jvp = theirs.linearize(f_theirs, *args)
    scalars, arrays = _scalars_and_arrays(f_jvp.residuals)
    their_scalars, their_arrays = _scalars_and_arrays(jax.tree_util.tree_leaves(their_f_jvp))
    assert arrays == their_arrays
    # Stage 2 folds a constant's conversion only while staging a jaxpr (as JAX's
    # DynamicJaxprTrace does), so scalars computed on the known side are residuals in both.
    assert scalars == their_scalars


CONSTANTS = {
    "x * np.array(2.)": (lambda lib: lambda x: lib.lax.mul(x, np.array(2.0, np.float32)),
                         np.float32(1.5)),
    "jnp.mean": (lambda lib: lib.jnp.mean, np.arange(4, dtype=np.float32)),
    "x * sin(2.)": (lambda lib: lambda x: lib.lax.mul(x, lib.lax.sin(np.float32(2.0))),
                    np.float32(1.5)),
}


@pytest.mark.parametrize("name", list(CONSTANTS))
def test_a_constant_the_program_wrote_is_a_literal_and_a_computed_one_a_residual(name, ours,
                                                                                  theirs):
    # a numpy constant, even a 0-d array, is inlined, and so is the count jnp.mean divides by
    # (jnp.mean is jitted in JAX, so the count is folded there); sin(2.) is known work: it
    # crosses. The same linear jaxpr as JAX's, constants and all.
    make, arg = CONSTANTS[name]
    _, f_jvp = linearize(make(ours), arg)
    _, their_f_jvp = theirs.linearize(make(theirs), arg)
    assert len(f_jvp.residuals) == len(jax.tree_util.tree_leaves(their_f_jvp))
    assert str(f_jvp.jaxpr) == str(theirs.make_jaxpr(their_f_jvp)(arg))


def test_linearized_function_computes_jax_linearizes_jvp(case, ours, theirs, helpers):
    f, args = helpers.dynamic(case, ours.lax, ours.jnp)
    f_theirs, _ = helpers.dynamic(case, theirs.lax, theirs.jnp)
    tangents = helpers.random_like_tree(args, np.random.default_rng(1))
    primals_out, f_jvp = linearize(f, *args)
    want_primals, their_f_jvp = theirs.linearize(f_theirs, *args)
    rtol = helpers.rtol_for(lambda *a: ours.jvp(f, a, tangents), *args)
    helpers.assert_trees_close(primals_out, want_primals, rtol=rtol)
    helpers.assert_trees_close(f_jvp(*tangents), their_f_jvp(*tangents), rtol=rtol)


def test_linear_jaxpr_of_sin_cos_prints_like_jax(ours, theirs):
    _, f_jvp = linearize(lambda x: ours.lax.sin(ours.lax.cos(x)), 1.0)
    _, their_f_jvp = theirs.linearize(lambda x: theirs.lax.sin(theirs.lax.cos(x)), 1.0)
    assert str(f_jvp.jaxpr) == str(theirs.make_jaxpr(their_f_jvp)(1.0))
    # the residuals are -d cos/dx's sin(1) and d sin/dy's cos(cos(1)), as JAX's
    np.testing.assert_allclose(f_jvp.residuals, [np.sin(1.0), np.cos(np.cos(1.0))], rtol=1e-6)


def test_input_residuals_are_forwarded_not_copied(ours):
    x = np.arange(3, dtype=np.float32)
    y = np.ones(3, np.float32)
    _, f_jvp = linearize(lambda x, y: ours.lax.mul(x, y), x, y)
    # both inputs are needed by the tangent x' y + x y'; they are the caller's arrays
    assert len(f_jvp.residuals) == 2
    assert {id(r) for r in f_jvp.residuals} == {id(x), id(y)}


def test_linearize_with_aux_returns_the_aux_primal(ours):
    out, f_jvp, aux = linearize(lambda x: (ours.lax.sin(x), ours.lax.cos(x)), 0.5, has_aux=True)
    np.testing.assert_allclose(aux, np.cos(0.5), rtol=1e-6)
    np.testing.assert_allclose(f_jvp(2.0), 2 * np.cos(0.5), rtol=1e-6)


def test_linearized_function_rejects_a_tangent_of_the_wrong_type(ours):
    _, f_jvp = linearize(ours.lax.sin, np.ones(3, np.float32))
    with pytest.raises(ValueError, match="linearized function called on tangent values "
                                         "inconsistent with the original primal values"):
        f_jvp(np.ones(2, np.float32))


def test_zero_output_tangents_are_not_in_the_linear_jaxpr(ours):
    out, f_jvp = linearize(lambda x: (ours.lax.sin(x), 3.0), 1.0)
    assert len(f_jvp.jaxpr.jaxpr.outvars) == 1
    assert f_jvp(1.0)[1] == 0.0


def _rounding_with_a_zero_derivative(cjvp, lax):
    @cjvp
    def f(x):
        return lax.round(x)

    # the tangent reads no input tangent: it is known when linearize splits the jvp
    f.defjvp(lambda p, t: (lax.round(p[0]), lax.mul(p[0], 0.0)))
    return lambda x: (lax.mul(x, 3.0), f(x), lax.sin(x))


def test_a_known_output_tangent_is_returned_between_the_linear_ones_as_in_jax(ours, theirs):
    x, t = np.arange(3, dtype=np.float32), np.full(3, 2.0, np.float32)
    primals_out, f_jvp = linearize(_rounding_with_a_zero_derivative(custom_jvp, ours.lax), x)
    want_primals, their_f_jvp = theirs.linearize(
        _rounding_with_a_zero_derivative(jax.custom_jvp, theirs.lax), x)
    np.testing.assert_allclose(primals_out, want_primals, rtol=1e-6)
    got, want = f_jvp(t), their_f_jvp(t)
    assert len(got) == len(want) == 3
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6)


@pytest.mark.parametrize("use_ours", [True, False], ids=["ours", "jax"])
def test_a_primal_output_that_reads_a_tangent_is_refused_like_jax(use_ours, ours, theirs):
    # a broken custom_jvp rule: its primal output adds the tangent, so it is not known
    ns = ours if use_ours else theirs
    cjvp = custom_jvp if use_ours else jax.custom_jvp

    @cjvp
    def f(x):
        return ns.lax.sin(x)

    f.defjvp(lambda p, t: (ns.lax.add(p[0], t[0]), t[0]))
    with pytest.raises(ValueError) as err:
        ns.linearize(f, np.float32(1.0))
    with pytest.raises(ValueError) as err_of_one:  # one unknown primal among known ones is enough
        ns.linearize(lambda x: (f(x), ns.lax.sin(x)), np.float32(1.0))
    assert str(err_of_one.value) == str(err.value)
    assert str(err.value) == (
        "Linearization failed to produce known values for all output primals. This is "
        "typically caused by attempting to differentiate a function uses an operation that "
        "does not support reverse-mode autodiff.")
