"""vmap of control flow: batched predicates run every branch or every lane to the end."""

from __future__ import annotations

import numpy as np
import pytest

import stages.s06_control_flow as s06
from stages.s02_tracing import make_jaxpr
from stages.s05_vmap import vmap

F32 = np.float32


def test_while_with_a_batched_predicate_runs_each_lane_to_its_own_end():
    def count_doublings(x):
        return s06.while_loop(lambda s: s[1] < 10.0, lambda s: (s[0] + 1, s[1] * 2.0), (0, x))

    xs = np.array([1.0, 3.0, 20.0, 0.1], F32)
    counts, values = vmap(count_doublings)(xs)
    expected = [count_doublings(x) for x in xs]  # one loop per example
    np.testing.assert_array_equal(counts, [int(c) for c, _ in expected])
    np.testing.assert_allclose(values, [float(v) for _, v in expected])


def test_a_finished_lane_is_judged_on_the_carry_it_kept_not_on_a_later_step(ours, theirs):
    """Once a lane's predicate is false its carry stops changing, and the next predicate is
    asked of that carry: a predicate that would turn true again on the step the lane did not
    take must not restart it (lane 0 stops at s[1] = 0 after one step; one more step would
    make s[1] = 1 and the predicate true again)."""
    def build(ns):
        return ns.vmap(lambda x: ns.cf.while_loop(
            lambda s: (s[1] != 0) & (s[0] < 20), lambda s: (s[0] + 1, (s[1] + 1) % 4), (0, x)))

    xs = np.array([3, 1], np.int32)
    got = [np.asarray(v).tolist() for v in build(ours)(xs)]
    assert got == [np.asarray(v).tolist() for v in build(theirs)(xs)] == [[1, 3], [0, 0]]


def test_while_predicate_batched_only_after_the_carry_fixpoint(ours, theirs, close):
    # the counter starts unbatched but meets a batched step inside the body: it becomes batched,
    # and so does the predicate that reads it
    def build(ns):
        return ns.vmap(lambda step, x: ns.cf.while_loop(
            lambda s: s[0] < 5.0, lambda s: (s[0] + step, s[1] * 1.5), (0.0, x)))

    args = (np.array([1.0, 2.5, 0.5], F32), np.ones(3, F32))
    close(build(ours)(*args), build(theirs)(*args))


def test_nested_vmap_of_while_with_an_inner_batched_predicate(ours, theirs, close):
    def build(ns):
        def f(n, x):
            return ns.cf.while_loop(lambda s: s[0] < n, lambda s: (s[0] + 1.0, s[1] * 2.0),
                                    (0.0, x))[1]
        inner = ns.vmap(f)  # batched predicate (n is batched)
        return ns.vmap(inner, in_axes=(None, 0))  # the outer vmap maps x only

    args = (np.array([1.0, 3.0], F32), np.arange(6, dtype=F32).reshape(3, 2))
    close(build(ours)(*args), build(theirs)(*args))


def _count_to(ns):
    # the exit depends on n: a vmap over n batches the predicate, a vmap over x does not
    def f(n, x):
        return ns.cf.while_loop(lambda s: s[0] < n, lambda s: (s[0] + 1.0, s[1] * 2.0),
                                (0.0, x))
    return f


@pytest.mark.parametrize("outer_in_axes, outer_out_axes", [
    ((None, 0), (None, 0)),  # predicate batched by the inner vmap only: the count stays unbatched
    ((None, 1), (None, 1)),
    ((0, 0), 0),  # predicate batched at both levels
    ((0, None), 0),
])
def test_vmap_of_vmap_of_while_batches_only_what_each_level_maps(outer_in_axes, outer_out_axes,
                                                                  ours, theirs, close):
    def build(ns):
        inner = ns.vmap(_count_to(ns))  # n batched: a bool[2] predicate
        return ns.vmap(inner, in_axes=outer_in_axes, out_axes=outer_out_axes)

    n = np.array([[1.0, 3.0], [2.0, 0.5], [4.0, 2.0]], F32)
    x = np.arange(6, dtype=F32).reshape(3, 2)
    args = (n if outer_in_axes[0] == 0 else n[0],
            x if outer_in_axes[1] == 0 else x.T if outer_in_axes[1] == 1 else x[0])
    close(build(ours)(*args), build(theirs)(*args))


