"""The impl rules: the bodies interpreted on numpy, one iteration at a time."""

from __future__ import annotations

import numpy as np
import pytest

import stages.s06_control_flow as s06
from stages.s02_tracing.array import Array
from stages.s06_control_flow.util import scan_trip_count

F32 = np.float32


@pytest.mark.parametrize("length, unroll, trips", [
    (10, 1, (10, 0)), (10, 3, (3, 1)), (9, 3, (3, 0)), (4, 4, (0, 4)), (5, 0, (0, 5)),
    (3, 8, (0, 3)),
])
def test_unroll_k_means_trips_of_k_bodies_then_the_rest(length, unroll, trips):
    assert scan_trip_count(length, unroll) == trips


@pytest.mark.parametrize("unroll", [1, 2, 3, 7, True, False, 0, np.int64(2)])
@pytest.mark.parametrize("reverse", [False, True])
def test_unroll_is_a_parameter_set_as_jax_sets_it_and_changes_no_number(
        unroll, reverse, ours, theirs, close):
    # the impl ignores unroll (it only shapes a compiled loop): what can go wrong is the API's
    # reading of it (True is the length, False is 1), so the equation's param is compared too
    def build(ns):
        return lambda c, xs: ns.cf.scan(lambda c, x: (ns.jnp.sin(c) + x, c * x), c, xs,
                                        reverse=reverse, unroll=unroll)

    args = (F32(0.3), np.linspace(-1, 1, 7).astype(F32))
    close(build(ours)(*args), build(theirs)(*args))
    (ours_eqn,) = ours.make_jaxpr(build(ours))(*args).eqns
    (jax_eqn,) = theirs.make_jaxpr(build(theirs))(*args).eqns
    assert ours_eqn.params["unroll"] == jax_eqn.params["unroll"]


def test_a_float_unroll_is_traced_as_given(ours, theirs):
    # JAX keeps unroll=2.5 in the equation; only running the loop refuses it (test_errors)
    def build(ns):
        return lambda xs: ns.cf.scan(lambda c, x: (c + x, c), 0.0, xs, unroll=2.5)

    xs = np.arange(4, dtype=F32)
    assert str(ours.make_jaxpr(build(ours))(xs)) == str(theirs.make_jaxpr(build(theirs))(xs))


def test_a_zero_length_scan_returns_the_init_and_empty_ys(ours, theirs, close):
    def build(ns):
        return lambda c, xs: ns.cf.scan(lambda c, x: (c * x, (c, x * 2.0)), c, xs)

    args = (np.ones(2, F32), np.zeros((0, 2), F32))
    close(build(ours)(*args), build(theirs)(*args))


@pytest.mark.parametrize("pair", ["namedtuple", "dict"])
def test_a_scan_body_may_return_any_pytree_of_two_children(pair, ours, theirs, close):
    """JAX unpacks the body's output as (carry, y) from any node with two children: a
    namedtuple, or a dict (its keys in sorted order), not only a tuple or a list."""
    from collections import namedtuple

    Out = namedtuple("Out", "carry y")
    make = {"namedtuple": lambda c, y: Out(c, y), "dict": lambda c, y: {"a": c, "b": y}}[pair]

    def build(ns):
        return lambda c, xs: ns.cf.scan(lambda c, x: make(c + x, ns.jnp.sin(c)), c, xs)

    args = (F32(0.5), np.linspace(-1, 1, 5).astype(F32))
    close(build(ours)(*args), build(theirs)(*args))
    assert str(ours.make_jaxpr(build(ours))(*args)) == str(theirs.make_jaxpr(build(theirs))(*args))


def test_a_negative_length_traces_as_jaxs_but_is_refused_when_run(ours, theirs):
    def build(ns):
        return lambda: ns.cf.scan(lambda c, x: (c + 1.0, c), 0.0, None, length=-1)

    assert str(ours.make_jaxpr(build(ours))()) == str(theirs.make_jaxpr(build(theirs))())
    with pytest.raises(Exception):  # noqa: B017, PT011  (an MLIRError: no f32[-1] compiles)
        build(theirs)()
    with pytest.raises(ValueError, match=r"^scan got a negative length: -1$"):
        build(ours)()


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("y, init", [(2.0, F32(0)), (3, np.int32(0)), (True, np.int32(0)),
                                     (0.5, F32(0))], ids=["float", "int", "bool", "half"])
def test_ys_have_the_dtype_of_the_bodys_out_avals_not_of_python_scalars(
        y, init, reverse, ours, theirs, close):
    # a y that is a Python scalar is weakly typed in the body's jaxpr (f32[] for a float), so
    # the stacked ys are float32, not numpy's float64 for a list of Python floats
    def build(ns):
        return lambda c, xs: ns.cf.scan(lambda c, x: (c + 1, y), c, xs, reverse=reverse)

    args = (init, np.arange(3, dtype=F32))
    close(build(ours)(*args), build(theirs)(*args))
    assert np.asarray(build(ours)(*args)[1]).dtype == build(theirs)(*args)[1].dtype


