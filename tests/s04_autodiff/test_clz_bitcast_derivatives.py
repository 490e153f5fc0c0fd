"""The derivatives of clz and bitcast_convert_type, against JAX's: both are zero.

clz's output is an integer (its tangent a float0 zero); a bitcast reinterprets bits, which no
small change of the input moves smoothly. So a function that uses them differentiates only
through its other operations, and the jaxprs print as JAX's.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import stages.s02_tracing as s02
import stages.s04_autodiff as s04
from shared.testing import assert_same_typed_values

pytestmark = pytest.mark.oracle

I = np.array([0, 1, -1, 7, 2**20, -(2**31)], np.int32)
X = np.array([1.5, -2.0, 3e-30, 0.0, 1e30, -7.25], np.float32)


def _scaled_by_clz(lax):
    # x times the leading zeros of its own bits: d/dx is that count
    return lambda x: x * lax.convert_element_type(
        lax.clz(lax.bitcast_convert_type(x, np.int32)), np.float32)


def _times_next_float(lax):
    # x times the float after it, found by adding 1 to its bits: d/dx is that next float
    return lambda x: x * lax.bitcast_convert_type(
        lax.bitcast_convert_type(x, np.int32) + np.int32(1), np.float32)


def test_jvp_of_clz_is_a_float0_zero_as_jaxs():
    float0 = np.zeros(I.shape, jax.dtypes.float0)
    assert_same_typed_values(s04.jvp(s02.lax.clz, (I,), (float0,)),
                             jax.jvp(jax.lax.clz, (I,), (float0,)))
    for dtype in (np.uint8, np.int16):
        x = I.astype(dtype)
        zeros = np.zeros(x.shape, jax.dtypes.float0)
        assert_same_typed_values(s04.jvp(s02.lax.clz, (x,), (zeros,)),
                                 jax.jvp(jax.lax.clz, (x,), (zeros,)))


def test_jvp_of_a_bitcast_is_zero_either_way_as_jaxs():
    to_int = (lambda lax: lambda x: lax.bitcast_convert_type(x, np.int32))
    assert_same_typed_values(s04.jvp(to_int(s02.lax), (X,), (X,)),
                             jax.jvp(to_int(jax.lax), (X,), (X,)))
    to_float = (lambda lax: lambda i: lax.bitcast_convert_type(i, np.float32))
    float0 = np.zeros(I.shape, jax.dtypes.float0)
    assert_same_typed_values(s04.jvp(to_float(s02.lax), (I,), (float0,)),
                             jax.jvp(to_float(jax.lax), (I,), (float0,)))


@pytest.mark.parametrize("make", [_scaled_by_clz, _times_next_float],
                         ids=["scaled_by_clz", "times_next_float"])
def test_derivatives_flow_only_around_them_as_in_jax(make):
    dx = np.linspace(-1, 1, X.size).astype(np.float32)
    assert_same_typed_values(s04.jvp(make(s02.lax), (X,), (dx,)),
                             jax.jvp(make(jax.lax), (X,), (dx,)))
    for x in (np.float32(1.5), np.float32(-3.0), np.float32(0.1)):
        assert_same_typed_values(s04.grad(make(s02.lax))(x), jax.grad(make(jax.lax))(x))


def test_the_derivative_is_the_count_itself():
    # independent of JAX: d/dx x * clz(bits(x)) = clz(bits(x)), where x = 1.5 has 2 zeros
    assert s04.grad(_scaled_by_clz(s02.lax))(np.float32(1.5)) == 2.0
    assert s04.grad(_scaled_by_clz(s02.lax))(np.float32(-1.5)) == 0.0  # the sign bit is set


@pytest.mark.parametrize("make", [_scaled_by_clz, _times_next_float],
                         ids=["scaled_by_clz", "times_next_float"])
def test_the_jvp_and_grad_jaxprs_print_as_jaxs(make):
    ours = s02.make_jaxpr(lambda x, t: s04.jvp(make(s02.lax), (x,), (t,)))(X, X)
    theirs = jax.make_jaxpr(lambda x, t: jax.jvp(make(jax.lax), (x,), (t,)))(X, X)
    assert str(ours) == str(theirs)
    ours = s02.make_jaxpr(s04.grad(make(s02.lax)))(np.float32(1.5))
    theirs = jax.make_jaxpr(jax.grad(make(jax.lax)))(np.float32(1.5))
    assert str(ours) == str(theirs)


def test_both_have_a_jvp_rule_and_no_transpose_rule():
    for p in (s02.lax.clz_p, s02.lax.bitcast_convert_type_p):
        assert p in s04.ad.primitive_jvps
        assert p not in s04.ad.primitive_transposes
