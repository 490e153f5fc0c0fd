"""lax called eagerly on numpy inputs: values and dtypes equal jax.lax's (float32 tolerance)."""

from __future__ import annotations

import re

import jax
import numpy as np
import pytest
from jax import lax as jlax

from shared.testing import RTOL_ELEMENTWISE, RTOL_REDUCTION
from stages.s02_tracing import Array, core, lax, make_jaxpr

rng = np.random.default_rng(0)
X = rng.standard_normal((3, 4)).astype(np.float32)
Y = rng.standard_normal((3, 4)).astype(np.float32)
POS = (rng.random((3, 4)) + 0.25).astype(np.float32)
UNIT = (rng.random((3, 4)) * 1.8 - 0.9).astype(np.float32)  # inside (-1, 1)
I = rng.integers(-7, 8, size=(3, 4)).astype(np.int32)
J = rng.integers(1, 5, size=(3, 4)).astype(np.int32)
U = rng.integers(0, 2**32, size=(3, 4), dtype=np.uint64).astype(np.uint32)
B = rng.random((3, 4)) > 0.5


def same(name: str, *args, rtol: float = RTOL_ELEMENTWISE, **kwargs) -> Array:
    """Call lax.<name> on ours and on jax; the results must agree in dtype, weak type, shape and
    value (both are eager Arrays)."""
    ours = getattr(lax, name)(*args, **kwargs)
    their_array = getattr(jlax, name)(*args, **kwargs)
    theirs = np.asarray(their_array)
    assert isinstance(ours, Array), type(ours)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, (ours, theirs)
    assert ours.weak_type == their_array.weak_type, (ours, their_array)
    if np.issubdtype(ours.dtype, np.inexact):
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=1e-6)
    else:
        np.testing.assert_array_equal(ours, theirs)
    return ours


@pytest.mark.parametrize(
    "name, x",
    [("neg", X), ("neg", I), ("sin", X), ("cos", X), ("tan", UNIT), ("exp", X), ("log", POS),
     ("log1p", POS), ("tanh", X), ("logistic", X), ("logistic", X * 60), ("sqrt", POS),
     ("rsqrt", POS), ("abs", X), ("abs", I), ("sign", X), ("sign", I), ("floor", X * 3),
     ("ceil", X * 3), ("round", X * 3), ("erf", X), ("bitwise_not", I), ("bitwise_not", B),
     ("bitwise_not", U)],
)
def test_unary_ops_match_jax(name, x):
    same(name, x)


def test_round_breaks_ties_away_from_zero_or_to_even():
    halves = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5], np.float32)
    np.testing.assert_array_equal(same("round", halves), [-3, -2, -1, 1, 2, 3])
    # exact: just under a half, and odd integers above 2**23 where |x| + 0.5 would round
    near = np.array([0.49999997, -0.49999997, 8388609.0, -8388611.0, np.inf, np.nan], np.float32)
    np.testing.assert_array_equal(same("round", near), [0, -0.0, 8388609, -8388611, np.inf,
                                                         np.nan])
    same("round", np.array([0.4998, 1.5, -2.5], np.float16))
    even = same("round", halves, lax.RoundingMethod.TO_NEAREST_EVEN)
    np.testing.assert_array_equal(even, [-2, -2, -0, 0, 2, 2])


def test_abs_of_complex_is_real():
    z = (X + 1j * Y).astype(np.complex64)
    assert same("abs", z).dtype == np.float32


@pytest.mark.parametrize(
    "name, x, y",
    [("add", X, Y), ("add", I, J), ("sub", X, Y), ("mul", X, Y), ("mul", I, J), ("div", X, POS),
     ("div", I, J), ("div", -I, J), ("rem", X, POS), ("rem", I, J), ("pow", POS, Y),
     ("pow", POS, J), ("max", X, Y), ("min", I, J), ("max", B, ~B), ("eq", I, J), ("ne", X, Y),
     ("lt", X, Y), ("le", I, J), ("gt", X, Y), ("ge", B, ~B), ("bitwise_and", I, J),
     ("bitwise_or", U, U >> 3), ("bitwise_xor", B, ~B), ("shift_left", I, J),
     ("shift_right_logical", I, J), ("shift_right_logical", U, U % 40),
     ("shift_right_arithmetic", I, J), ("shift_left", U, U % 40),
     # unsigned too: the top bit is copied (uint8 128 >> 1 is 192)
     ("shift_right_arithmetic", U, U % 40),
     ("shift_right_arithmetic", np.array([128, 255, 7], np.uint8), np.array([1, 9, 1], np.uint8))],
)
def test_binary_ops_match_jax(name, x, y):
    same(name, x, y)


