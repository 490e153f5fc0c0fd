"""Printed jaxprs that must equal JAX's: map with a batch size that leaves a remainder (or over a
numpy constant, batched in numpy), the transposed body of a scan that reads consts (each const's
cotangent summed as it arrives), and the known body of a split scan or cond pruned of what no
output reads (an inner scan's unused ys, dead code), as JAX's linearize rules prune it. Branches
here need no residuals: JAX pads the residuals of a split cond with `empty2`, which is not ours."""

from __future__ import annotations

import numpy as np
import pytest

from .conftest import OURS, THEIRS

F32 = np.float32
X3 = np.array([0.3, -0.7, 1.2], F32)
XS4 = np.array([0.5, -0.2, 0.9, 0.1], F32)
XS43 = np.arange(12, dtype=F32).reshape(4, 3) / 7 - 0.5


def same_jaxpr(build, *args):
    assert str(OURS.make_jaxpr(build(OURS))(*args)) == str(THEIRS.make_jaxpr(build(THEIRS))(*args))


def _summed_grad(ns, f, argnums):
    return ns.grad(lambda *a: ns.jnp.sum(sum(ns.jnp.sum(leaf) for leaf in ns.tree_leaves(f(*a)))),
                   argnums)


@pytest.mark.parametrize("transform", ["plain", "jvp", "vmap"])
@pytest.mark.parametrize("batch_size", [3, 5])
def test_map_with_a_remainder_splits_every_leaf_before_the_scan(batch_size, transform):
    def build(ns):
        def f(xs):
            return ns.cf.map(lambda t: {"a": ns.jnp.sin(t[0]) * t[1]}, (xs, xs * 2.0),
                             batch_size=batch_size)
        if transform == "jvp":
            return lambda xs, t: ns.jvp(f, (xs,), (t,))
        if transform == "vmap":
            return lambda xs, t: ns.vmap(f, in_axes=1)(xs)
        return lambda xs, t: f(xs)
    xs = np.arange(28, dtype=F32).reshape(7, 4) / 9.0
    same_jaxpr(build, xs, xs)


@pytest.mark.parametrize("batch_size", [2, 3])
def test_map_batches_a_numpy_constant_in_numpy_not_with_a_staged_reshape(batch_size):
    xs = np.arange(1.0, 4.0, dtype=F32)
    same_jaxpr(lambda ns: lambda w: ns.cf.map(lambda y: ns.jnp.sin(y * w), xs,
                                              batch_size=batch_size), F32(0.5))


SCANS_READING_CONSTS = {
    "closure_over_an_argument": (
        lambda ns: lambda w, c, xs: ns.cf.scan(lambda c, x: (c * w + x, c * w), c, xs),
        (X3, X3, XS4)),
    "a_carry_that_never_changes": (
        lambda ns: lambda c, xs: ns.cf.scan(
            lambda c, x: ((c[0], c[1] + x * c[0]), c[1]), (c, c), xs), (F32(0.8), XS4)),
    "a_weight_read_twice": (
        lambda ns: lambda w, c, xs: ns.cf.scan(
            lambda c, x: (ns.jnp.tanh(c * w) + w * x, c), c, xs), (X3, X3, XS4)),
}


@pytest.mark.parametrize("name", list(SCANS_READING_CONSTS))
def test_grad_of_a_scan_sums_each_const_cotangent_as_it_arrives(name):
    build, args = SCANS_READING_CONSTS[name]
    same_jaxpr(lambda ns: _summed_grad(ns, build(ns), tuple(range(len(args)))), *args)


def _nested(ns):
    return lambda c, xs: ns.cf.scan(
        lambda c, x: (ns.cf.scan(lambda d, y: (d * y + c, d), c, x)[0], c), c, xs)


@pytest.mark.parametrize("transform", ["grad", "linearize", "vjp"])
def test_an_inner_scans_unused_ys_are_pruned_from_the_outer_known_body(transform):
    def build(ns):
        f = _nested(ns)
        if transform == "grad":
            return _summed_grad(ns, f, (0, 1))
        if transform == "linearize":
            return lambda c, xs: ns.linearize(lambda c: f(c, xs), c)[0]
        return lambda c, xs: ns.vjp(lambda c: f(c, xs), c)[0]
    same_jaxpr(build, X3, XS43)


def _dead_code_in_a_branch(ns):
    def double(v):
        ns.jnp.sin(v)  # computed, never used
        return v * 2.0
    return lambda p, x: ns.cf.cond(p, double, lambda v: v * 3.0, x)


@pytest.mark.parametrize("transform", ["grad", "linearize"])
def test_the_known_branches_of_a_split_cond_are_pruned(transform):
    def build(ns):
        f = _dead_code_in_a_branch(ns)
        if transform == "grad":
            return lambda p, x: ns.grad(lambda x: ns.jnp.sum(f(p, x)))(x)
        return lambda p, x: ns.linearize(lambda x: f(p, x), x)[0]
    same_jaxpr(build, True, X3)
