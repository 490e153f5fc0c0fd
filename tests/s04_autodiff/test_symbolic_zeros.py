"""symbolic_zeros=True for custom rules, against JAX: custom_jvp's rule sees SymbolicZero where a
tangent is zero; custom_vjp's fwd sees CustomVJPPrimal(value, perturbed) and its bwd SymbolicZero
where a cotangent is zero, and may answer None or a SymbolicZero. The derivatives agree."""

from __future__ import annotations

from types import SimpleNamespace

import jax
import jax.custom_derivatives
import numpy as np
import pytest

import stages.s02_tracing as s02
import stages.s04_autodiff as s04
import stages.s05_vmap as s05
from shared.testing import assert_same_typed_values
from stages.s04_autodiff import custom_derivatives as ocd
from stages.s04_autodiff.ad_util import SymbolicZero

OURS = SimpleNamespace(custom_jvp=s04.custom_jvp, jvp=s04.jvp, grad=s04.grad, zero=SymbolicZero,
                       vmap=s05.vmap)
THEIRS = SimpleNamespace(custom_jvp=jax.custom_jvp, jvp=jax.jvp, grad=jax.grad,
                         zero=jax.custom_derivatives.SymbolicZero, vmap=jax.vmap)


def _build(ns, seen):
    @ns.custom_jvp
    def f(x, y, n):
        return x * y * n

    def f_jvp(primals, tangents):
        x, y, n = primals
        tx, ty, tn = tangents
        seen.append(tuple((type(t).__name__ if isinstance(t, ns.zero) else "array", repr(t)
                           if isinstance(t, ns.zero) else None, np.shape(t), str(t.dtype))
                          for t in (tx, ty, tn)))
        out = x * y * n
        if isinstance(tx, ns.zero) and isinstance(ty, ns.zero):
            return out, tx
        t = 0.0
        if not isinstance(tx, ns.zero):
            t = t + tx * y * n
        if not isinstance(ty, ns.zero):
            t = t + x * ty * n
        return out, t
    f.defjvp(f_jvp, symbolic_zeros=True)
    return f


