"""The jaxprs: one equation per construct, bodies as parameters, printed exactly as JAX prints.

Each case is built twice (ours, JAX) and the printed jaxprs compared character for character,
nested jaxprs in the params included.
"""

from __future__ import annotations

import numpy as np
import pytest

import stages.s06_control_flow as s06
from stages.s02_tracing import make_jaxpr
from stages.s02_tracing import numpy as jnp

C = np.array([1.0, 2.0, 3.0], np.float32)
NP_XS = np.arange(5, dtype=np.float32)


def f32(*shape):
    return np.ones(shape, np.float32)


PRINTED = {
    "cond": (lambda n: lambda p, x: n.cf.cond(p, lambda x: x + 1.0, lambda x: x - 1.0, x),
             (True, 1.0)),
    "cond_closes_over_an_array": (lambda n: lambda p, x: n.cf.cond(
        p, lambda x: x + C, lambda x: x - 1.0, x), (True, f32(3))),
    "cond_forwarded_output_is_pruned": (lambda n: lambda p, x, y: n.cf.cond(
        p, lambda x, y: (x, y * 2.0), lambda x, y: (x, y), x, y), (True, 1.0, 2.0)),
    "cond_old_five_argument_form": (lambda n: lambda p, x, y: n.cf.cond(
        p, x, lambda x: x + 1.0, y, lambda y: y * 3.0), (True, 1.0, 2.0)),
    "switch_clamps_its_index": (lambda n: lambda i, x: n.cf.switch(
        i, [lambda x: x + 1.0, lambda x: x - 1.0, n.jnp.sin], x), (1, 1.0)),
    "scan_weak_init": (lambda n: lambda xs: n.cf.scan(
        lambda c, x: (c + x * c, c * 2.0), 0.0, xs), (f32(3),)),
    "scan_array_carry": (lambda n: lambda xs: n.cf.scan(
        lambda c, x: (c + x * c[0], c * 2.0), n.jnp.zeros(3), xs), (f32(3),)),
    "scan_reverse_unroll": (lambda n: lambda xs: n.cf.scan(
        lambda c, x: (n.jnp.sin(c) + x, c), 0.0, xs, reverse=True, unroll=2), (f32(4),)),
    "scan_unroll_true_is_length": (lambda n: lambda xs: n.cf.scan(
        lambda c, x: (c + x, c), 0.0, xs, unroll=True), (f32(3),)),
    "scan_closure_is_a_const": (lambda n: lambda w, xs: n.cf.scan(
        lambda c, x: (c * w + x, c), w, xs), (2.0, f32(3))),
    "scan_unchanged_carry_becomes_a_const": (lambda n: lambda w, xs: n.cf.scan(
        lambda c, x: ((c[0], c[1] + x * c[0]), c[1]), (w, w), xs), (2.0, f32(3))),
    "scan_y_that_is_an_x_is_forwarded": (lambda n: lambda xs: n.cf.scan(
        lambda c, x: (c + x, x), 0.0, xs), (f32(3),)),
    "while_closes_over_an_array": (lambda n: lambda x: n.cf.while_loop(
        lambda c: c < 10.0, lambda c: c * 2.0 + x[0], 1.0), (f32(3),)),
    "while_unchanged_carry_becomes_a_body_const": (lambda n: lambda x, y: n.cf.while_loop(
        lambda c: c[0] < 10.0, lambda c: (c[0] * c[1], c[1]), (x, y)), (1.0, 2.0)),
    "fori_concrete_bounds_is_a_scan": (lambda n: lambda x: n.cf.fori_loop(
        0, 3, lambda i, c: c * 2.0, x), (1.0,)),
    "fori_traced_bounds_is_a_while": (lambda n: lambda k, x: n.cf.fori_loop(
        0, k, lambda i, c: c * 2.0, x), (3, 1.0)),
    # unroll=False (and True, which equals 1) is no unrolling: traced bounds still allow it
    "fori_traced_bounds_unroll_false_is_a_while": (lambda n: lambda k: n.cf.fori_loop(
        0, k, lambda i, c: c + i, 0, unroll=False), (5,)),
    "fori_traced_bounds_unroll_true_is_a_while": (lambda n: lambda k: n.cf.fori_loop(
        0, k, lambda i, c: c + i, 0, unroll=True), (5,)),
    "fori_upper_below_lower_is_a_scan_of_length_0": (lambda n: lambda x: n.cf.fori_loop(
        5, 2, lambda i, c: c * 2.0, x), (1.0,)),
    "fori_python_int_upper_takes_the_lower_bounds_dtype": (lambda n: lambda k, x: n.cf.fori_loop(
        k, 4, lambda i, c: c * 2.0, x), (np.int16(1), 1.0)),
    "fori_python_int_lower_takes_the_upper_bounds_dtype": (lambda n: lambda k, x: n.cf.fori_loop(
        0, k, lambda i, c: c * 2.0, x), (np.int16(3), 1.0)),
    # concrete bounds count with a Python int (a weak int32), whatever type the bounds had
    "fori_concrete_numpy_bounds_count_with_a_python_int": (lambda n: lambda x: n.cf.fori_loop(
        np.int16(1), np.int16(4), lambda i, c: c + i, x), (1.0,)),
    "map": (lambda n: lambda x: n.cf.map(n.jnp.sin, x), (f32(3),)),
    "vmap_cond_batched_predicate_is_select_n": (lambda n: n.vmap(
        lambda p, x, y: n.cf.cond(p, lambda x, y: n.jnp.sin(y), lambda x, y: x, x, y)),
        (np.array([True, False]), f32(2), f32(2))),
    "vmap_cond_unbatched_predicate_stays_cond": (lambda n: n.vmap(
        lambda p, x: n.cf.cond(p, n.jnp.sin, n.jnp.cos, x), in_axes=(None, 0)), (True, f32(2))),
    "vmap_scan": (lambda n: n.vmap(lambda x: n.cf.scan(
        lambda c, y: (c * y, c + y), x, n.jnp.arange(3.0))), (f32(2),)),
    "vmap_while_batched_predicate": (lambda n: n.vmap(lambda x: n.cf.while_loop(
        lambda c: c < 10.0, lambda c: c * 2.0, x)), (f32(3),)),
    "vmap_while_unbatched_predicate": (lambda n: n.vmap(lambda k, x: n.cf.while_loop(
        lambda c: c[0] < k, lambda c: (c[0] + 1, c[1] * 2.0), (0, x)), in_axes=(None, 0)),
        (3, f32(3))),
    "vmap_fori_batched_bound": (lambda n: n.vmap(lambda k, x: n.cf.fori_loop(
        0, k, lambda i, c: c * 2.0, x)), (np.array([1, 2, 3], np.int32), f32(3))),
    "jvp_scan": (lambda n: lambda x, t: n.jvp(lambda x: n.cf.scan(
        lambda c, y: (c * y, c), x, n.jnp.arange(3.0)), (x,), (t,)), (1.0, 1.0)),
    "jvp_cond": (lambda n: lambda p, x, t: n.jvp(lambda x: n.cf.cond(
        p, n.jnp.sin, n.jnp.cos, x), (x,), (t,)), (True, 1.0, 1.0)),
    "jvp_while": (lambda n: lambda x, t: n.jvp(lambda x: n.cf.while_loop(
        lambda c: c < 10.0, lambda c: c * 2.0, x), (x,), (t,)), (1.0, 1.0)),
    # a numpy xs is no forwarded residual: the known scan stacks its slices anew
    "grad_scan_numpy_xs_is_stacked_as_a_residual": (lambda n: n.grad(lambda c: n.cf.scan(
        lambda c, x: (c * x, None), c, NP_XS)[0]), (np.float32(0.3),)),
    "linearize_scan_numpy_xs_is_stacked_as_a_residual": (lambda n: lambda c: n.linearize(
        lambda c: n.cf.scan(lambda c, x: (c * x, None), c, NP_XS)[0], c)[1](c),
        (np.float32(0.3),)),
    "grad_scan_traced_xs_is_forwarded": (lambda n: n.grad(lambda c, xs: n.cf.scan(
        lambda c, x: (c * x, None), c, xs)[0]), (np.float32(0.3), NP_XS)),
    # the transposed scan is unrolled as the scan it transposes
    "grad_scan_keeps_its_unroll": (lambda n: n.grad(lambda xs: n.cf.scan(
        lambda c, x: (c * x, c), 1.0, xs, unroll=2)[0]), (f32(4),)),
}