def test_clamp_matches_jax_with_scalar_and_array_bounds():
    x = np.array([-3.0, -0.5, 0.25, 2.0, np.inf], np.float32)
    np.testing.assert_array_equal(same("clamp", np.float32(-1), x, np.float32(1)),
                                  [-1.0, -0.5, 0.25, 1.0, 1.0])
    lo = np.array([0.0, -1.0, 0.5, 3.0, 0.0], np.float32)
    same("clamp", lo, x, np.full(5, 2.5, np.float32))
    same("clamp", np.int32(0), np.array([-5, 2, 9], np.int32), np.int32(4))


def test_shifts_past_the_bit_width_follow_xla():
    x = np.array([-8, -1, 1, 7], np.int32)
    for shift in (31, 32, 33, 100):
        y = np.full(4, shift, np.int32)
        for name in ("shift_left", "shift_right_logical", "shift_right_arithmetic"):
            same(name, x, y)


INT_DTYPES = [np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32]


def _every_pair(dtype) -> tuple[np.ndarray, np.ndarray]:
    """x and y running over every pair of edge values of an integer dtype (0, ±1, MIN, MAX...)."""
    info = np.iinfo(dtype)
    values = [0, 1, 2, 3, 7, info.max - 1, info.max, info.min, info.min + 1]
    if info.min < 0:
        values += [-1, -2, -7]
    x, y = np.meshgrid(np.array(values, dtype), np.array(values, dtype))
    return x.ravel(), y.ravel()


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_integer_div_and_rem_follow_xla_at_zero_and_at_min_over_minus_one(dtype):
    # numpy leaves x / 0 and MIN / -1 undefined (or floors); XLA defines them
    x, y = _every_pair(dtype)
    same("div", x, y)
    same("rem", x, y)
    one, zero = np.array([1, 5], dtype), np.array([0, 0], dtype)
    all_bits = -1 if np.iinfo(dtype).min < 0 else np.iinfo(dtype).max
    np.testing.assert_array_equal(lax.div(one, zero), [all_bits, all_bits])
    np.testing.assert_array_equal(lax.rem(one, zero), [1, 5])  # the dividend


EDGE_FLOATS = np.array([2.7, -2.7, 1e10, -1e10, np.nan, np.inf, -np.inf, 2147483520.0,
                        2147483648.0, 4294967295.0, 300.0, 255.9, 127.5, -128.5, -0.9, -1.0],
                       np.float32)


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("source", [np.float32, np.float16])
def test_float_to_int_conversion_saturates_and_sends_nan_to_zero_like_xla(source, dtype):
    with np.errstate(over="ignore"):  # f16 has no 1e10: it becomes inf, as in JAX
        x = EDGE_FLOATS.astype(source)
    same("convert_element_type", x, dtype)


def test_float_to_int_conversion_examples():
    out = lax.convert_element_type(np.array([2.7, -2.7, 1e10, np.nan], np.float32), np.int32)
    np.testing.assert_array_equal(out, [2, -2, 2147483647, 0])
    out = lax.convert_element_type(np.array([300.0, -1.0], np.float32), np.uint8)
    np.testing.assert_array_equal(out, [255, 0])


def test_a_python_scalar_takes_the_operand_dtype_and_a_rank0_operand_broadcasts():
    assert same("add", X, 2.0).dtype == np.float32
    assert same("mul", I, 3).dtype == np.int32
    same("add", X, np.float32(1.5))
    same("max", X[:1], X)  # size-1 axes broadcast inside lax too


@pytest.mark.parametrize("y", [-3, -1, 0, 1, 2, 3, 7, 12])
def test_integer_pow_matches_jax_for_floats(y):
    same("integer_pow", POS, y)
    if y >= 0:
        same("integer_pow", X, y)


@pytest.mark.parametrize("y", [0, 1, 2, 5, 10])
def test_integer_pow_matches_jax_for_ints_including_wraparound(y):
    same("integer_pow", I, y)
    same("integer_pow", np.array([3, 7, 40], np.int32), y)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_integer_pow_rounds_each_product_as_xlas_repeated_squaring_does(dtype):
    # XLA multiplies in squaring order, rounding each product: not numpy's x ** y
    x = np.random.default_rng(1).uniform(-3, 3, 200).astype(dtype)
    for y in [3, 5, 7, 11, 13, -3, -7]:
        np.testing.assert_array_equal(lax.integer_pow(x, y), jlax.integer_pow(x, y))


