"""bfloat16 in stage 2, against JAX on CPU: printed jaxprs, eager values, conversions, printing.

The eager interpreter computes bfloat16 as XLA's CPU backend does: operands widened to float32
and the result rounded once. Ops whose float32 result is exact or correctly rounded (add, mul,
div, sqrt, conversions, max) then equal JAX's bit for bit; transcendentals, reductions and dots
may differ in float32's last bit (another approximation or summation order), which can move the
bfloat16 result by one ulp, so those are compared within one bfloat16 ulp.
"""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import ml_dtypes
import numpy as np
import pytest

from stages.s02_tracing import Array, make_jaxpr
from stages.s02_tracing import lax as olax
from stages.s02_tracing import numpy as onp

BF16 = np.dtype(ml_dtypes.bfloat16)
_rng = np.random.default_rng(7)
V = (_rng.standard_normal(64) * 3).astype(np.float32).astype(BF16)
POS = (np.abs(V.astype(np.float32)) + 0.25).astype(BF16)
A = _rng.standard_normal((8, 48)).astype(np.float32).astype(BF16)
B = _rng.standard_normal((48, 16)).astype(np.float32).astype(BF16)


def _bits(x) -> bytes:
    return np.asarray(x).tobytes()


def assert_within_ulps(ours, theirs, ulps: int = 1) -> None:
    """Same dtype and shape; values within `ulps` bfloat16 ulps of JAX's (NaNs where JAX's)."""
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert (ours.dtype, ours.shape) == (theirs.dtype, theirs.shape) == (BF16, theirs.shape)
    a, b = ours.astype(np.float32), theirs.astype(np.float32)
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    # a bfloat16 ulp at x is 2**(exponent(x) - 7); the smallest normal's ulp below it
    ulp = np.exp2(np.floor(np.log2(np.maximum(np.abs(b), 2.0**-126))) - 7)
    finite = ~np.isnan(b)
    assert np.all(np.abs(a - b)[finite] <= ulps * ulp[finite]), (a, b)


# ------------------------------------------------------------------ printed jaxprs

JAXPR_PROGRAMS = {
    "weak_scalars": lambda np_: lambda x: x * 2 + 1.5,
    "sum_in_float32": lambda np_: lambda x: np_.sum(x * 2) + 1,
    "mean": lambda np_: lambda x: np_.mean(x),
    "matmul": lambda np_: lambda x: np_.matmul(x.reshape(2, 3), x.reshape(3, 2)),
    "with_float16": lambda np_: lambda x: x + x.astype(np_.float16),
    "with_int32": lambda np_: lambda x: x + np_.arange(6),
    "astype": lambda np_: lambda x: x.astype(np_.float32) * 2,
    "constructor": lambda np_: lambda x: np_.bfloat16(2.5) * x,
    "arange": lambda np_: lambda x: np_.arange(3, dtype=np_.bfloat16),
    "maximum_sqrt": lambda np_: lambda x: np_.maximum(x, 0.5) - np_.sqrt(x),
    "max_prod": lambda np_: lambda x: np_.max(x) + np_.prod(x),
}


@pytest.mark.parametrize("name", JAXPR_PROGRAMS)
def test_jaxprs_of_bfloat16_programs_print_as_jax_prints_them(name):
    x = np.arange(6, dtype=np.float32).astype(BF16)
    build = JAXPR_PROGRAMS[name]
    ours = str(make_jaxpr(build(onp))(x))
    assert ours == str(jax.make_jaxpr(build(jjnp))(x))
    assert "bf16[" in ours


# ------------------------------------------------------------------ eager values

EXACT = {
    "add": lambda np_: np_.add(V, V[::-1]),
    "sub": lambda np_: np_.subtract(V, 0.3),
    "mul_weak": lambda np_: np_.asarray(V) * 3 + 1.5,
    "div": lambda np_: np_.divide(V, POS),
    "sqrt": lambda np_: np_.sqrt(POS),
    "neg_abs": lambda np_: -np_.abs(V),
    "maximum": lambda np_: np_.maximum(V, 0.0),
    "max": lambda np_: np_.max(V),
    "floor": lambda np_: np_.floor(V),
    "where": lambda np_: np_.where(np_.asarray(V) > 0, V, POS),
    "sort": lambda np_: np_.sort(V),
    "arange_div": lambda np_: np_.arange(5, dtype=np_.bfloat16) / 3,
    "integer_pow": lambda np_: np_.asarray(V) ** 5,  # each product rounded to bf16, as XLA's
}


@pytest.mark.parametrize("name", EXACT)
def test_correctly_rounded_bfloat16_ops_equal_jax_bit_for_bit(name):
    ours, theirs = EXACT[name](onp), EXACT[name](jjnp)
    assert type(ours) is Array and ours.dtype == theirs.dtype == BF16
    assert ours.weak_type == theirs.weak_type
    assert _bits(ours) == _bits(theirs)


