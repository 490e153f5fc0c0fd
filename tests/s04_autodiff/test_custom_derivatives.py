"""custom_jvp and custom_vjp: staged as JAX stages them, differentiated by their own rules."""

from __future__ import annotations

import functools

import jax
import numpy as np
import pytest

from stages.s02_tracing import eval_jaxpr, make_jaxpr
from stages.s02_tracing import lax as olax
from stages.s04_autodiff import (
    custom_jvp,
    custom_vjp,
    grad,
    jvp,
    linear_transpose,
    linearize,
    vjp,
)

pytestmark = pytest.mark.oracle


def _custom_jvp_f(cj, lax):
    @cj
    def f(x):
        return lax.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        return f(primals[0]), lax.mul(100.0, tangents[0])

    return f


def _custom_vjp_g(cv, lax):
    @cv
    def g(x):
        return lax.sin(x)

    def g_fwd(x):
        return g(x), lax.cos(x)

    def g_bwd(res, ct):
        return (lax.mul(ct, 7.0),)

    g.defvjp(g_fwd, g_bwd)
    return g


def test_custom_jvp_is_one_equation_printed_like_jax():
    f, their_f = _custom_jvp_f(custom_jvp, olax), _custom_jvp_f(jax.custom_jvp, jax.lax)
    assert str(make_jaxpr(f)(1.0)) == str(jax.make_jaxpr(their_f)(1.0))
    assert "custom_jvp_call[\n      name=f" in str(make_jaxpr(f)(1.0))


def test_custom_jvp_rule_replaces_differentiating_the_body():
    f = _custom_jvp_f(custom_jvp, olax)
    np.testing.assert_allclose(f(1.0), np.sin(1.0), rtol=1e-6)  # eagerly: just the function
    assert grad(f)(1.0) == 100.0
    assert jvp(f, (1.0,), (2.0,))[1] == 200.0
    their_f = _custom_jvp_f(jax.custom_jvp, jax.lax)
    assert str(make_jaxpr(grad(f))(1.0)) == str(jax.make_jaxpr(jax.grad(their_f))(1.0))


def test_custom_vjp_is_one_equation_printed_like_jax():
    g, their_g = _custom_vjp_g(custom_vjp, olax), _custom_vjp_g(jax.custom_vjp, jax.lax)
    assert str(make_jaxpr(g)(1.0)) == str(jax.make_jaxpr(their_g)(1.0))


def test_custom_vjp_bwd_is_the_transpose_of_custom_lin():
    g, their_g = _custom_vjp_g(custom_vjp, olax), _custom_vjp_g(jax.custom_vjp, jax.lax)
    assert grad(g)(1.0) == 7.0
    assert str(make_jaxpr(grad(g))(1.0)) == str(jax.make_jaxpr(jax.grad(their_g))(1.0))
    _, f_jvp = linearize(g, 1.0)
    _, their_f_jvp = jax.linearize(their_g, 1.0)
    assert str(f_jvp.jaxpr) == str(jax.make_jaxpr(their_f_jvp)(1.0))


def _custom_vjp_with_an_int_output(cv, lax):
    @cv
    def g(x):
        return lax.sin(x), lax.convert_element_type(lax.floor(x), np.int32)

    def g_fwd(x):
        return g(x), lax.cos(x)

    def g_bwd(res, cts):
        ct, _ = cts  # the integer output's cotangent is a float0 zero
        return (lax.mul(ct, res),)

    g.defvjp(g_fwd, g_bwd)
    return g


def test_custom_lin_outputs_are_tangent_avals_float0_for_an_int_output(helpers):
    g = _custom_vjp_with_an_int_output(custom_vjp, olax)
    their_g = _custom_vjp_with_an_int_output(jax.custom_vjp, jax.lax)
    _, f_jvp = linearize(g, 1.5)
    _, their_f_jvp = jax.linearize(their_g, 1.5)
    (eqn,) = f_jvp.jaxpr.eqns
    (their_eqn,) = jax.make_jaxpr(their_f_jvp)(1.5).eqns
    assert eqn.primitive.name == their_eqn.primitive.name == "custom_lin"
    assert [(v.aval.shape, np.dtype(v.aval.dtype)) for v in eqn.outvars] == \
        [(v.aval.shape, np.dtype(v.aval.dtype)) for v in their_eqn.outvars]
    helpers.assert_trees_close(grad(lambda x: g(x)[0])(1.5),
                               jax.grad(lambda x: their_g(x)[0])(1.5), rtol=1e-6)