@pytest.mark.parametrize("y", [0, 1, 2, 3, 5])
def test_integer_pow_of_a_complex_infinity_multiplies_by_no_one_as_xla(y):
    # the first product is the power itself: (1+0j) * (inf+0j) would be inf+nanj
    z = np.array([complex(np.inf, 0), complex(1e30, 0), complex(0, np.inf), 2 + 1j], np.complex64)
    ours, theirs = np.asarray(lax.integer_pow(z, y)), np.asarray(jlax.integer_pow(z, y))
    np.testing.assert_array_equal(ours, theirs)
    assert ours.dtype == theirs.dtype


@pytest.mark.parametrize("y", [np.float32(0.5), np.float32(-0.5), np.int32(2**24 + 1),
                               np.full(6, 0.5, np.float32)],
                         ids=["0.5", "-0.5", "an int past float32's integers", "a full 0.5"])
def test_pow_is_xlas_not_numpys_shortcuts(y):
    # numpy takes a repeated 0.5 for a sqrt (-0 stays -0, -inf becomes NaN); XLA converts an
    # int exponent to the base's dtype first (2**24 + 1 is even in float32)
    x = np.array([-0.0, -np.inf, 4.0, 0.0, -1.0, np.nan], np.float32)
    with np.errstate(invalid="ignore"):
        ours = np.asarray(lax.pow(x, y))
    np.testing.assert_array_equal(ours, np.asarray(jlax.pow(x, y)))
    assert np.array_equal(np.signbit(ours), np.signbit(np.asarray(jlax.pow(x, y))))


@pytest.mark.parametrize("config", [(3, -5, 0), (-5, 3, 0), (1, -4, 0), (5, -9, 1), (-4, 1, 2),
                                    (2, -2, 3)])
def test_negative_padding_crops_the_other_sides_padding_too_as_xla(config):
    x = np.arange(3, dtype=np.float32)
    ours = lax.pad(x, np.float32(-1), (config,))
    np.testing.assert_array_equal(ours, jlax.pad(x, np.float32(-1), (config,)))


def test_select_n_picks_cases_by_bool_or_index():
    same("select_n", B, X, Y)
    same("select_n", np.array([0, 2, 1, 1], np.int32), X[0], Y[0], POS[0])
    same("select_n", True, X, Y)
    same("select", B, X, Y)


@pytest.mark.filterwarnings("ignore:Explicitly requested dtype float64")
@pytest.mark.parametrize(
    "x, dtype",
    [(X * 10, np.int32), (I, np.float32), (X, np.float16), (I, np.bool_), (B, np.float32),
     (I, np.uint8), (X, np.float64), (X, np.float32)],
)
def test_convert_element_type_matches_jax(x, dtype):
    same("convert_element_type", x, dtype)


def test_convert_element_type_of_a_python_scalar_is_a_strong_scalar():
    out = lax.convert_element_type(2, np.float32)
    assert out.dtype == np.float32 and out.shape == ()


def test_structural_ops_match_jax():
    same("broadcast_in_dim", X[0], (2, 3, 4), (2,))
    same("broadcast_in_dim", X[:1], (5, 3, 4), (1, 2))
    same("broadcast_in_dim", X, (4, 3), (1, 0))  # dimensions out of order: a transpose
    same("broadcast_in_dim", X.reshape(3, 1, 4), (4, 2, 3, 5), (2, 1, 0))
    same("broadcast", X, (2,))
    same("reshape", X, (2, 6))
    same("reshape", X, (4, 3), (1, 0))
    same("transpose", X.reshape(3, 2, 2), (2, 0, 1))
    same("squeeze", X[:1, None], (0, 1))
    same("expand_dims", X, (0, 3))
    same("concatenate", [X, Y, X[:1]], 0)
    same("concatenate", [I, J], 1)
    same("iota", np.int32, 5)
    same("iota", np.float32, 3)
    same("broadcasted_iota", np.int32, (2, 3), 1)


def test_pad_handles_low_high_interior_and_negative_padding():
    same("pad", X, 0.0, ((1, 2, 0), (0, 0, 1)))
    same("pad", X, -1.0, ((-1, 1, 2), (2, -2, 0)))
    same("pad", I, np.int32(9), ((0, 0, 0), (1, 1, 3)))


