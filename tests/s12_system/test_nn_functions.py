"""softmax, log_softmax and one_hot against jax.nn 0.10.2: the same bits, the same arguments.

softmax divides exp(x - max) by its sum, as JAX does; exp(log_softmax(x)) is the same number
in exact arithmetic but rounds differently in about half the entries of float32 and far more
in float16. `where=` leaves entries out (0 in softmax, -inf in log_softmax) and `axis=None`
takes every axis. Both sides run through XLA on the CPU (the module's PJRT fixture), so the
comparison is bit for bit.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

from stages.s04_autodiff import grad
from stages.s07_caches import jit
from stages.s12_system import nn

X = np.random.default_rng(7).standard_normal((40, 6)).astype(np.float32) * 3
PAIRS = {"softmax": (nn.softmax, jax.nn.softmax),
         "log_softmax": (nn.log_softmax, jax.nn.log_softmax)}


def _bits_equal(ours, theirs):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert (ours.dtype, ours.shape) == (theirs.dtype, theirs.shape)
    assert ours.tobytes() == theirs.tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_softmax_divides_by_the_sum_as_jax_does_bit_for_bit(dtype):
    x = X.astype(dtype)
    _bits_equal(jit(nn.softmax)(x), jax.jit(jax.nn.softmax)(x))
    _bits_equal(nn.softmax(x), jax.nn.softmax(x))


@pytest.mark.parametrize("name", PAIRS)
def test_where_leaves_entries_out_as_jax(name):
    ours, theirs = PAIRS[name]
    where = X > -1
    where[3] = False  # a row with nothing left: JAX's max is -inf there, and so is ours
    _bits_equal(jit(lambda x, w: ours(x, where=w))(X, where), theirs(X, where=where))
    _bits_equal(jit(lambda x: ours(x, axis=0, where=where[:1]))(X),
                theirs(X, axis=0, where=where[:1]))  # a where= that broadcasts
    g = jit(grad(lambda x: (ours(x, where=x > 0) * x).sum()))(X)
    np.testing.assert_allclose(
        np.asarray(g), jax.grad(lambda x: (theirs(x, where=x > 0) * x).sum())(X),
        rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", PAIRS)
def test_axis_none_takes_every_axis_and_a_scalar_is_refused_as_jax(name):
    ours, theirs = PAIRS[name]
    _bits_equal(jit(lambda x: ours(x, axis=None))(X[:3]), theirs(X[:3], axis=None))
    with pytest.raises(ValueError) as theirs_err:
        theirs(np.float32(2.0))
    with pytest.raises(ValueError) as ours_err:
        ours(np.float32(2.0))
    assert str(ours_err.value) == str(theirs_err.value)


def test_one_hot_takes_dtype_and_axis_by_keyword_only_as_jax():
    idx = np.int32([0, 2, 1])
    _bits_equal(nn.one_hot(idx, 3, dtype=None), jax.nn.one_hot(idx, 3, dtype=None))
    _bits_equal(nn.one_hot(idx, 3, dtype=np.int8), jax.nn.one_hot(idx, 3, dtype=np.int8))
    for f in (nn.one_hot, jax.nn.one_hot):
        with pytest.raises(TypeError, match="positional"):
            f(idx, 3, np.int8)


def test_one_hot_refuses_a_float_class_count_as_jax():
    idx = np.int32([0, 2, 1])
    for f in (nn.one_hot, jax.nn.one_hot):
        with pytest.raises(TypeError, match="'float' object cannot be interpreted as an integer"):
            f(idx, 3.0)


def test_one_hot_takes_a_list_and_refuses_a_bool_array_as_jax():
    _bits_equal(nn.one_hot([0, 2], 3), jax.nn.one_hot([0, 2], 3))
    for f in (nn.one_hot, jax.nn.one_hot):  # the classes are counted in x's dtype
        with pytest.raises(TypeError, match="^iota does not accept dtype bool"), \
                pytest.warns(DeprecationWarning, match="should be integer-typed; got dtype=bool"):
            f(np.array([True, False]), 3)


def test_one_hot_of_floats_warns_as_jax_and_still_answers():
    x = np.float32([0.0, 2.0, 1.5])  # 1.5 matches no class: a row of zeros
    with pytest.warns(DeprecationWarning) as theirs:
        want = jax.nn.one_hot(x, 3)
    with pytest.warns(DeprecationWarning) as ours:
        got = nn.one_hot(x, 3)
    assert [str(w.message) for w in ours] == [str(w.message) for w in theirs] == [
        "jax.nn.one_hot input should be integer-typed; got dtype=float32"]
    _bits_equal(got, want)
