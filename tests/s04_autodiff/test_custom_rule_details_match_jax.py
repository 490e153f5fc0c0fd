"""custom_jvp's defjvps, the float0 types in autodiff's messages, and custom_vjp's
optimize_remat flag, each against JAX (the oracle)."""

from __future__ import annotations

import functools
from typing import Any

import jax
import numpy as np
import pytest
from jax._src import ad_util as jax_ad_util

import stages.s02_tracing as s02
import stages.s04_autodiff as s04
from stages.s01_pytrees import tree_flatten

pytestmark = pytest.mark.oracle

F32 = np.float32


def _error(call: Any) -> tuple[str, str]:
    with pytest.raises(Exception) as info:
        call()
    return type(info.value).__name__, str(info.value)


# ------------------------------------------------------------------ defjvps


def _product_with_rules(lib: Any, first: bool, second: bool) -> Any:
    @lib.custom_jvp
    def f(x, y):
        return x * y

    f.defjvps((lambda g, ans, x, y: g * y) if first else None,
              (lambda g, ans, x, y: g * x) if second else None)
    return f


@pytest.mark.parametrize("first, second", [(True, True), (True, False), (False, True)])
def test_defjvps_sums_the_rules_given_as_jax_does(first, second):
    # JAX starts the sum from symbolic zeros, so no `add_any` of a 0.0 is staged
    def jaxpr(lib, make_jaxpr):
        f = _product_with_rules(lib, first, second)
        return str(make_jaxpr(lambda a, b: lib.jvp(f, (a, b), (a, b)))(F32(2.), F32(3.)))

    assert jaxpr(s04, s02.make_jaxpr) == jaxpr(jax, jax.make_jaxpr)


def test_defjvps_over_a_pytree_output_stages_what_jax_stages():
    def jaxpr(lib, make_jaxpr):
        @lib.custom_jvp
        def f(x, y):
            return {"a": x * y, "b": (x, y)}

        f.defjvps(lambda g, ans, x, y: {"a": g * y, "b": (g, 0. * g)},
                  lambda g, ans, x, y: {"a": g * x, "b": (0. * g, g)})
        out = lib.jvp(f, (F32(2.), F32(3.)), (F32(1.), F32(5.)))
        return out, str(make_jaxpr(lambda a, b: lib.jvp(f, (a, b), (a, b)))(F32(2.), F32(3.)))

    (ours, ours_jaxpr), (theirs, their_jaxpr) = jaxpr(s04, s02.make_jaxpr), jaxpr(
        jax, jax.make_jaxpr)
    assert ours_jaxpr == their_jaxpr
    for o, t in zip(jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs),
                    strict=True):
        assert float(o) == float(t)


def test_defjvps_with_no_rule_at_all_fails_as_in_jax():
    # every contribution is a symbolic Zero: a pytree with no leaves, not a tangent
    def call(lib):
        return lambda: lib.jvp(_product_with_rules(lib, False, False), (F32(2.), F32(3.)),
                               (F32(1.), F32(1.)))

    assert _error(call(s04)) == _error(call(jax))
    assert "CustomNode(Zero[float32[]], [])" in _error(call(s04))[1]


def test_a_zero_is_a_pytree_without_leaves_as_in_jax():
    zero = s04.ad_util.Zero(s02.ShapedArray((3,), np.float32, True))
    their_zero = jax_ad_util.Zero(jax.core.ShapedArray((3,), np.float32, weak_type=True))
    leaves, tree = tree_flatten(zero)
    assert leaves == [] and str(tree) == str(jax.tree_util.tree_structure(their_zero))


# ------------------------------------------------------------------ float0 in messages


def test_a_custom_jvp_rule_with_a_float_tangent_for_an_int_output_names_float0():
    def call(lib, jnp):
        @lib.custom_jvp
        def f(x):
            return (x * 2).astype(jnp.int32)

        f.defjvp(lambda p, t: (f(p[0]), t[0]))
        return lambda: lib.jvp(f, (F32(2.),), (F32(1.),))

    ours, theirs = _error(call(s04, s02.numpy)), _error(call(jax, jax.numpy))
    assert ours == theirs
    assert "Expected float0[] (tangent type of int32[])" in ours[1]