def test_slices_match_jax():
    same("slice", X, (1, 0), (3, 4))
    same("slice", X, (0, 1), (3, 4), (2, 2))
    same("slice_in_dim", X, -2, None, 1, 1)
    same("index_in_dim", X, -1, 0, False)
    for starts in [(1, 2), (-1, 0), (5, -9), (np.int32(2), np.int32(1))]:
        same("dynamic_slice", X, starts, (2, 2))  # out-of-range starts are clamped
        same("dynamic_update_slice", X, Y[:2, :2], starts)
    same("dynamic_slice_in_dim", X, 1, 2, 1)
    same("dynamic_index_in_dim", X, -1, 0, False)
    same("dynamic_update_slice_in_dim", X, Y[:1], 2, 0)


def test_reductions_match_jax():
    same("reduce_sum", X, (0,), rtol=RTOL_REDUCTION)
    same("reduce_sum", I, (0, 1))
    same("reduce_max", X, (1,))
    same("reduce_min", I, (0,))
    same("reduce_max", B, (0,))
    same("reduce_max", np.zeros((0, 3), np.float32), (0,))  # the identity, -inf
    same("cumsum", X, 1, rtol=RTOL_REDUCTION)
    same("cumsum", I, 0, True)


def test_argmax_and_argmin_pick_the_first_extreme_and_nan():
    ties = np.array([[1, 3, 3, 0], [2, 2, 1, 2]], np.float32)
    same("argmax", ties, 1, np.int32)
    same("argmin", ties, 1, np.int32)
    same("argmax", np.array([1, np.nan, 5, np.nan], np.float32), 0, np.int32)
    same("argmin", I, 0, np.int32)


@pytest.mark.parametrize(
    "lhs, rhs, dims",
    [
        (X, Y.T, (((1,), (0,)), ((), ()))),
        (X, Y, (((0, 1), (0, 1)), ((), ()))),
        (X, Y, (((), ()), ((), ()))),  # an outer product
        (X.reshape(3, 2, 2), Y.reshape(3, 2, 2), (((2,), (1,)), ((0,), (0,)))),
        (X.reshape(2, 3, 2), Y.reshape(3, 2, 2), (((1,), (0,)), ((2,), (1,)))),
        (I, J.T, (((1,), (0,)), ((), ()))),
    ],
)
def test_dot_general_matches_jax(lhs, rhs, dims):
    same("dot_general", lhs, rhs, dims, rtol=RTOL_REDUCTION)


def test_dot_general_mixed_dtypes_and_preferred_element_type_match_jax():
    same("dot_general", X, J.T, (((1,), (0,)), ((), ())), rtol=RTOL_REDUCTION)
    i8 = I.astype(np.int8)
    same("dot_general", i8, i8.T, (((1,), (0,)), ((), ())), preferred_element_type=np.int32)
    same("dot", X, Y.T, rtol=RTOL_REDUCTION)
    same("dot", X[0], Y[0], rtol=RTOL_REDUCTION)


def test_full_and_full_like_match_jax():
    same("full", (2, 3), 1.5)
    same("full", (2,), 7, np.float16)
    same("full_like", X, 2)
    same("full_like", I, 2.7)
    same("full_like", X, 0, np.int32, (5,))


def test_impl_and_abstract_eval_can_be_called_directly():
    aval = lax.add_p.abstract_eval(
        core.ShapedArray((3,), np.float32), core.ShapedArray((), np.float32, True)
    )
    assert aval == core.ShapedArray((3,), np.float32)
    out = lax.integer_pow_p.impl(np.array([2.0, 3.0], np.float32), y=3)
    np.testing.assert_array_equal(out, [8.0, 27.0])
    assert out.dtype == np.float32
    assert lax.integer_pow_p.impl(np.array([2, -3], np.int32), y=0).dtype == np.int32


def test_eager_results_are_arrays_even_for_scalars_with_jaxs_weak_types():
    out = lax.add(1.0, 2.0)
    assert isinstance(out, Array) and out.shape == () and out.dtype == np.float32
    assert repr(out) == repr(jlax.add(1.0, 2.0)) == "Array(3., dtype=float32, weak_type=True)"
    assert isinstance(lax.reduce_sum(X, (0, 1)), Array)
    assert repr(lax.reduce_sum(X[:1, :2], (0, 1))) == repr(jlax.reduce_sum(X[:1, :2], (0, 1)))


def test_argmax_of_complex_traces_but_fails_when_run_as_in_jax():
    z = (X + 1j * Y).astype(np.complex64)
    jaxpr = str(jax.make_jaxpr(lambda z: jlax.argmax(z, 0, np.int32))(z))
    assert str(make_jaxpr(lambda z: lax.argmax(z, 0, np.int32))(z)) == jaxpr
    for name in ("argmax", "argmin"):
        with pytest.raises(TypeError) as theirs:
            getattr(jlax, name)(z, 0, np.int32)
        with pytest.raises(TypeError, match=re.escape(str(theirs.value))):
            getattr(lax, name)(z, 0, np.int32)