@pytest.mark.parametrize("name", list(PRINTED))
def test_printed_jaxpr_equals_jaxs(name, ours, theirs):
    build, args = PRINTED[name]
    assert str(ours.make_jaxpr(build(ours))(*args)) == str(theirs.make_jaxpr(build(theirs))(*args))


def _scan_eqns(length: int, make_jaxpr) -> int:
    body = lambda c, x: (c * 0.5 + jnp.sin(x), c)  # noqa: E731
    return len(make_jaxpr(lambda xs: s06.scan(body, 0.0, xs))(np.ones(length, np.float32)).eqns)


def test_a_10000_step_scan_has_as_many_equations_as_a_10_step_one():
    assert _scan_eqns(10, make_jaxpr) == _scan_eqns(10_000, make_jaxpr) == 1


def test_a_python_loop_unrolls_into_one_equation_group_per_iteration():
    def unrolled(c, xs):
        for x in xs:
            c = c * 0.5 + jnp.sin(x)
        return c

    def eqns(n: int) -> int:
        return len(make_jaxpr(unrolled)(0.0, np.ones(n, np.float32)).eqns)

    per_iteration = eqns(11) - eqns(10)
    assert per_iteration > 0
    assert eqns(100) - eqns(10) == 90 * per_iteration


def test_the_body_hangs_on_the_equation_as_a_closed_jaxpr_param():
    closed = make_jaxpr(lambda xs: s06.scan(lambda c, x: (c + x, c), np.float32(0), xs))(f32(4))
    (eqn,) = closed.eqns
    assert eqn.primitive is s06.scan_p
    assert sorted(eqn.params) == ["jaxpr", "length", "num_carry", "num_consts", "reverse",
                                  "unroll"]
    assert len(eqn.params["jaxpr"].eqns) == 1 and eqn.params["length"] == 4