def test_a_custom_jvp_rule_with_two_bad_tangents_lists_them_as_jax_does():
    def call(lib, jnp):
        @lib.custom_jvp
        def f(x):
            return x, (x * 2).astype(jnp.int32)

        f.defjvp(lambda p, t: (f(p[0]), (t[0].astype(jnp.float16), t[0])))
        return lambda: lib.jvp(f, (F32(2.),), (F32(1.),))

    ours, theirs = _error(call(s04, s02.numpy)), _error(call(jax, jax.numpy))
    assert ours == theirs
    assert "expecting tangent float0[]" in ours[1]


@pytest.mark.parametrize("primal, tangent", [
    (2, F32(1.)),                                   # expected ~float0[]: the weak int's
    (np.int32(2), np.zeros(2, jax.dtypes.float0)),  # a float0 tangent of the wrong shape
    (np.int32(2), 1.0),                             # a weak float tangent
])
def test_a_linearized_function_given_a_bad_tangent_prints_float0_as_jax(primal, tangent):
    def call(lib):
        _, f_jvp = lib.linearize(lambda x, n: x * n, F32(2.), primal)
        return lambda: f_jvp(F32(1.), tangent)

    ours, theirs = _error(call(s04)), _error(call(jax))
    assert ours == theirs
    assert "void" not in ours[1]


# ------------------------------------------------------------------ optimize_remat


def test_custom_vjp_accepts_optimize_remat_and_gives_jax_values():
    def grads(lib, jnp):
        @lib.custom_vjp
        def f(x):
            return jnp.sin(x)

        f.defvjp(lambda x: (jnp.sin(x), jnp.cos(x)), lambda c, g: (c * g,),
                 optimize_remat=True)
        xs = np.linspace(0.1, 1.0, 4, dtype=F32)
        return lib.grad(lambda x: lib.checkpoint(f)(x).sum())(xs)

    np.testing.assert_allclose(grads(s04, s02.numpy), grads(jax, jax.numpy), rtol=1e-6)


def test_optimize_remat_with_symbolic_zeros_is_refused_as_in_jax():
    def call(lib):
        f = lib.custom_vjp(lambda x: x)
        return lambda: f.defvjp(lambda x: (x, None), lambda r, g: (g,), symbolic_zeros=True,
                                optimize_remat=True)

    assert _error(call(s04)) == _error(call(jax)) == (
        "NotImplementedError", "remat optimization for custom_vjp does not support symbolic zeros")


def _keyword_only(a, *, b=2.0):
    return a * b


def _var_keywords(a, **kwargs):
    return a * kwargs.get("b", 2.0)


def _two(a, b):
    return a * b


@pytest.mark.parametrize("kind", ["custom_jvp", "custom_vjp"])
@pytest.mark.parametrize("fun", [_keyword_only, _var_keywords, functools.partial(_two)],
                         ids=["keyword_only", "var_keywords", "partial"])
def test_a_keyword_with_no_position_is_refused_not_dropped_as_jax(kind, fun):
    # the call primitives take positions: a keyword-only argument, one caught by **kwargs, or
    # any keyword of a partial (whose signature JAX treats as opaque) has none
    def call(lib):
        wrapped = getattr(lib, kind)(fun)
        if kind == "custom_jvp":
            wrapped.defjvp(lambda p, t: (fun(*p), t[0]))
        else:
            wrapped.defvjp(lambda *a: (fun(*a), None), lambda r, ct: (ct,))
        return wrapped(F32(1.5), b=F32(0.5))

    ours, theirs = _error(lambda: call(s04)), _error(lambda: call(jax))
    assert ours == theirs
    assert "could not be resolved to positions: b" in ours[1]
