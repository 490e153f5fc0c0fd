"""Finite differences at first and second order (grad of grad) with shared/check_grads.py."""

from __future__ import annotations

import pytest

from shared.check_grads import check_grads
from shared.corpus_s02 import CASES
from stages.s04_autodiff import custom_jvp

CORPUS_SMOOTH = ["sin_times_two", "unary_chain", "integer_pow_and_erf", "closure_constants",
                 "softmax_by_hand", "jnp_mlp_layer", "batched_dot_general", "pad_and_concatenate",
                 "reshape_transpose_squeeze", "weak_typed_argument"]


@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("name", CORPUS_SMOOTH)
def test_corpus_functions_pass_check_grads(name, order, ours, helpers):
    (case,) = [c for c in CASES if c.name == name]
    f, args = helpers.dynamic(case, ours.lax, ours.jnp)
    check_grads(f, args, order, modes=("fwd", "rev"))


def test_check_grads_catches_a_wrong_derivative(ours):
    lax = ours.lax

    @custom_jvp
    def wrong_sin(x):
        return lax.sin(x)

    wrong_sin.defjvp(lambda p, t: (wrong_sin(p[0]), lax.mul(lax.sin(p[0]), t[0])))  # not cos
    with pytest.raises(AssertionError):
        check_grads(wrong_sin, (0.3,), 1, modes=("fwd",))
    with pytest.raises(AssertionError):
        check_grads(wrong_sin, (0.3,), 1, modes=("rev",))


def test_check_grads_catches_a_wrong_second_derivative(ours):
    lax = ours.lax

    @custom_jvp
    def three_x_squared(x):
        return lax.mul(3.0, lax.mul(x, x))

    # wrong: the derivative of 3x**2 is 6x, not 0
    three_x_squared.defjvp(lambda p, t: (three_x_squared(p[0]), lax.mul(0.0, t[0])))

    @custom_jvp
    def cube(x):
        return lax.mul(x, lax.mul(x, x))

    # right first derivative, built on a function whose own derivative is wrong
    cube.defjvp(lambda p, t: (cube(p[0]), lax.mul(three_x_squared(p[0]), t[0])))
    check_grads(cube, (0.7,), 1)
    with pytest.raises(AssertionError):
        check_grads(cube, (0.7,), 2)
