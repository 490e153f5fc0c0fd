"""Weak types through a loop's tangent, against JAX. A weakly typed carry (a Python scalar
broadcast) gets a weakly typed tangent carry inside the jvp loop, so the rules in the body must
keep it weak as JAX's do: their constants are `lax._one(x)`, weak whenever x is, at any rank.
(Found by a random program under one hypothesis seed: the tangent came out strongly typed.)"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import stages.s04_autodiff as s04
import stages.s06_control_flow as s06
from stages.s02_tracing import lax

UNARY = {"tanh": (lax.tanh, jax.lax.tanh), "log1p": (lax.log1p, jax.lax.log1p),
         "logistic": (lax.logistic, jax.lax.logistic)}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_a_weak_carry_keeps_a_weak_tangent_through_the_loop(name):
    ours_op, jax_op = UNARY[name]

    def run(lx, fori_loop, jvp, op):
        x = lx.broadcast_in_dim(0.3, (4,), ())  # weakly typed f32[4]
        f = lambda x: fori_loop(0, 2, lambda i, c: lx.mul(op(c), 0.5), x)  # noqa: E731
        return jvp(f, (x,), (np.ones(4, np.float32),))

    ours = run(lax, s06.fori_loop, s04.jvp, ours_op)
    theirs = run(jax.lax, jax.lax.fori_loop, jax.jvp, jax_op)
    assert [o.weak_type for o in ours] == [t.weak_type for t in theirs] == [True, True]
    for o, t in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(np.asarray(o), np.asarray(t), rtol=1e-6)


def test_pow_converts_both_operands_so_its_tangent_is_strongly_typed_as_jaxs():
    def run(lx, jvp):
        x, y = (lx.broadcast_in_dim(v, (3,), ()) for v in (1.5, 2.5))  # weakly typed f32[3]
        return jvp(lambda x: lx.pow(x, y), (x,), (lx.broadcast_in_dim(1.0, (3,), ()),))

    ours, theirs = run(lax, s04.jvp), run(jax.lax, jax.jvp)
    assert [o.weak_type for o in ours] == [t.weak_type for t in theirs] == [True, False]
    np.testing.assert_allclose(np.asarray(ours[1]), np.asarray(theirs[1]), rtol=1e-6)


@pytest.mark.parametrize("name", ["scan", "fori_loop"])
def test_a_gradient_through_a_transposed_loop_keeps_its_weak_type(name, ours, theirs):
    # the transposed body sums cotangents with add_any, whose result has its first operand's
    # type: a weak carry stays weak, as in JAX
    def build(ns):
        if name == "scan":
            xs = np.ones(3, np.float32)
            return lambda a: ns.cf.scan(lambda c, x: (c * x, c), a, xs)[1].sum()
        return lambda x: ns.cf.fori_loop(0, 3, lambda i, c: c * x ** i, 1.0)

    for use_jvp in (False, True):
        if use_jvp:
            got = ours.jvp(build(ours), (0.3,), (0.3,))[1]
            want = theirs.jvp(build(theirs), (0.3,), (0.3,))[1]
        else:
            got, want = ours.grad(build(ours))(0.3), theirs.grad(build(theirs))(0.3)
        assert (got.dtype, got.weak_type) == (want.dtype, want.weak_type)


@pytest.mark.parametrize("x, ct", [(2.0, np.float32(1.0)), (np.float32(2.0), 1.0)],
                         ids=["weak_primal_strong_ct", "strong_primal_weak_ct"])
def test_a_transposed_scan_types_its_carry_by_the_cotangent_as_jax(x, ct):
    # convert_element_type's transpose keeps its input's weak type: the carry's undefined
    # primal must have the cotangent's type (JAX's accumulator), not the primal carry's
    def run(lx, scan, vjp):
        body = lambda c, z: (lx.convert_element_type(  # noqa: E731
            lx.convert_element_type(c, np.float16), np.float32), None)
        _, f_vjp = vjp(lambda x: scan(body, x, np.arange(1.0, 4.0, dtype=np.float32))[0], x)
        return f_vjp(ct)

    (got,), (want,) = run(lax, s06.scan, s04.vjp), run(jax.lax, jax.lax.scan, jax.vjp)
    assert got.weak_type == want.weak_type == (type(ct) is float)
    assert float(got) == float(want) == 1.0
