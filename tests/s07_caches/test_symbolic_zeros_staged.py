"""Custom rules with symbolic_zeros=True whose function is staged before it is differentiated
(inside jit, cond or scan): the staged rule is traced again for each pattern of zero tangents,
so it sees SymbolicZero (custom_jvp) or CustomVJPPrimal(perturbed=False) (custom_vjp) exactly
where JAX's does; values and printed jaxprs against JAX."""

from __future__ import annotations

from types import SimpleNamespace

import jax
import numpy as np
import pytest

import stages.s02_tracing as s02
import stages.s04_autodiff as s04
import stages.s05_vmap as s05
import stages.s06_control_flow as s06
import stages.s07_caches as s07
from shared.testing import assert_same_typed_values
from stages.s04_autodiff.ad_util import SymbolicZero
from tests.s04_autodiff.test_symbolic_zeros import VJP_OURS, VJP_THEIRS, _build_vjp

OURS = SimpleNamespace(custom_jvp=s04.custom_jvp, jvp=s04.jvp, grad=s04.grad, vmap=s05.vmap,
                       linearize=s04.linearize, zero=SymbolicZero, make_jaxpr=s02.make_jaxpr,
                       cond=s06.cond, scan=s06.scan, jit=s07.jit)
THEIRS = SimpleNamespace(custom_jvp=jax.custom_jvp, jvp=jax.jvp, grad=jax.grad, vmap=jax.vmap,
                         linearize=jax.linearize, zero=jax.custom_derivatives.SymbolicZero,
                         make_jaxpr=jax.make_jaxpr, cond=jax.lax.cond, scan=jax.lax.scan,
                         jit=jax.jit)
X, Y = np.float32(2.0), np.float32(3.0)
XS = np.arange(1.0, 4.0, dtype=np.float32)


def _build_jvp(ns, seen):
    @ns.custom_jvp
    def f(x, y):
        return x * y

    def f_jvp(primals, tangents):
        x, y = primals
        seen.append(tuple("SymbolicZero" if isinstance(t, ns.zero) else "array"
                          for t in tangents))
        tx, ty = tangents
        t = 0.0
        if not isinstance(tx, ns.zero):
            t = t + tx * y
        if not isinstance(ty, ns.zero):
            t = t + x * ty
        return x * y, t
    f.defjvp(f_jvp, symbolic_zeros=True)
    return f


def _in_cond(ns, g):
    return lambda x: ns.cond(True, g, lambda a: a, x)


JVP_CASES = {
    "jvp_of_cond": lambda ns, f: ns.jvp(_in_cond(ns, lambda a: f(a, Y)), (X,), (X,)),
    "jvp_of_jit": lambda ns, f: ns.jvp(ns.jit(lambda x: f(x, Y)), (X,), (X,)),
    "jvp_of_jit_both_perturbed": lambda ns, f: ns.jvp(ns.jit(f), (X, Y), (X, np.float32(0))),
    "grad_of_jit": lambda ns, f: ns.grad(ns.jit(lambda x: f(x, Y)))(X),
    "grad_of_cond": lambda ns, f: ns.grad(_in_cond(ns, lambda a: f(a, Y)))(X),
    "linearize": lambda ns, f: ns.linearize(lambda x: f(x, Y), X)[1](X),
    "jvp_of_vmap_of_jit": lambda ns, f: ns.jvp(ns.vmap(ns.jit(lambda x: f(x, Y))), (XS,),
                                               (XS,)),
    "vmap_of_jvp_of_jit": lambda ns, f: ns.vmap(
        lambda x: ns.jvp(ns.jit(lambda a: f(a, Y)), (x,), (x,)))(XS),
    "grad_of_vmap_of_cond": lambda ns, f: ns.grad(
        lambda x: ns.vmap(_in_cond(ns, lambda a: f(a, Y)))(x).sum())(XS),
}


@pytest.mark.parametrize("name", sorted(JVP_CASES))
def test_a_staged_custom_jvp_rule_sees_symbolic_zeros_as_in_jax(name):
    seen_ours, seen_theirs = [], []
    ours = JVP_CASES[name](OURS, _build_jvp(OURS, seen_ours))
    theirs = JVP_CASES[name](THEIRS, _build_jvp(THEIRS, seen_theirs))
    assert_same_typed_values(ours, theirs)
    assert sorted(set(seen_ours)) == sorted(set(seen_theirs))


@pytest.mark.parametrize("where", ["jit", "cond"])
def test_the_jaxpr_of_a_staged_symbolic_zeros_rule_prints_as_jax(where):
    def run(ns):
        f = _build_jvp(ns, [])
        g = ns.jit(lambda a: f(a, Y)) if where == "jit" else _in_cond(ns, lambda a: f(a, Y))
        return str(ns.make_jaxpr(lambda x: ns.jvp(g, (x,), (x,)))(X))
    assert run(OURS) == run(THEIRS)


VJP_STAGED = {
    "grad_of_cond": lambda ns, f: ns.grad(_in_cond(ns, lambda a: f(a, Y)[0]))(X),
    "grad_of_scan": lambda ns, f: ns.grad(
        lambda x: ns.scan(lambda c, _: (f(c, Y)[0], None), x, None, length=2)[0])(X),
    "grad_of_jit": lambda ns, f: ns.grad(ns.jit(lambda x, y: f(x, y)[1]), argnums=1)(X, Y),
}


@pytest.mark.parametrize("name", sorted(VJP_STAGED))
def test_a_staged_custom_vjp_fwd_sees_what_is_perturbed_as_in_jax(name):
    ours_ns = SimpleNamespace(**vars(VJP_OURS), **{k: getattr(OURS, k) for k in
                                                    ("cond", "scan", "jit")})
    theirs_ns = SimpleNamespace(**vars(VJP_THEIRS), **{k: getattr(THEIRS, k) for k in
                                                        ("cond", "scan", "jit")})
    seen_ours, seen_theirs = [], []
    ours = VJP_STAGED[name](ours_ns, _build_vjp(ours_ns, seen_ours))
    theirs = VJP_STAGED[name](theirs_ns, _build_vjp(theirs_ns, seen_theirs))
    assert_same_typed_values(ours, theirs)
    # JAX may trace a rule more than once (cond traces its transposed branches again)
    assert sorted(set(seen_ours)) == sorted(set(seen_theirs))