def test_defjvps_sums_one_rule_per_argument(helpers):
    def make(cj, lax):
        @cj
        def f(x, y):
            return lax.mul(lax.sin(x), y)

        f.defjvps(lambda g, ans, x, y: lax.mul(lax.mul(lax.cos(x), g), y),
                  lambda g, ans, x, y: lax.mul(lax.sin(x), g))
        return f

    args = (0.5, np.float32(2.0))
    helpers.assert_trees_close(grad(make(custom_jvp, olax), (0, 1))(*args),
                               jax.grad(make(jax.custom_jvp, jax.lax), (0, 1))(*args),
                               rtol=helpers.RTOL_ELEMENTWISE)


def test_nondiff_argnums(helpers):
    def make_jvp(cj, lax):
        @functools.partial(cj, nondiff_argnums=(0,))
        def scale(k, x):
            return lax.mul(x, float(k))

        @scale.defjvp
        def scale_jvp(k, primals, tangents):
            return scale(k, primals[0]), lax.mul(tangents[0], float(10 * k))

        return scale

    def make_vjp(cv, lax):
        @functools.partial(cv, nondiff_argnums=(1,))
        def power(x, n):
            return lax.integer_pow(x, n)

        power.defvjp(lambda x, n: (power(x, n), x),
                     lambda n, x, ct: (lax.mul(ct, lax.mul(float(n), lax.integer_pow(x, n - 1))),))
        return power

    assert grad(lambda x: make_jvp(custom_jvp, olax)(3, x))(1.0) == 30.0
    helpers.assert_trees_close(
        grad(lambda x: make_vjp(custom_vjp, olax)(x, 3))(2.0),
        jax.grad(lambda x: make_vjp(jax.custom_vjp, jax.lax)(x, 3))(2.0),
        rtol=helpers.RTOL_ELEMENTWISE)


def _scale_by_nondiff(cj):
    @functools.partial(cj, nondiff_argnums=(0,))
    def f(s, x):
        return s * x

    @f.defjvp
    def f_jvp(s, primals, tangents):
        return f(s, primals[0]), s * tangents[0] * 7.0

    return f


def test_a_traced_nondiff_argument_of_a_custom_jvp_is_a_constant_of_its_rule(helpers):
    # JAX stops its gradient first: the rule sees the value, and no tracer escapes
    from stages.s05_vmap import vmap
    from stages.s07_caches import jit

    ours, theirs = _scale_by_nondiff(custom_jvp), _scale_by_nondiff(jax.custom_jvp)
    for o, t in [(grad, jax.grad), (lambda f: jit(grad(f)), lambda f: jax.jit(jax.grad(f)))]:
        helpers.assert_trees_close(o(lambda a: ours(a, a))(2.0), t(lambda a: theirs(a, a))(2.0),
                                   rtol=helpers.RTOL_ELEMENTWISE)
    x = np.arange(3, dtype=np.float32)
    helpers.assert_trees_close(vmap(grad(lambda a: ours(a, a)))(x),
                               jax.vmap(jax.grad(lambda a: theirs(a, a)))(x),
                               rtol=helpers.RTOL_ELEMENTWISE)


def _nondiff_custom_vjp(cv):
    @functools.partial(cv, nondiff_argnums=(0,))
    def g(s, x):
        return s * x

    g.defvjp(lambda s, x: (g(s, x), None), lambda s, res, ct: (s * ct * 7.0,))
    return g


@pytest.mark.parametrize("how", ["jit", "grad", "jit_of_grad"])
def test_a_traced_nondiff_argument_of_a_custom_vjp_raises_jaxs_error(how):
    from stages.s07_caches import jit

    def call(g, jit, grad):
        if how == "jit":
            return jit(lambda s: g(s, 2.0))(3.0)
        if how == "grad":
            return grad(lambda s: g(s, 2.0))(3.0)
        return jit(grad(g, 1))(3.0, 2.0)

    with pytest.raises(jax.errors.UnexpectedTracerError) as theirs:
        call(_nondiff_custom_vjp(jax.custom_vjp), jax.jit, jax.grad)
    from stages.s02_tracing.errors import UnexpectedTracerError
    with pytest.raises(UnexpectedTracerError) as ours:
        call(_nondiff_custom_vjp(custom_vjp), jit, grad)
    assert str(ours.value) == str(theirs.value).split("\n--------------------")[0]


