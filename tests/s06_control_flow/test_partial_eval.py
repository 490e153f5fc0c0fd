"""Partial evaluation splits the body, not just the equation: known work runs, unknown work is
staged, residuals cross. Checked by running both halves and comparing with the whole."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import stages.s06_control_flow as s06
from stages.s02_tracing import eval_jaxpr, make_jaxpr
from stages.s02_tracing import numpy as jnp
from stages.s03_partial_eval import (
    dce_jaxpr,
    everything_saveable,
    nothing_saveable,
    partial_eval_jaxpr_custom,
    partial_eval_jaxpr_nounits,
)
from stages.s04_autodiff import checkpoint, grad, linearize

F32 = np.float32


def _split_and_rejoin(closed, unknowns, args):
    """Run known then unknown half; return (outputs, known half, unknown half, out_unknowns)."""
    known, unknown, out_uk, res_avals = partial_eval_jaxpr_nounits(closed, unknowns, False)
    known_args = [a for a, uk in zip(args, unknowns, strict=True) if not uk]
    unknown_args = [a for a, uk in zip(args, unknowns, strict=True) if uk]
    known_outs = eval_jaxpr(known.jaxpr, known.consts, *known_args)
    n_res = len(res_avals)
    outs_k, res = known_outs[:len(known_outs) - n_res], known_outs[len(known_outs) - n_res:]
    outs_u = eval_jaxpr(unknown.jaxpr, unknown.consts, *res, *unknown_args)
    it_k, it_u = iter(outs_k), iter(outs_u)
    outs = [next(it_u) if uk else next(it_k) for uk in out_uk]
    return outs, known, unknown, out_uk


def _prims(jaxpr):
    return [e.primitive.name for e in jaxpr.eqns]


def _scan_fn(w, c0, xs):
    def body(carry, x):
        a, b = carry
        return (a * 0.5 + x, jnp.sin(b) * w + a), a * b
    return s06.scan(body, (c0, c0), xs)


ARGS = (F32(1.5), F32(0.3), np.linspace(-1, 1, 5).astype(F32))


@pytest.mark.parametrize("unknowns, carry_unknown, known_prims", [
    ([True, False, False], [False, True], ["scan"]),  # unknown w reaches carry b only
    ([False, False, True], [True, True], []),  # unknown xs reach a, then b through a
    ([False, True, False], [True, True], []),  # nothing left to run on the known side
])
def test_scan_split_finds_the_unknown_carries_by_fixpoint(unknowns, carry_unknown,
                                                          known_prims):
    closed = make_jaxpr(_scan_fn)(*ARGS)
    outs, known, unknown, out_uk = _split_and_rejoin(closed, unknowns, list(ARGS))
    assert out_uk[:2] == carry_unknown
    whole = eval_jaxpr(closed.jaxpr, closed.consts, *ARGS)
    for got, want in zip(outs, whole, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    assert _prims(known) == known_prims and _prims(unknown) == ["scan"]


def test_scan_with_only_a_known_carry_needs_no_unknown_work_for_it():
    closed = make_jaxpr(_scan_fn)(*ARGS)
    _, known, unknown, out_uk = _split_and_rejoin(closed, [True, False, False], list(ARGS))
    known_scan = known.eqns[0]
    assert known_scan.params["num_carry"] == 1  # the `a` carry loops on the known side only
    assert unknown.eqns[0].params["num_carry"] == 1


def test_loop_invariant_residuals_stay_consts_instead_of_being_stacked():
    # w * x: w is known and loop-invariant, so the unknown scan reads it as a const
    closed = make_jaxpr(lambda w, xs: s06.scan(lambda c, x: (c + w * x, c), F32(0), xs))(
        F32(2.0), np.ones(4, F32))
    _, known, unknown, _ = _split_and_rejoin(closed, [False, True], [F32(2.0), np.ones(4, F32)])
    (eqn,) = unknown.eqns
    assert eqn.params["num_consts"] == 1 and eqn.invars[0].aval.shape == ()


@pytest.mark.parametrize("transform", ["grad", "linearize"])
def test_a_residual_computed_from_consts_alone_is_hoisted_out_of_the_loop_as_jax(transform):
    # sin(w) depends on no carry and no x: computed once before the loop, passed as a const,
    # not stacked three times by the known scan
    xs = np.ones(3, F32)

    def build(ns, lax):
        return lambda c, w: lax.scan(lambda c, x: (c * x * ns.sin(w), c), c, xs)[0]

    ours_f, jax_f = build(jnp, s06), build(jax.numpy, jax.lax)
    if transform == "grad":
        ours, theirs = make_jaxpr(grad(ours_f))(0.5, 0.3), jax.make_jaxpr(jax.grad(jax_f))(0.5, 0.3)
        assert str(ours) == str(theirs)
    else:
        ours = make_jaxpr(lambda c, w: linearize(ours_f, c, w)[1](1.0, 0.0))(0.5, 0.3)
        theirs = jax.make_jaxpr(lambda c, w: jax.linearize(jax_f, c, w)[1](1.0, 0.0))(0.5, 0.3)
    assert [e.primitive.name for e in ours.eqns][0] == "sin"  # outside every scan
    known_scan = next(e for e in ours.eqns if e.primitive.name == "scan")
    assert "sin" not in str(known_scan.params["jaxpr"])
    assert [e.primitive.name for e in ours.eqns] == [e.primitive.name for e in theirs.eqns]


def test_cond_split_joins_the_residuals_of_both_branches():
    def f(p, x, y):
        return s06.cond(p, lambda x, y: jnp.sin(x) * y, lambda x, y: jnp.cos(y) + x * x, x, y)

    args = [np.bool_(True), F32(0.7), F32(-0.4)]
    closed = make_jaxpr(f)(*args)
    for pred in (np.bool_(True), np.bool_(False)):
        args[0] = pred
        outs, known, unknown, out_uk = _split_and_rejoin(closed, [False, False, True], args)
        np.testing.assert_allclose(outs[0], f(*args), rtol=1e-6)
        assert out_uk == [True]
        assert _prims(known)[-1] == "cond" and _prims(unknown) == ["cond"]
        # each known branch returns every residual slot, filled or zero
        known_cond = known.eqns[-1]
        n_slots = len(known_cond.outvars)
        assert all(len(b.out_avals) == n_slots for b in known_cond.params["branches"])


def test_cond_with_an_unknown_index_is_staged_whole():
    closed = make_jaxpr(lambda p, x: s06.cond(p, jnp.sin, jnp.cos, x))(True, F32(1))
    _, known, unknown, _ = _split_and_rejoin(closed, [True, False], [np.bool_(True), F32(1)])
    assert "cond" not in _prims(known) and "cond" in _prims(unknown)


def test_while_split_runs_known_carries_and_stages_the_whole_loop_for_the_rest():
    def f(x, y):
        return s06.while_loop(lambda c: c[0] < 5.0, lambda c: (c[0] + 1.0, c[1] * 1.5),
                              (x, y))

    args = [F32(0.5), F32(2.0)]
    closed = make_jaxpr(f)(*args)
    outs, known, unknown, out_uk = _split_and_rejoin(closed, [False, True], args)
    assert out_uk == [False, True]
    np.testing.assert_allclose(outs, [np.asarray(v) for v in f(*args)], rtol=1e-6)
    assert _prims(known) == ["while"] and _prims(unknown) == ["while"]
    assert len(known.eqns[0].outvars) == 1  # the known loop carries only the known value


@pytest.mark.parametrize("used, kept_carry, kept_ys", [
    ([True, False, False], 1, 0),  # carry a alone
    ([False, True, False], 2, 0),  # carry b reads a: a is kept too
    ([False, False, True], 2, 1),
])
def test_scan_dce_keeps_what_the_used_outputs_need(used, kept_carry, kept_ys):
    closed = make_jaxpr(_scan_fn)(*ARGS)
    pruned, _ = dce_jaxpr(closed.jaxpr, used)
    (eqn,) = [e for e in pruned.eqns if e.primitive is s06.scan_p]
    assert eqn.params["num_carry"] == kept_carry
    assert len(eqn.outvars) == kept_carry + kept_ys


def test_cond_and_while_dce_drop_unused_outputs():
    def f(p, x, y):
        a, _ = s06.cond(p, lambda x, y: (x * 2.0, y * 3.0), lambda x, y: (x, y), x, y)
        b, _ = s06.while_loop(lambda c: c[0] < 3.0, lambda c: (c[0] + 1.0, c[1] * 2.0), (x, y))
        return a, b

    closed = make_jaxpr(f)(True, F32(1), F32(2))
    pruned, used_inputs = dce_jaxpr(closed.jaxpr, [True, True])
    cond_eqn, while_eqn = pruned.eqns[-2:]
    assert len(cond_eqn.outvars) == 1 and len(cond_eqn.invars) == 2  # index and x
    assert len(while_eqn.outvars) == 1  # the counter alone decides the loop
    assert used_inputs == [True, True, False]


@pytest.mark.parametrize("policy", [nothing_saveable, everything_saveable],
                         ids=["nothing_saveable", "everything_saveable"])
def test_partial_eval_jaxpr_custom_splits_scan_cond_and_while(policy):
    def f(x, y):
        c, ys = s06.scan(lambda c, z: (c * jnp.sin(z) + y, c), x, np.linspace(0, 1, 3, dtype=F32))
        d = s06.cond(x > 0.0, lambda v: v * y, lambda v: v - y, c)
        e, _ = s06.while_loop(lambda s: s[0] < 3.0, lambda s: (s[0] + 1.0, s[1] * y), (x, d))
        return e + ys.sum()

    args = [F32(0.5), F32(1.5)]
    closed = make_jaxpr(f)(*args)
    known, staged, out_uk, out_inst, num_res = partial_eval_jaxpr_custom(
        closed.jaxpr, [False, True], [True, True], False, True, policy)
    assert out_uk == [True]
    known_outs = eval_jaxpr(known, closed.consts, args[0])
    res = known_outs[len(known_outs) - num_res:]
    (out,) = eval_jaxpr(staged, closed.consts, *res, *args)
    np.testing.assert_allclose(out, f(*args), rtol=1e-5)


def test_grad_through_checkpoint_of_a_scan_agrees_with_jax():
    def make(ns, cp):
        def f(w, xs):
            c, ys = ns.cf.scan(lambda c, x: (ns.jnp.sin(c * w + x), c * x), 0.1, xs)
            return c + ys.sum()
        return cp(f)

    from .conftest import OURS, THEIRS

    xs = np.linspace(-1, 1, 4).astype(F32)
    ours = grad(make(OURS, checkpoint), (0, 1))(F32(0.7), xs)
    theirs = jax.grad(make(THEIRS, jax.checkpoint), (0, 1))(F32(0.7), xs)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_linearize_of_a_scan_is_a_linear_scan_agreeing_with_jax():
    from .conftest import OURS, THEIRS

    def make(ns):
        return lambda x: ns.cf.scan(lambda c, y: (ns.jnp.cos(c) * y, c * c), x,
                                    np.linspace(0.5, 1.5, 4).astype(F32))

    y, f_lin = linearize(make(OURS), F32(0.3))
    jy, jf_lin = jax.linearize(make(THEIRS), F32(0.3))
    for a, b in zip([*y, *f_lin(F32(1.0))], [*jy, *jf_lin(F32(1.0))], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


B2 = np.array([2.0, 3.0], F32)
A3 = np.arange(1.0, 4.0, dtype=F32)

# user-written linear scans whose residual operands sit between or before the linear ones:
# (name, build(ns), primal inputs to transpose at, output cotangents)
USER_LINEAR_SCANS = [
    # num_consts=2: the linear x first, the array B after it
    ("closure_after_linear_const", lambda ns: lambda x: ns.cf.scan(
        lambda c, a: (c + x * B2, c.sum()), np.zeros(2, F32), A3),
     (np.ones(2, F32),), (np.ones(2, F32), np.ones(3, F32))),
    # the residual B first, the linear x second
    ("closure_before_linear_const", lambda ns: lambda x: ns.cf.scan(
        lambda c, a: (c * B2 + x, c.sum()), np.zeros(2, F32), A3),
     (np.ones(2, F32),), (np.ones(2, F32), np.ones(3, F32))),
    # a residual xs before the linear xs
    ("residual_xs_before_linear_xs", lambda ns: lambda xs: ns.cf.scan(
        lambda c, a: (c * a[0] + a[1], c), F32(0.0), (A3, xs)),
     (np.zeros(3, F32),), (F32(1.0), np.ones(3, F32))),
]


@pytest.mark.parametrize("name, build, primals, cts", USER_LINEAR_SCANS,
                         ids=[c[0] for c in USER_LINEAR_SCANS])
def test_linear_transpose_of_a_user_scan_with_interleaved_residuals(name, build, primals, cts,
                                                                    ours, theirs, close):
    from stages.s04_autodiff import linear_transpose

    ours_ct = linear_transpose(build(ours), *primals)(cts)
    jax_ct = jax.linear_transpose(build(theirs), *primals)(cts)
    close(ours_ct, jax_ct)
