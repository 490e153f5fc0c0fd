"""jnp.repeat with one count per element and jnp.roll with a traced shift, against JAX 0.10.2.

repeat with an array of repeats is a scatter-add of 1s at each element's first output position,
a cumsum and a gather; a traced `repeats` needs `total_repeat_length`. A traced roll shift is a
dynamic_slice of the array concatenated with itself. Values, dtypes and weak types always;
printed jaxprs (JAX traced under `jax.disable_jit()`) where JAX's own jaxpr is made of
primitives this stage has, and JAX's errors word for word.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import stages.s02_tracing as s02
from stages.s02_tracing import numpy as snp
from stages.s02_tracing.array import Array
from tests.s02_tracing.test_numpy_more import jaxprs_of

X = np.arange(6, dtype=np.float32).reshape(2, 3)
I = np.arange(12, dtype=np.int32).reshape(3, 4)
R3 = np.array([1, 2, 0], np.int32)

# (id, fn(np_mod, *args), args): the printed jaxprs must be equal
JAXPR_CASES = [
    ("repeat_concrete_counts", lambda m, x: m.repeat(x, R3, axis=1), (X,)),
    ("repeat_concrete_counts_flat", lambda m, x: m.repeat(x, np.arange(6) % 3), (X,)),
    ("repeat_traced_counts", lambda m, x, r: m.repeat(x, r, axis=1, total_repeat_length=4),
     (X, R3)),
    ("repeat_traced_counts_cut_short", lambda m, i, r: m.repeat(i, r, axis=0,
                                                                 total_repeat_length=2),
     (I, R3)),
    ("repeat_traced_int", lambda m, x, r: m.repeat(x, r, total_repeat_length=4), (X, 2)),
    ("repeat_int_with_total", lambda m, i: m.repeat(i, 2, axis=-1, total_repeat_length=5), (I,)),
    ("repeat_to_nothing", lambda m, x: m.repeat(x, np.zeros(3, np.int32), axis=1), (X,)),
    ("repeat_a_scalar", lambda m, r: m.repeat(3.0, r, total_repeat_length=3), (np.int32([2]),)),
    ("roll_traced", lambda m, x, s: m.roll(x, s, axis=1), (X, 1)),
    ("roll_traced_flat", lambda m, x, s: m.roll(x, s), (X, -2)),
    ("roll_traced_int32", lambda m, i, s: m.roll(i, s, axis=0), (I, np.int32(2))),
    ("roll_traced_per_axis", lambda m, i, s: m.roll(i, s, axis=(0, 1)), (I, np.int32([1, -2]))),
    ("roll_traced_twice_one_axis", lambda m, i, s: m.roll(i, s, axis=1), (I, np.int32([1, 5]))),
    ("roll_traced_uint8", lambda m, i, s: m.roll(i, s, axis=-1), (I, np.uint8(3))),
    ("roll_traced_float", lambda m, i, s: m.roll(i, s, axis=-1), (I, 1.5)),
    ("roll_traced_empty_axis", lambda m, x, s: m.roll(x, s, axis=1),
     (np.zeros((2, 0), np.float32), 1)),
    ("roll_traced_weak", lambda m, s: m.roll(m.full((3,), 2.0), s), (1,)),
]


@pytest.mark.parametrize("name, fn, args", JAXPR_CASES, ids=[c[0] for c in JAXPR_CASES])
def test_printed_jaxpr_equals_jax_numpys(name, fn, args):
    ours, theirs = jaxprs_of(fn, args)
    assert ours == theirs


def test_int16_counts_are_converted_to_int32_scatter_indices_as_jax_does():
    # x.at[i] reads every index array as int32, JAX's index dtype, ours as JAX's
    fn = lambda m, i, r: m.repeat(i, r, axis=0, total_repeat_length=7)  # noqa: E731
    ours, theirs = jaxprs_of(fn, (I, R3.astype(np.int16)))
    assert "convert_element_type[new_dtype=int32" in theirs and ours == theirs
    _assert_same(fn(snp, snp.asarray(I), R3.astype(np.int16)),
                 fn(jnp, jnp.asarray(I), R3.astype(np.int16)))


def _assert_same(ours, theirs):
    assert isinstance(ours, Array), type(ours)
    assert bool(ours.weak_type) == bool(theirs.weak_type), (ours, theirs)
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, (ours, theirs)
    np.testing.assert_array_equal(ours, theirs)


# (id, fn(np_mod)): eager values, dtypes and weak types
VALUE_CASES = [
    ("counts_along_an_axis", lambda m: m.repeat(X, R3, axis=1)),
    ("counts_along_axis_0", lambda m: m.repeat(I, np.array([2, 0, 1]), axis=0)),
    ("counts_along_a_negative_axis", lambda m: m.repeat(I, np.array([1, 0, 3, 1]), axis=-1)),
    ("counts_of_the_flattened_array", lambda m: m.repeat(X, np.array([3, 0, 1, 0, 2, 1]))),
    ("one_count_for_every_element", lambda m: m.repeat(X, np.array([2]), axis=1)),
    ("a_zero_dim_count", lambda m: m.repeat(X, np.array(2), axis=1)),
    ("counts_in_a_2d_array_are_flattened", lambda m: m.repeat(X, np.array([[1, 2, 0]]), axis=1)),
    ("uint8_counts", lambda m: m.repeat(X, np.array([1, 2, 0], np.uint8), axis=1)),
    ("an_array_of_ours_as_counts", lambda m: m.repeat(X, m.asarray(np.array([1, 2, 3])), 1)),
    ("negative_counts_as_jax_reads_them", lambda m: m.repeat(X, np.array([1, -2, 3]), axis=1)),
    ("negative_counts_with_total", lambda m: m.repeat(X, np.array([1, -2, 3]), axis=1,
                                                      total_repeat_length=3)),
    ("total_cuts_short", lambda m: m.repeat(X, 2, total_repeat_length=5)),
    ("total_fills_with_the_last", lambda m: m.repeat(X, 2, total_repeat_length=15)),
    ("total_with_counts", lambda m: m.repeat(I, np.array([1, 2, 0], np.int16), axis=0,
                                             total_repeat_length=4)),
    ("total_zero", lambda m: m.repeat(X, R3, axis=1, total_repeat_length=0)),
    ("all_counts_zero", lambda m: m.repeat(X, np.zeros(3, np.int32), axis=1)),
    ("an_empty_axis", lambda m: m.repeat(np.zeros((2, 0), np.float32), np.array([1]), axis=1)),
    ("an_empty_axis_with_total", lambda m: m.repeat(np.zeros((2, 0), np.float32),
                                                    np.array([1]), axis=1,
                                                    total_repeat_length=2)),
    ("booleans", lambda m: m.repeat(I > 3, np.array([2, 0, 1]), axis=0)),
    ("a_weak_scalar", lambda m: m.repeat(3.0, np.array([3]))),
    ("a_weak_scalar_along_axis_0", lambda m: m.repeat(3.0, np.array([3]), axis=0)),
    ("a_weak_scalar_an_int_count", lambda m: m.repeat(3.0, 2, axis=0)),
    ("a_weak_scalar_with_total", lambda m: m.repeat(3.0, 2, total_repeat_length=4)),
    ("a_weak_vector", lambda m: m.repeat(m.full((3,), 2.0) + 1, np.array([2, 1, 0]))),
    ("roll_by_a_float", lambda m: m.roll(X, 1.5)),
    ("roll_by_a_float_along_an_axis", lambda m: m.roll(X, 1.7, axis=1)),
    ("roll_by_an_array", lambda m: m.roll(X, np.array([1, 2]), axis=(0, 1))),
    ("roll_axes_as_an_array", lambda m: m.roll(X, np.int32(2), axis=np.array([0, 1]))),
]


@pytest.mark.parametrize("name, fn", VALUE_CASES, ids=[c[0] for c in VALUE_CASES])
def test_values_dtypes_and_weak_types_equal_jax_numpys(name, fn):
    _assert_same(fn(snp), fn(jnp))


# (id, fn(np_mod, *args), args): run traced through make_jaxpr, then their values
TRACED_VALUE_CASES = [
    ("repeat", lambda m, x, r: m.repeat(x, r, axis=1, total_repeat_length=4), (X, R3)),
    ("repeat_cut_short", lambda m, i, r: m.repeat(i, r, axis=0, total_repeat_length=2), (I, R3)),
    ("repeat_filled_out", lambda m, i, r: m.repeat(i, r, total_repeat_length=30), (I, 2)),
    ("roll", lambda m, x, s: m.roll(x, s, axis=1), (X, 1)),
    ("roll_back", lambda m, i, s: m.roll(i, s), (I, -5)),
    ("roll_past_the_length", lambda m, i, s: m.roll(i, s, axis=0), (I, 7)),
    ("roll_each_axis", lambda m, i, s: m.roll(i, s, axis=(0, 1)), (I, np.int32([1, -2]))),
    ("roll_twice_one_axis", lambda m, i, s: m.roll(i, s, axis=(1, 1)), (I, np.int32([1, 5]))),
]


@pytest.mark.parametrize("name, fn, args", TRACED_VALUE_CASES,
                         ids=[c[0] for c in TRACED_VALUE_CASES])
def test_traced_arguments_give_jaxs_values(name, fn, args):
    closed = s02.make_jaxpr(lambda *a: fn(snp, *a))(*args)
    (ours,) = s02.eval_jaxpr(closed.jaxpr, closed.consts, *args)
    theirs = jax.jit(lambda *a: fn(jnp, *a))(*args)
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    assert np.asarray(ours).dtype == theirs.dtype


def _error(run, m, fn, args):
    with pytest.raises(Exception) as info:  # noqa: PT011  (the type is compared)
        run(lambda *a: fn(m, *a))(*args)
    return type(info.value), str(info.value)


def _eager(f):
    return f


ERROR_CASES = [
    ("repeat_counts_of_the_wrong_length", lambda m: m.repeat(X, np.array([1, 2]), axis=1)),
    ("repeat_counts_of_the_wrong_length_with_total",
     lambda m: m.repeat(X, np.array([1, 2]), axis=1, total_repeat_length=3)),
    ("repeat_a_negative_int", lambda m: m.repeat(X, -1, axis=1)),
    ("repeat_a_list", lambda m: m.repeat(X, [1, 2, 0], axis=1)),
    ("repeat_float_counts", lambda m: m.repeat(X, np.array([1.0, 2.0, 0.0]), axis=1)),
    ("repeat_a_float_total", lambda m: m.repeat(X, R3, axis=1, total_repeat_length=2.0)),
    ("repeat_a_scalar_two_counts", lambda m: m.repeat(3.0, np.array([3, 2]), axis=0)),
    ("repeat_a_scalar_flattened_two_counts", lambda m: m.repeat(3.0, np.array([3, 2]))),
    ("repeat_counts_along_an_axis_out_of_range", lambda m: m.repeat(I, R3, axis=2)),
    ("roll_shifts_and_axes_of_other_lengths", lambda m: m.roll(X, [1, 2, 3], axis=(0, 1))),
    ("roll_a_float_axis", lambda m: m.roll(X, 1, axis=[0.5])),
    ("roll_by_a_2d_float_array", lambda m: m.roll(X, np.array([[1.0]]), axis=1)),
]


@pytest.mark.parametrize("name, fn", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_errors_match_jax_word_for_word(name, fn):
    assert _error(_eager, snp, fn, ()) == _error(_eager, jnp, fn, ())


TRACED_ERROR_CASES = [
    ("repeat_counts_of_the_wrong_length",
     lambda m, r: m.repeat(X, r, axis=1, total_repeat_length=3), (np.arange(2),)),
    ("repeat_a_negative_total", lambda m, r: m.repeat(X, r, axis=1, total_repeat_length=-1),
     (np.arange(3),)),
    ("repeat_a_scalar_three_counts",
     lambda m, r: m.repeat(2.0, r, axis=0, total_repeat_length=3), (np.arange(3),)),
    ("repeat_float_counts", lambda m, r: m.repeat(X, r, axis=1, total_repeat_length=3),
     (np.ones(3, np.float32),)),
    ("roll_shifts_and_axes_of_other_lengths", lambda m, s: m.roll(I, s, axis=(0, 1)),
     (np.arange(3),)),
    ("roll_a_2d_shift", lambda m, s: m.roll(I, s, axis=0), (np.ones((2, 2), np.int32),)),
    ("roll_an_axis_out_of_range", lambda m, s: m.roll(I, s, axis=2), (1,)),
]


@pytest.mark.parametrize("name, fn, args", TRACED_ERROR_CASES,
                         ids=[c[0] for c in TRACED_ERROR_CASES])
def test_traced_errors_match_jax_word_for_word(name, fn, args):
    ours = _error(s02.make_jaxpr, snp, fn, args)
    with jax.disable_jit():
        theirs = _error(jax.make_jaxpr, jnp, fn, args)
    assert ours == theirs


def test_traced_repeats_without_a_total_are_refused_with_jaxs_message():
    with pytest.raises(s02.ConcretizationTypeError) as ours:
        s02.make_jaxpr(lambda r: snp.repeat(X, r, axis=1))(R3)
    with pytest.raises(jax.errors.ConcretizationTypeError) as theirs:
        jax.make_jaxpr(lambda r: jnp.repeat(X, r, axis=1))(R3)
    # the first two lines: what was traced and JAX's advice (where it was traced follows)
    assert str(ours.value).splitlines()[:2] == str(theirs.value).splitlines()[:2]
    assert "specify a static value for `repeats`" in str(ours.value)
