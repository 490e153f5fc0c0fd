"""The backward pass: a forward scan, then a reverse walk that sums cotangents as they arrive;
and every transpose rule against jax.linear_transpose."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from stages.s02_tracing import core, make_jaxpr
from stages.s02_tracing import lax as olax
from stages.s04_autodiff import ad, ad_util, custom_vjp, grad, linear_transpose, vjp

pytestmark = pytest.mark.oracle
rng = np.random.default_rng(7)


def _f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def test_a_value_used_twice_gets_two_cotangents_summed():
    # y = sin(x) * x: x reaches the output through sin and directly, so two contributions
    _, f_vjp = vjp(lambda x: olax.mul(olax.sin(x), x), 0.5)
    linear = f_vjp.jaxpr
    x_var = linear.jaxpr.invars[0]
    log = []
    (ct_x,) = ad.backward_pass(linear.jaxpr, linear.consts, [ad.UndefinedPrimal(x_var.aval)],
                               [np.float32(1.0)], on_accumulate=lambda *entry: log.append(entry))
    into_x = [(prim, ct, total) for prim, v, ct, total in log if v is x_var]
    assert [str(prim) for prim, _, _ in into_x] == ["mul", "mul"]
    first, second = into_x
    assert first[2] is first[1]  # the first arrival is the running total
    np.testing.assert_allclose(second[2], first[1] + second[1], rtol=1e-6)
    np.testing.assert_allclose(ct_x, np.cos(0.5) * 0.5 + np.sin(0.5), rtol=1e-6)


def test_backward_pass_on_a_hand_written_linear_function():
    closed = make_jaxpr(lambda t: olax.add(olax.mul(t, 3.0), t))(1.0)
    (ct,) = ad.backward_pass(closed.jaxpr, closed.consts,
                             [ad.UndefinedPrimal(core.get_aval(1.0))], [np.float32(1.0)])
    assert ct == 4.0  # jax.linear_transpose(lambda x: 3.0 * x + x, 1.0)(1.0) is 4.0 too


def test_an_equation_whose_output_gets_no_cotangent_is_skipped():
    # sin has no transpose rule, but nothing flows back through the unused sin(t)
    closed = make_jaxpr(lambda t: (olax.mul(t, 2.0), olax.sin(t)))(1.0)
    cts = ad.backward_pass(closed.jaxpr, closed.consts,
                           [ad.UndefinedPrimal(core.get_aval(1.0))],
                           [np.float32(1.0), ad_util.Zero(core.get_aval(1.0))])
    assert cts == [2.0]



def test_a_multi_output_equation_with_one_cotangent_still_transposes():
    # custom_lin has two tangent outputs; only the first gets a cotangent, yet bwd must run
    def f(lax, custom_vjp):
        g = custom_vjp(lambda x: (lax.sin(x), lax.cos(x)))
        g.defvjp(lambda x: ((lax.sin(x), lax.cos(x)), x),
                 lambda x, cts: (lax.add(lax.mul(cts[0], 2.0), lax.mul(cts[1], 3.0)),))
        return lambda x: g(x)[0]

    x = np.float32(0.5)
    got = grad(f(olax, custom_vjp))(x)
    want = jax.grad(f(jax.lax, jax.custom_vjp))(x)
    assert float(got) == float(want) == 2.0

LINEAR = {
    "dot_batch": (lambda lax, a, b: lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))),
                  (_f32(2, 3, 4), _f32(2, 4, 5)), 0),
    # batch axes neither leading nor in the same place: ct's batch axes still come first
    "dot_batch_inner": (lambda lax, a, b: lax.dot_general(a, b, (((0,), (2,)), ((2,), (0,)))),
                        (_f32(4, 3, 2), _f32(2, 5, 4)), 0),
    "dot_rhs": (lambda lax, b, a: lax.dot_general(a, b, (((0,), (1,)), ((), ()))),
                (_f32(4, 5), _f32(5, 3)), 0),
    "dot_permuted": (lambda lax, a, b: lax.dot_general(a, b, (((0, 2), (2, 0)), ((), ()))),
                     (_f32(3, 5, 4), _f32(4, 6, 3)), 0),
    "pad_interior": (lambda lax, x: lax.pad(x, np.float32(0), ((1, -1, 2), (0, 2, 1))),
                     (_f32(3, 4),), None),
    "slice_strided": (lambda lax, x: lax.slice(x, (1, 0), (6, 5), (2, 3)), (_f32(6, 5),), None),
    "concatenate": (lambda lax, x, y: lax.concatenate([y, x, y], 1), (_f32(2, 3), _f32(2, 1)),
                    0),
    "dynamic_update_slice": (lambda lax, x, u: lax.dynamic_update_slice(x, u, (1, 2)),
                             (_f32(4, 5), _f32(2, 2)), None),
    "dynamic_slice": (lambda lax, x: lax.dynamic_slice(x, (2, 1), (2, 3)), (_f32(4, 5),), None),
    "cumsum_reverse": (lambda lax, x: lax.cumsum(x, 1, reverse=True), (_f32(3, 4),), None),
    "reshape_transpose": (lambda lax, x: lax.transpose(lax.reshape(x, (4, 6)), (1, 0)),
                          (_f32(2, 3, 4),), None),
    "broadcast_size_one": (lambda lax, x: lax.broadcast_in_dim(x, (2, 3, 4), (0, 2)),
                           (_f32(1, 4),), None),
    "reduce_and_squeeze": (lambda lax, x: lax.squeeze(lax.reduce_sum(x, (1,)), (0,)),
                           (_f32(1, 5, 2),), None),
    "select_and_scalar_add": (lambda lax, x: lax.add(
        lax.select(lax.gt(np.arange(3.0, dtype=np.float32), 1.0), x, lax.neg(x)), 2.0),
        (_f32(3),), None),
    "convert_and_div": (lambda lax, x: lax.div(lax.convert_element_type(x, np.float32), 4.0),
                        (_f32(3),), None),
    "mul_rank0_operand": (lambda lax, x, y: lax.mul(x, y), (np.float32(1.5), _f32(2, 3)), 0),
}


@pytest.mark.parametrize("name", sorted(LINEAR))
def test_transpose_rules_match_jax_linear_transpose(name, helpers):
    fn, args, fixed = LINEAR[name]
    if fixed is not None:
        # linear in all but one argument: close over the other (linear in one operand only)
        other = args[1 - fixed]
        args = (args[fixed],)

        def f_ours(x):
            return fn(olax, x, other)

        def f_theirs(x):
            return fn(jax.lax, x, other)
    else:
        def f_ours(*xs):
            return fn(olax, *xs)

        def f_theirs(*xs):
            return fn(jax.lax, *xs)

    out = jax.eval_shape(f_theirs, *args)
    ct = rng.standard_normal(out.shape).astype(np.float32)
    transposed = linear_transpose(f_ours, *args)
    helpers.assert_trees_close(transposed(ct), jax.linear_transpose(f_theirs, *args)(ct),
                               rtol=helpers.rtol_for(transposed, ct))
