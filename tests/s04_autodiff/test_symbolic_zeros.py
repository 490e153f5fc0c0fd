"""custom_jvp(...).defjvp(rule, symbolic_zeros=True): the rule sees SymbolicZero where a tangent
is zero, as jax.custom_jvp's does; the derivatives agree with JAX's."""

from __future__ import annotations

from types import SimpleNamespace

import jax
import jax.custom_derivatives
import numpy as np
import pytest

import stages.s04_autodiff as s04
from stages.s04_autodiff.ad_util import SymbolicZero

OURS = SimpleNamespace(custom_jvp=s04.custom_jvp, jvp=s04.jvp, grad=s04.grad, zero=SymbolicZero)
THEIRS = SimpleNamespace(custom_jvp=jax.custom_jvp, jvp=jax.jvp, grad=jax.grad,
                         zero=jax.custom_derivatives.SymbolicZero)


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