def test_jacfwd_of_vmap_of_while_with_a_batched_exit_matches_jax(ours, theirs, close):
    # jacfwd's vmap batches the tangents only: the primal carry must stay unbatched
    def build(ns):
        def f(w, x):
            return ns.cf.while_loop(lambda c: ns.jnp.sum(c * c) < 3.0 + x, lambda c: c * 1.5, w)
        xs = np.array([0.0, 1.0, 4.0], F32)
        return ns.jacfwd(lambda w: ns.vmap(f, (None, 0))(w, xs))

    w = np.array([0.1, 0.2, 0.3], F32)
    ours_jac = build(ours)(w)
    assert np.shape(ours_jac) == (3, 3, 3)
    close(ours_jac, build(theirs)(w))


def test_vmap_of_jvp_of_vmapped_while_keeps_the_primal_unbatched(ours, theirs, close):
    def build(ns):
        g = ns.vmap(_count_to(ns), (0, None))
        n = np.array([1.0, 3.0], F32)
        return ns.vmap(lambda t: ns.jvp(lambda x: g(n, x), (F32(0.5),), (t,)),
                       out_axes=((None, None), (0, 0)))

    close(build(ours)(np.ones(4, F32)), build(theirs)(np.ones(4, F32)))


@pytest.mark.parametrize("in_axes", [(0, 0), (None, 0), (0, None), (1, 0)])
def test_scan_batches_carries_and_xs_on_any_axis(in_axes, ours, theirs, close):
    def build(ns):
        def f(c, xs):
            return ns.cf.scan(lambda c, x: (ns.jnp.sin(c) * x + c, c * x), c, xs)
        return ns.vmap(f, in_axes=in_axes)

    c = np.linspace(-1, 1, 6).astype(F32).reshape(3, 2)  # 3 examples of a (2,) carry
    xs = np.linspace(0, 1, 12).astype(F32).reshape(3, 4)  # 3 examples of 4 steps
    carry_arg = {None: c[0], 0: c, 1: c.T}[in_axes[0]]
    xs_arg = xs if in_axes[1] is not None else xs[0]
    args = (carry_arg, xs_arg)
    close(build(ours)(*args), build(theirs)(*args))


def test_grad_of_vmap_of_cond_gets_no_nan_from_the_branch_not_taken(ours, theirs, close):
    # sqrt's derivative is nan at -1, in the lane that never takes that branch
    def build(ns):
        f = ns.vmap(lambda x: ns.cf.cond(x > 0.0, ns.jnp.sqrt, lambda v: v * 0.0, x))
        return ns.grad(lambda xs: f(xs).sum())

    xs = np.array([-1.0, 4.0], F32)
    ours_grad = build(ours)(xs)
    assert not np.isnan(ours_grad).any()
    close(ours_grad, build(theirs)(xs))


def test_switch_with_a_batched_index_selects_among_all_branches(ours, theirs, close):
    def build(ns):
        return ns.vmap(lambda i, x: ns.cf.switch(i, [ns.jnp.sin, ns.jnp.cos, lambda v: -v], x))

    args = (np.array([0, 1, 2, 7, -3], np.int32), np.linspace(0, 1, 5).astype(F32))
    close(build(ours)(*args), build(theirs)(*args))
    eqns = make_jaxpr(build(ours))(*args).eqns
    assert [e.primitive.name for e in eqns].count("select_n") == 1 + 3  # 3 masks, 1 pick


@pytest.mark.parametrize("n", [7, 0])
@pytest.mark.parametrize("batch_size", [None, 2, 3, 8])
def test_map_with_a_batch_size_agrees_with_jax(batch_size, n, ours, theirs, close):
    def build(ns):
        return lambda xs: ns.cf.map(lambda x: ns.jnp.sin(x) * 2.0, xs, batch_size=batch_size)

    xs = np.linspace(-1, 1, 2 * n).astype(F32).reshape(n, 2)
    close(build(ours)(xs), build(theirs)(xs))


def test_unbatched_operands_of_a_batched_cond_are_broadcast():
    f = vmap(lambda p, y: s06.cond(p, lambda a, b: a + b, lambda a, b: a - b, F32(1.0), y),
             in_axes=(0, None))
    np.testing.assert_allclose(f(np.array([True, False]), F32(2.0)), [3.0, -1.0])
