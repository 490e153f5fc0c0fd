"""Hypothesis-drawn random bodies: scan, cond, while_loop and fori_loop against jax.lax.

A body is a small random expression over the carry `c`, the slice `x` and constants (sin, cos,
tanh, add, sub, mul), written as data and evaluated against either numpy facade. Values,
jvp, grad (not for while) and vmap (batched carries, batched predicates, per-example trip
counts) must agree with JAX.
"""

from __future__ import annotations

import operator

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from .conftest import OURS, THEIRS, assert_close, scalarize

UNARY = ["sin", "cos", "tanh"]
BINARY = {"add": operator.add, "sub": operator.sub, "mul": operator.mul}
F32 = np.float32

leaves = st.sampled_from(["c", "x", 0.5, -1.25])
exprs = st.recursive(
    leaves,
    lambda kids: st.one_of(st.tuples(st.sampled_from(UNARY), kids),
                           st.tuples(st.sampled_from(sorted(BINARY)), kids, kids)),
    max_leaves=6)
# XLA flushes subnormal floats to zero and numpy does not, so a predicate such as `sum(c) > 0`
# on tiny values can go one way in JAX and the other in ours. No subnormal is drawn, and every
# nonzero value is at least TINY in size: then every nonzero float32 sum of them is a multiple of
# TINY * 2**-23 (about 1e-13), far above the subnormals (below 1.2e-38).
TINY = 2.0**-20
floats = st.floats(-1.0, 1.0, width=32, allow_subnormal=False).map(
    lambda v: v if abs(v) >= TINY else 0.0)
arrays = st.lists(floats, min_size=6, max_size=6).map(lambda v: np.array(v, F32))


def evaluate(expr, ns, env):
    """The expression on the values in `env`, with ns.jnp's functions."""
    if isinstance(expr, str):
        return env[expr]
    if isinstance(expr, float):
        return expr
    if len(expr) == 2:
        return getattr(ns.jnp, expr[0])(evaluate(expr[1], ns, env))
    return BINARY[expr[0]](evaluate(expr[1], ns, env), evaluate(expr[2], ns, env))


def check_everywhere(build, args, grad=True):
    """Values, jvp, grad of the summed outputs, and vmap over three examples, ours vs JAX."""
    ours, theirs = build(OURS), build(THEIRS)
    assert_close(ours(*args), theirs(*args))
    tangents = tuple(np.ones_like(a) * F32(0.5) for a in args)
    assert_close(OURS.jvp(ours, args, tangents), THEIRS.jvp(theirs, args, tangents))
    if grad:
        argnums = tuple(range(len(args)))
        assert_close(OURS.grad(scalarize(OURS, ours), argnums)(*args),
                     THEIRS.grad(scalarize(THEIRS, theirs), argnums)(*args))
    batched = tuple(np.stack([a, -a, a * 0.5 + 0.25]) for a in args)
    assert_close(OURS.vmap(ours)(*batched), THEIRS.vmap(theirs)(*batched))


@settings(max_examples=10, deadline=None)
@given(carry_expr=exprs, y_expr=exprs, data=arrays, reverse=st.booleans())
def test_scan_of_a_random_body(carry_expr, y_expr, data, reverse):
    def build(ns):
        def body(c, x):
            env = {"c": c, "x": x}
            # tanh keeps the carry bounded; `+ c * 0.5` keeps its shape whatever the expression
            return ns.jnp.tanh(evaluate(carry_expr, ns, env) + c * 0.5), \
                evaluate(y_expr, ns, env) + x * 0.0
        return lambda c0, xs: ns.cf.scan(body, c0, xs, reverse=reverse)

    check_everywhere(build, (data[:2], data.reshape(3, 2)))


@settings(max_examples=10, deadline=None)
@given(true_expr=exprs, false_expr=exprs, data=arrays)
def test_cond_of_random_branches(true_expr, false_expr, data):
    def build(ns):
        def branch(expr):
            return lambda c, x: evaluate(expr, ns, {"c": c, "x": x}) + c * 0.0
        # the predicate depends on the data, so under vmap it is batched
        return lambda c, x: ns.cf.cond(ns.jnp.sum(c) > 0.0, branch(true_expr),
                                       branch(false_expr), c, x)

    check_everywhere(build, (data[:3], data[3:]))


@settings(max_examples=8, deadline=None)
@given(body_expr=exprs, data=arrays, trips=st.integers(0, 4))
def test_while_loop_of_a_random_body(body_expr, data, trips):
    def build(ns):
        def body(s):
            i, c, x = s
            return i + 1.0, ns.jnp.tanh(evaluate(body_expr, ns, {"c": c, "x": x}) + c), x
        # the trip count comes from the data: under vmap every example stops at its own time
        return lambda n, c, x: ns.cf.while_loop(lambda s: s[0] < n[0], body, (0.0, c, x))[1]

    n = np.full(2, trips, F32)
    ours = build(OURS)(n, data[:2], data[2:4])
    assert_close(ours, build(THEIRS)(n, data[:2], data[2:4]))
    check_everywhere(lambda ns: lambda c, x: build(ns)(n, c, x), (data[:2], data[2:4]),
                     grad=False)
    counts = np.array([[0, 0], [trips, trips], [4, 4]], F32)
    batched = (counts, np.stack([data[:2]] * 3), np.stack([data[2:4]] * 3))
    assert_close(OURS.vmap(build(OURS))(*batched), THEIRS.vmap(build(THEIRS))(*batched))


@settings(max_examples=8, deadline=None)
@given(body_expr=exprs, data=arrays, upper=st.integers(0, 5))
def test_fori_loop_with_concrete_bounds_of_a_random_body(body_expr, data, upper):
    def build(ns):
        def body(i, c):
            return ns.jnp.tanh(evaluate(body_expr, ns, {"c": c, "x": c * 0.5}) + c)
        return lambda c: ns.cf.fori_loop(0, upper, body, c)

    check_everywhere(build, (data[:3],))


@settings(max_examples=6, deadline=None)
@given(branch_exprs=st.lists(exprs, min_size=2, max_size=4), data=arrays)
def test_switch_of_random_branches(branch_exprs, data):
    def build(ns):
        branches = [lambda c, x, e=e: evaluate(e, ns, {"c": c, "x": x}) + c * 0.0
                    for e in branch_exprs]
        # a data-dependent index, out of range on purpose: switch clamps it
        return lambda c, x: ns.cf.switch((ns.jnp.sum(c) * 3.0).astype(ns.jnp.int32), branches,
                                         c, x)

    check_everywhere(build, (data[:3], data[3:]))