def test_eager_and_traced_calls_fail_alike_before_any_numpy_runs():
    with pytest.raises(TypeError, match=r"lax\.add requires arguments to have the same dtypes"):
        lax.add(X, I)
    with pytest.raises(TypeError, match="dot_general requires contracting dimensions"):
        lax.dot_general(X, X, (((1,), (0,)), ((), ())))



@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")  # JAX warns of the cast
@pytest.mark.parametrize("fill", [1j, np.complex64(1j), 0j, 2 + 0j, np.complex64(0)], ids=str)
@pytest.mark.parametrize("how", ["full", "convert_element_type"])
def test_a_complex_scalar_is_true_as_a_bool_when_either_part_is_nonzero(fill, how):
    # JAX converts a scalar with numpy (both parts count); an array's imaginary part is dropped
    def f(ns):
        if how == "full":
            return ns.full((2,), fill, np.bool_)
        return ns.convert_element_type(fill, np.bool_)

    ours, theirs = f(lax), f(jlax)
    assert (ours.dtype, ours.weak_type) == (theirs.dtype, theirs.weak_type)
    np.testing.assert_array_equal(ours, theirs)
    assert str(make_jaxpr(lambda: f(lax))()) == str(jax.make_jaxpr(lambda: f(jlax))())


@pytest.mark.parametrize("which,cases", [
    (np.array([True, False, True]), 1), (np.array([0, 2, -1], np.int32), 2),
    (np.array([0, 5, -3], np.int32), 3)], ids=["one case", "past the last", "below the first"])
def test_select_n_picks_as_xlas_tree_of_selects(which, cases):
    xs = [np.arange(3, dtype=np.float32) * (k + 1) for k in range(cases)]
    np.testing.assert_array_equal(lax.select_n(which, *xs), jlax.select_n(which, *xs))


def test_select_n_with_no_case_and_a_narrower_preferred_type_are_refused_as_jax():
    for f in (lambda ns: ns.select_n(np.array([True])),
              lambda ns: ns.dot_general(np.ones((2, 2), np.int32), np.ones((2, 2), np.int32),
                                        (((1,), (0,)), ((), ())), preferred_element_type=np.int8)):
        texts = []
        for ns in (lax, jlax):
            with pytest.raises(Exception) as err:
                f(ns)
            texts.append((type(err.value), str(err.value)))
        assert texts[0] == texts[1]


@pytest.mark.parametrize("num,endpoint", [(0, True), (1, True), (1, False), (4, False)])
def test_linspace_returns_its_step_as_an_array_as_jax(num, endpoint):
    import jax.numpy as jjnp

    from stages.s02_tracing import numpy as snp
    ours = snp.linspace(0, 1, num, endpoint=endpoint, retstep=True)[1]
    theirs = jjnp.linspace(0, 1, num, endpoint=endpoint, retstep=True)[1]
    assert (type(ours).__name__, ours.dtype, ours.aval.weak_type) == \
        ("Array", theirs.dtype, theirs.weak_type)
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("base", [np.float32([1.0, 0.5, -1.0]), np.int32([1, 2, -1, 0])],
                         ids=["float32", "int32"])
@pytest.mark.parametrize("exponent", [2**31, 2**40])
def test_a_python_int_exponent_past_int32_is_a_parameter_not_an_array_as_jax(base, exponent):
    import jax.numpy as jjnp

    from stages.s02_tracing import numpy as snp
    ours, theirs = snp.asarray(base) ** exponent, jjnp.asarray(base) ** exponent
    assert np.asarray(ours).dtype == np.asarray(theirs).dtype
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("dtype", [np.float16, "bfloat16"])
def test_rsqrt_of_a_narrow_float_is_rounded_once_as_xla_computes_it(dtype):
    """XLA computes a float16's or bfloat16's rsqrt in float32 and rounds once; `1 / sqrt` in
    the narrow type rounds twice and was one unit off in every other case."""
    import ml_dtypes

    dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(0, 10, 3000), 10.0 ** rng.uniform(-4, 4, 3000)]).astype(dtype)
    ours, theirs = np.asarray(lax.rsqrt(x)), np.asarray(jlax.rsqrt(x))
    assert ours.dtype == theirs.dtype
    assert ours.tobytes() == theirs.tobytes()
    assert float(lax.rsqrt(np.float32(1e-6))) == float(jlax.rsqrt(np.float32(1e-6))) == 1000.0