NEAR = {
    "exp": lambda np_, lax: np_.exp(V),
    "tanh": lambda np_, lax: np_.tanh(V),
    "sin": lambda np_, lax: np_.sin(V),
    "log": lambda np_, lax: np_.log(POS),
    "erf": lambda np_, lax: lax.erf(np_.asarray(V)),
    "rsqrt": lambda np_, lax: lax.rsqrt(np_.asarray(POS)),
    "logistic": lambda np_, lax: lax.logistic(np_.asarray(V)),
    "sum": lambda np_, lax: np_.sum(V),
    "sum_axis": lambda np_, lax: np_.sum(A, axis=1),
    "mean": lambda np_, lax: np_.mean(A, axis=0),
    "var": lambda np_, lax: np_.var(V),
    "matmul": lambda np_, lax: np_.matmul(A, B),
    "dot": lambda np_, lax: np_.dot(A, B),
    "einsum": lambda np_, lax: np_.einsum("ij,jk->ik", A, B),
    "dot_general": lambda np_, lax: lax.dot_general(np_.asarray(A), np_.asarray(B),
                                                    (((1,), (0,)), ((), ()))),
}


@pytest.mark.parametrize("name", NEAR)
def test_bfloat16_transcendentals_reductions_and_dots_are_within_an_ulp_of_jax(name):
    ours, theirs = NEAR[name](onp, olax), NEAR[name](jjnp, jax.lax)
    assert type(ours) is Array and ours.weak_type == theirs.weak_type
    assert_within_ulps(ours, theirs)


def test_a_bfloat16_dot_accumulates_in_float32_and_rounds_once():
    # numpy's own bfloat16 loops round every partial sum: 256 of them drift by several ulps
    a = np.full((1, 256), 1.0 + 2.0**-7, BF16)
    b = np.ones((256, 1), BF16)
    ours, theirs = onp.matmul(a, b), jjnp.matmul(a, b)
    assert _bits(ours) == _bits(theirs) == _bits(np.array([[258.0]], BF16))
    wide = olax.dot_general(a, b, (((1,), (0,)), ((), ())), preferred_element_type=np.float32)
    assert wide.dtype == np.float32 and float(wide[0, 0]) == 256.0 + 2.0


# ------------------------------------------------------------------ conversions and printing


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "uint8", "int8", "bool"])
def test_conversions_to_and_from_bfloat16_equal_jax_bit_for_bit(dtype):
    edge = np.array([1e-40, 3.4e38, np.nan, -np.inf, 1.00390625, 1.01171875, -0.0, -2.5e9,
                     255.5, 0.1], np.float32)
    ours_bf, theirs_bf = onp.asarray(edge).astype(onp.bfloat16), jjnp.asarray(edge).astype(BF16)
    assert _bits(ours_bf) == _bits(theirs_bf)  # float32 -> bfloat16 rounds to nearest even
    assert _bits(ours_bf.astype(dtype)) == _bits(theirs_bf.astype(dtype))


def test_integers_reach_bfloat16_through_float32_as_on_xla_cpu():
    big = np.array([2**24 + 2**16 + 1, 16777217, 33554435, -(2**31), 2**31 - 1, 12345678],
                   np.int32)
    for dtype in (np.int32, np.uint32):
        x = big.astype(dtype)
        ours, theirs = onp.asarray(x).astype(onp.bfloat16), jjnp.asarray(x).astype(BF16)
        assert _bits(ours) == _bits(theirs)
    assert float(onp.asarray(big[:1]).astype(onp.bfloat16)[0]) == 2.0**24  # not 2**24 + 2**17


def test_bfloat16_arrays_print_as_jax_prints_them():
    x = np.array([1.5, 2.25, 3.0], BF16)
    for ours, theirs in [
        (onp.asarray(x), jjnp.asarray(x)),
        (onp.asarray(x)[0], jjnp.asarray(x)[0]),
        (onp.bfloat16(2.0) * 3, jjnp.bfloat16(2.0) * 3),
        (onp.arange(12).reshape(3, 4).astype(onp.bfloat16),
         jjnp.arange(12).reshape(3, 4).astype(jjnp.bfloat16)),
    ]:
        assert repr(ours) == repr(theirs)
        assert str(ours) == str(theirs)
    assert repr(onp.asarray(x)) == "Array([1.5, 2.25, 3], dtype=bfloat16)"


def test_jnp_bfloat16_is_a_dtype_and_a_constructor_as_in_jax():
    assert onp.bfloat16 == jjnp.bfloat16 == ml_dtypes.bfloat16
    assert np.dtype(onp.bfloat16) == BF16 and onp.bfloat16.dtype == BF16
    assert onp.zeros(2, onp.bfloat16).dtype == BF16
    y = onp.bfloat16(0.1)
    assert (y.dtype, y.weak_type, _bits(y)) == (BF16, False, _bits(jjnp.bfloat16(0.1)))


@pytest.mark.parametrize("op", ["erf", "tanh", "logistic", "rsqrt", "exp", "log", "sin",
                                "floor", "round", "is_finite"])
def test_float_only_lax_ops_accept_bfloat16(op):
    x = onp.asarray(POS)
    ours = getattr(olax, op)(x)
    theirs = getattr(jax.lax, op)(jjnp.asarray(POS))
    assert ours.dtype == theirs.dtype
    assert str(make_jaxpr(getattr(olax, op))(POS)) == str(jax.make_jaxpr(getattr(jax.lax, op))(POS))