@pytest.mark.parametrize("xs", [np.arange(3, dtype=F32), np.arange(3.0)], ids=["f32", "f64"])
def test_a_y_that_is_its_x_comes_back_as_an_array_as_jax(xs, ours, theirs):
    # the forwarded y never enters the loop; it is xs itself, made an array as the loop's are
    got = ours.cf.scan(lambda c, x: (c + x, x), 0.0, xs)[1]
    want = theirs.cf.scan(lambda c, x: (c + x, x), 0.0, xs)[1]
    assert isinstance(got, Array)
    assert (got.dtype, got.weak_type) == (want.dtype, want.weak_type)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_scan_impl_runs_the_body_jaxpr_once_per_step():
    from stages.s02_tracing import make_jaxpr

    closed = make_jaxpr(lambda xs: s06.scan(lambda c, x: (c + x, c), F32(0), xs))(
        np.ones(5, F32))
    (eqn,) = closed.eqns
    carry, ys = s06.scan_p.impl(F32(1.0), np.arange(5, dtype=F32), **eqn.params)
    assert float(carry) == 11.0
    np.testing.assert_array_equal(ys, [1.0, 1.0, 2.0, 4.0, 7.0])


@pytest.mark.parametrize("index, expected", [(-5, 2.0), (0, 2.0), (1, 10.0), (100, 10.0)])
def test_switch_clamps_out_of_range_indices(index, expected, ours, theirs):
    def build(ns):
        return ns.cf.switch(index, [lambda x: x + 1.0, lambda x: x * 10.0], 1.0)

    assert float(build(ours)) == float(build(theirs)) == expected


def test_cond_accepts_a_numeric_predicate_and_the_operand_keyword(ours, theirs):
    for ns in (ours, theirs):
        assert float(ns.cf.cond(3, lambda x: x + 1.0, lambda x: x, 1.0)) == 2.0
        assert float(ns.cf.cond(0.0, lambda x: x + 1.0, lambda x: x, operand=1.0)) == 1.0


def test_while_impl_with_a_batched_predicate_updates_only_running_lanes():
    from stages.s02_tracing import make_jaxpr

    closed = make_jaxpr(lambda c: s06.while_loop(lambda c: c < 10.0, lambda c: c * 2.0, c))(
        F32(1.0))
    (eqn,) = closed.eqns
    # the same loop with its predicate batched by hand: one bool per example
    from stages.s05_vmap import vmap

    batched = make_jaxpr(vmap(lambda c: s06.while_loop(lambda c: c < 10.0,
                                                       lambda c: c * 2.0, c)))(np.ones(3, F32))
    (beqn,) = batched.eqns
    assert beqn.params["cond_jaxpr"].out_avals[0].shape == (3,)
    (out,) = s06.while_p.impl(np.array([1.0, 3.0, 12.0], F32), **beqn.params)
    np.testing.assert_array_equal(out, [16.0, 12.0, 12.0])
    assert eqn.params["cond_jaxpr"].out_avals[0].shape == ()


@pytest.mark.parametrize("index", [-5, -1, 0, 1, 2, 3, 9])
def test_cond_p_bound_directly_runs_the_last_branch_for_any_out_of_range_index(index):
    # XLA's Conditional: an index outside [0, n) runs branch n-1, even a negative one
    import jax
    from jax._src.lax.control_flow.conditionals import cond_p as jax_cond_p

    from stages.s02_tracing import make_jaxpr

    scales = (1.0, 10.0, 100.0)
    ours = tuple(make_jaxpr(lambda x, k=k: x * k)(F32(1.0)) for k in scales)
    theirs = tuple(jax.make_jaxpr(lambda x, k=k: x * k)(F32(1.0)) for k in scales)
    (ours_out,) = s06.cond_p.bind(np.int32(index), F32(1.0), branches=ours)
    (jax_out,) = jax_cond_p.bind(np.int32(index), F32(1.0), branches=theirs)
    assert float(ours_out) == float(jax_out) == (scales[index] if 0 <= index < 3 else 100.0)


@pytest.mark.parametrize("lower, upper", [(0, 4), (2, 5), (3, 3), (5, 1), (-2, 2)])
def test_fori_loop_with_traced_bounds_runs_the_while_to_jaxs_numbers(lower, upper):
    # traced bounds make a while equation; ours is run by evaluating the jaxpr, JAX's by jit
    import jax

    from stages.s02_tracing import eval_jaxpr, make_jaxpr

    def build(ns_lax):
        return lambda lo, hi, x: ns_lax.fori_loop(lo, hi, lambda i, c: c * 1.5 + i, x)

    args = (np.int32(lower), np.int32(upper), F32(0.5))
    closed = make_jaxpr(build(s06))(*args)
    assert [e.primitive.name for e in closed.eqns] == ["while"]
    (ours_out,) = eval_jaxpr(closed.jaxpr, closed.consts, *args)
    jax_out = jax.jit(build(jax.lax))(*args)
    np.testing.assert_allclose(ours_out, jax_out, rtol=1e-6)
    assert np.asarray(ours_out).dtype == jax_out.dtype