def test_vmap_of_cond_with_a_batched_predicate_contains_select_n(ours):
    f = ours.vmap(lambda p, x: s06.cond(p, jnp.sin, jnp.cos, x))
    names = [e.primitive.name for e in make_jaxpr(f)(np.array([True, False]), f32(2)).eqns]
    assert "select_n" in names and "cond" not in names


def test_both_branches_are_traced_but_only_one_runs():
    traced = []

    def true_fun(x):
        traced.append("true")
        return x + 1.0

    def false_fun(x):
        traced.append("false")
        return x - 1.0

    assert float(s06.cond(True, true_fun, false_fun, 1.0)) == 2.0
    assert sorted(traced) == ["false", "true"]  # each traced once, whichever one runs
    traced.clear()
    make_jaxpr(lambda p, x: s06.cond(p, true_fun, false_fun, x))(True, 1.0)
    assert sorted(traced) == ["false", "true"]

    # what runs is seen by a primitive whose impl records each call: tracing never calls it
    from stages.s02_tracing.core import Primitive

    ran = []
    probe_p = Primitive("probe")
    probe_p.def_abstract_eval(lambda x, *, name: x)

    def probe_impl(x, *, name):
        ran.append(name)
        return x

    probe_p.def_impl(probe_impl)

    def probed(name, fun):
        return lambda x: fun(probe_p.bind(x, name=name))

    branches = (probed("true", true_fun), probed("false", false_fun))
    assert float(s06.cond(True, *branches, 1.0)) == 2.0
    assert ran == ["true"]
    ran.clear()
    assert float(s06.cond(False, *branches, 1.0)) == 0.0
    assert ran == ["false"]
    ran.clear()
    assert float(s06.switch(2, [probed(f"b{i}", lambda x: x) for i in range(3)], 1.0)) == 1.0
    assert ran == ["b2"]


def test_each_body_is_traced_once_however_many_iterations():
    calls = []

    def body(c, x):
        calls.append(1)
        return c + x, c

    s06.scan(body, np.float32(0.0), np.ones(1000, np.float32))
    assert len(calls) == 1
    calls.clear()
    s06.while_loop(lambda c: c < 100.0, lambda c: calls.append(1) or c + 1.0, np.float32(0))
    assert len(calls) == 1


def test_a_weak_init_that_changes_type_is_promoted_with_a_second_trace():
    calls = []

    def body(c, x):
        calls.append(c.dtype)
        return c + x, x

    carry, _ = s06.scan(body, 0, np.ones(3, np.float32))  # weak int32 in, float32 out
    assert calls == [np.dtype("int32"), np.dtype("float32")]
    assert carry.dtype == np.float32 and float(carry) == 3.0


@pytest.mark.parametrize("bounds, primitive", [((0, 3), "scan"), ((0, None), "while")])
def test_fori_loop_is_a_scan_for_concrete_bounds_and_a_while_otherwise(bounds, primitive):
    lower, upper = bounds

    def f(k, x):
        return s06.fori_loop(lower, k if upper is None else upper, lambda i, c: c * 2.0, x)

    (eqn,) = make_jaxpr(f)(3, 1.0).eqns
    assert eqn.primitive.name == primitive