X, Y = np.float32(2.0), np.float32(3.0)
CASES = {
    "jvp_in_x": lambda ns, f: ns.jvp(lambda x: f(x, Y, 4), (X,), (np.float32(1.0),)),
    "jvp_in_both": lambda ns, f: ns.jvp(lambda x, y: f(x, y, 4), (X, Y),
                                        (np.float32(1.0), np.float32(0.5))),
    "grad_in_y": lambda ns, f: ns.grad(lambda y: f(X, y, 4))(Y),
    "jvp_of_nothing_perturbed_inside": lambda ns, f: ns.jvp(
        lambda x: f(x, Y, 4) + f(X, Y, 4), (X,), (np.float32(1.0),)),
    # a batched argument nobody differentiates: its SymbolicZero has no batch axis
    "grad_of_vmap_over_an_unperturbed_argument": lambda ns, f: ns.grad(
        lambda y: ns.vmap(lambda x: f(x, y, 4))(np.arange(3, dtype=np.float32)).sum())(Y),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_symbolic_zeros_reach_the_rule_as_in_jax(name):
    seen_ours, seen_theirs = [], []
    ours = CASES[name](OURS, _build(OURS, seen_ours))
    theirs = CASES[name](THEIRS, _build(THEIRS, seen_theirs))
    np.testing.assert_allclose(np.asarray(ours, dtype=np.float32),
                               np.asarray(theirs, dtype=np.float32))
    assert seen_ours == seen_theirs


def test_a_rule_answering_with_a_symbolic_zero_gives_a_zero_tangent():
    def run(ns):
        @ns.custom_jvp
        def g(x):
            return x * 2.0
        g.defjvp(lambda p, t: (g(*p), ns.zero(t[0].aval) if hasattr(t[0], "aval") and
                               isinstance(t[0], ns.zero) else t[0] * 0.0), symbolic_zeros=True)
        return ns.jvp(lambda x: g(x) + x, (X,), (np.float32(1.0),))
    assert [float(v) for v in run(OURS)] == [float(v) for v in run(THEIRS)]


# ------------------------------------------------------------------ custom_vjp


VJP_OURS = SimpleNamespace(custom_vjp=s04.custom_vjp, jvp=s04.jvp, grad=s04.grad, vjp=s04.vjp,
                           vmap=s05.vmap, zero=SymbolicZero, make_jaxpr=s02.make_jaxpr,
                           primal=ocd.CustomVJPPrimal,
                           values=ocd.custom_vjp_primal_tree_values)
VJP_THEIRS = SimpleNamespace(custom_vjp=jax.custom_vjp, jvp=jax.jvp, grad=jax.grad,
                             vjp=jax.vjp, vmap=jax.vmap, zero=jax.custom_derivatives.SymbolicZero,
                             make_jaxpr=jax.make_jaxpr,
                             primal=jax.custom_derivatives.CustomVJPPrimal,
                             values=jax.custom_derivatives.custom_vjp_primal_tree_values)


def _kind(ns, x):
    return "SymbolicZero" if isinstance(x, ns.zero) else "array"


def _build_vjp(ns, seen):
    """f(x, y) = (x * y, x + y); fwd records what is perturbed, bwd which cotangents are zero
    and answers None or a SymbolicZero where it can."""
    @ns.custom_vjp
    def f(x, y):
        return x * y, x + y

    def f_fwd(x, y):
        seen.append(("fwd", type(x) is ns.primal, x.perturbed, type(y) is ns.primal,
                     y.perturbed))
        return f(x.value, y.value), ns.values((x, y))

    def f_bwd(res, cts):
        x, y = res
        c_mul, c_add = cts
        seen.append(("bwd", _kind(ns, c_mul), _kind(ns, c_add)))
        if isinstance(c_mul, ns.zero) and isinstance(c_add, ns.zero):
            return None, None
        if isinstance(c_mul, ns.zero):
            return c_add, c_add
        if isinstance(c_add, ns.zero):
            return c_mul * y, c_mul * x
        return c_mul * y + c_add, c_mul * x + c_add
    f.defvjp(f_fwd, f_bwd, symbolic_zeros=True)
    return f


XS = np.arange(1.0, 4.0, dtype=np.float32)
VJP_CASES = {
    "grad_of_the_product_in_x": lambda ns, f: ns.grad(lambda x: f(x, Y)[0])(X),
    "grad_of_the_sum_in_y": lambda ns, f: ns.grad(lambda y: f(X, y)[1])(Y),
    "grad_of_both_in_both": lambda ns, f: ns.grad(
        lambda x, y: f(x, y)[0] + 2.0 * f(x, y)[1], argnums=(0, 1))(X, Y),
    "vjp_with_a_zero_cotangent": lambda ns, f: ns.vjp(lambda x: f(x, Y), X)[1](
        (np.float32(1.0), np.float32(0.0))),
    "vmap_of_grad": lambda ns, f: ns.vmap(ns.grad(lambda x: f(x, Y)[0]))(XS),
    "grad_of_vmap": lambda ns, f: ns.grad(lambda x: ns.vmap(lambda a: f(a, Y)[1])(x).sum())(XS),
    "no_derivative": lambda ns, f: f(X, Y),
}


@pytest.mark.parametrize("name", sorted(VJP_CASES))
def test_custom_vjp_symbolic_zeros_reach_fwd_and_bwd_as_in_jax(name):
    seen_ours, seen_theirs = [], []
    ours = VJP_CASES[name](VJP_OURS, _build_vjp(VJP_OURS, seen_ours))
    theirs = VJP_CASES[name](VJP_THEIRS, _build_vjp(VJP_THEIRS, seen_theirs))
    assert_same_typed_values(ours, theirs)
    assert sorted(set(seen_ours)) == sorted(set(seen_theirs))


def test_the_grad_jaxpr_of_a_symbolic_zeros_custom_vjp_prints_as_jax():
    def run(ns):
        f = _build_vjp(ns, [])
        return str(ns.make_jaxpr(ns.grad(lambda x: f(x, Y)[0]))(X))
    assert run(VJP_OURS) == run(VJP_THEIRS)


def test_forward_mode_through_a_symbolic_zeros_custom_vjp_fails_as_in_jax():
    def run(ns):
        f = _build_vjp(ns, [])
        return ns.jvp(lambda x: f(x, Y)[0], (X,), (np.float32(1.0),))
    with pytest.raises(TypeError) as theirs:
        run(VJP_THEIRS)
    with pytest.raises(TypeError) as ours:
        run(VJP_OURS)
    assert str(ours.value) == str(theirs.value)


def _bwd_answering(ns, answer):
    @ns.custom_vjp
    def g(x, y):
        return x * y

    def g_fwd(x, y):
        return g(x.value, y.value), (x.value, y.value)

    g.defvjp(g_fwd, lambda res, ct: answer(ns, res, ct), symbolic_zeros=True)
    return g


def _scalar_aval(ns, shape=()):
    aval_type = s02.core.ShapedArray if ns is VJP_OURS else jax.core.ShapedArray
    return aval_type(shape, np.dtype(np.float32))


@pytest.mark.parametrize("answer", ["none", "symbolic_zero"])
def test_a_bwd_none_or_symbolic_zero_is_a_zero_cotangent_as_in_jax(answer):
    def run(ns):
        zero = None if answer == "none" else ns.zero(_scalar_aval(ns))
        g = _bwd_answering(ns, lambda ns, res, ct: (ct * res[1], zero))
        return ns.grad(lambda x, y: g(x, y), argnums=(0, 1))(X, Y)
    assert_same_typed_values(run(VJP_OURS), run(VJP_THEIRS))


def test_a_bwd_symbolic_zero_of_the_wrong_type_fails_as_in_jax():
    def run(ns):
        aval = _scalar_aval(ns, (2,))
        g = _bwd_answering(ns, lambda ns, res, ct: (ct * res[1], ns.zero(aval)))
        return ns.grad(lambda x, y: g(x, y), argnums=(0, 1))(X, Y)
    with pytest.raises(ValueError) as theirs:
        run(VJP_THEIRS)
    with pytest.raises(ValueError) as ours:
        run(VJP_OURS)
    assert str(ours.value) == str(theirs.value)


def test_custom_vjp_primal_tree_values_refuses_a_plain_leaf_as_jax():
    for ns in (VJP_OURS, VJP_THEIRS):
        assert ns.values({"a": ns.primal(1.0, True)}) == {"a": 1.0}
    with pytest.raises(TypeError) as theirs:
        VJP_THEIRS.values([1.0])
    with pytest.raises(TypeError) as ours:
        VJP_OURS.values([1.0])
    assert str(ours.value) == str(theirs.value)