@pytest.mark.parametrize("which", ["custom_jvp", "custom_vjp"])
def test_nondiff_argnames_name_positions_as_jax(which):
    def f(x, n, *, k=1):
        return x

    for names in [("n",), ("n", "x"), ("k",)]:
        ours = {"custom_jvp": custom_jvp, "custom_vjp": custom_vjp}[which]
        theirs = getattr(jax, which)
        assert (ours(f, nondiff_argnames=names).nondiff_argnums
                == theirs(f, nondiff_argnames=names).nondiff_argnums)
    assert (ours(f, nondiff_argnums=(1,), nondiff_argnames=("x",)).nondiff_argnums
            == theirs(f, nondiff_argnums=(1,), nondiff_argnames=("x",)).nondiff_argnums)


def test_defjvps_refuses_nondiff_argnums_as_jax():
    with pytest.raises(TypeError) as theirs:
        jax.custom_jvp(lambda n, x: x, nondiff_argnums=(0,)).defjvps(None)
    with pytest.raises(TypeError) as ours:
        custom_jvp(lambda n, x: x, nondiff_argnums=(0,)).defjvps(None)
    assert str(ours.value) == str(theirs.value)


def test_custom_vjp_over_pytrees_with_a_none_cotangent(helpers):
    def make(cv, lax):
        @cv
        def f(d, y):
            return {"out": lax.mul(d["a"], y)}

        f.defvjp(lambda d, y: (f(d, y), (d["a"], y)),
                 lambda res, ct: ({"a": lax.mul(ct["out"], res[1])}, None))
        return f

    args = ({"a": np.float32(3.0)}, np.float32(4.0))
    got = grad(lambda d, y: make(custom_vjp, olax)(d, y)["out"], (0, 1))(*args)
    want = jax.grad(lambda d, y: make(jax.custom_vjp, jax.lax)(d, y)["out"], (0, 1))(*args)
    helpers.assert_trees_close(got, want, rtol=helpers.RTOL_ELEMENTWISE)
    assert got[1] == 0.0  # None means a zero cotangent


def test_a_staged_custom_function_keeps_its_rule():
    f, g = _custom_jvp_f(custom_jvp, olax), _custom_vjp_g(custom_vjp, olax)
    closed = make_jaxpr(lambda x: olax.add(f(x), g(x)))(1.0)

    def run(x):
        return eval_jaxpr(closed.jaxpr, closed.consts, x)[0]

    assert grad(run)(1.0) == 107.0
    out, f_vjp = vjp(run, 1.0)
    assert f_vjp(np.float32(1.0))[0] == 107.0


def test_grad_of_grad_through_a_custom_jvp(helpers):
    def make(cj, lax):
        @cj
        def softplus(x):
            return lax.log1p(lax.exp(x))

        softplus.defjvp(lambda p, t: (softplus(p[0]), lax.mul(lax.logistic(p[0]), t[0])))
        return softplus

    got = grad(grad(make(custom_jvp, olax)))(0.3)
    want = jax.grad(jax.grad(make(jax.custom_jvp, jax.lax)))(0.3)
    helpers.assert_trees_close(got, want, rtol=helpers.RTOL_ELEMENTWISE)


def test_custom_functions_need_their_rules_defined():
    @custom_jvp
    def f(x):
        return x

    with pytest.raises(AttributeError, match="No JVP defined for custom_jvp function f using "
                                             "defjvp."):
        f(1.0)

    @custom_vjp
    def g(x):
        return x

    with pytest.raises(AttributeError, match="No VJP defined for custom_vjp function g using "
                                             "defvjp."):
        g(1.0)


def test_linear_transpose_of_a_custom_jvp_function_transposes_its_body(helpers):
    def make(cj, lax):
        @cj
        def f(x, y):
            return lax.sub(lax.mul(x, 2.0), lax.reduce_sum(y, (0,)))

        f.defjvp(lambda p, t: (f(*p), f(*t)))
        return f

    args = (np.float32(1.0), np.ones(3, np.float32))
    got = linear_transpose(make(custom_jvp, olax), *args)(np.float32(1.5))
    want = jax.linear_transpose(make(jax.custom_jvp, jax.lax), *args)(np.float32(1.5))
    helpers.assert_trees_close(got, want, rtol=helpers.RTOL_ELEMENTWISE)
