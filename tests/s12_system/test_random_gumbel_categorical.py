"""random.gumbel's `mode` and random.categorical's `replace` and `mode` against jax.random.

gumbel "low" is one uniform per sample, "high" two (the second fills in the bits the first
lacks below 0.5); categorical is the Gumbel-max trick with replacement and Gumbel top-k without.
Bit for bit over seeds, shapes, axes and modes, and JAX's errors word for word.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

from stages.s12_system import random, random_discrete

SEEDS = [0, 1, 42, 2**31 - 1]
MODES = [None, "low", "high"]
rng = np.random.default_rng(5)
L = rng.standard_normal((3, 5)).astype(np.float32)
B = rng.standard_normal((2, 3, 4)).astype(np.float32)
# log-probabilities down to 1e-12 (and one -inf): "high" gives the tiny ones odds "low" cannot
TINY = np.log(np.float32([1e-9, 0.3, 1e-8, 0.2, 0.5, 1e-12, 1e-30, 0.1, 1e-7, 1e-6]))


def _same(ours, theirs):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", [(), (5,), (3, 4), (1000,)], ids=str)
def test_gumbel_with_a_mode_matches_jax_bit_for_bit(shape, mode):
    for seed in SEEDS:
        _same(random.gumbel(random.PRNGKey(seed), shape, np.float32, mode),
              jax.random.gumbel(jax.random.PRNGKey(seed), shape, np.float32, mode))


def test_the_high_mode_reaches_further_than_the_low_one():
    # the comparison above means something only if the modes draw differently
    low = np.asarray(random.gumbel(random.PRNGKey(0), (20000,), mode="low"))
    high = np.asarray(random.gumbel(random.PRNGKey(0), (20000,), mode="high"))
    assert not np.array_equal(low, high)
    assert np.isfinite(high).all() and np.isfinite(low).all()


CATEGORICAL_CASES = {
    "rows": (L, dict()),
    "columns": (L, dict(axis=0)),
    "a_prefix_of_draws": (L, dict(shape=(2, 3))),
    "a_prefix_along_axis_0": (L, dict(shape=(4, 5), axis=0)),
    "a_middle_axis": (B, dict(axis=1)),
    "tiny_odds_many_draws": (TINY, dict(shape=(2000,))),
    "without_replacement": (L, dict(replace=False, shape=(4, 3))),
    "every_category_once": (L, dict(replace=False, shape=(5, 3))),
    "without_replacement_one_draw": (L, dict(replace=False)),
    "without_replacement_along_axis_0": (L, dict(replace=False, axis=0, shape=(2, 5))),
    "without_replacement_axis_minus_2": (L, dict(replace=False, axis=-2, shape=(3, 5))),
    "without_replacement_a_2d_prefix": (L, dict(replace=False, shape=(2, 2, 3))),
    "without_replacement_a_middle_axis": (B, dict(replace=False, axis=1, shape=(2, 2, 4))),
    "without_replacement_tiny_odds": (TINY, dict(replace=False, shape=(7,))),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", CATEGORICAL_CASES)
def test_categorical_matches_jax_bit_for_bit(name, mode):
    logits, kwargs = CATEGORICAL_CASES[name]
    for seed in SEEDS:
        _same(random.categorical(random.PRNGKey(seed), logits, mode=mode, **kwargs),
              jax.random.categorical(jax.random.PRNGKey(seed), logits, mode=mode, **kwargs))


def test_draws_without_replacement_are_distinct_in_each_batch():
    picks = np.asarray(random.categorical(random.PRNGKey(3), L, shape=(5, 3), replace=False))
    assert all(sorted(picks[:, b]) == list(range(5)) for b in range(3))


def test_the_modes_pick_differently_where_the_odds_are_tiny():
    def picks(r, mode):
        return [np.asarray(r.categorical(r.PRNGKey(s), TINY, shape=(7,), replace=False,
                                         mode=mode)).tolist() for s in SEEDS]
    assert picks(random, "high") == picks(jax.random, "high")
    assert picks(random, "high") != picks(random, "low")


def test_categorical_lives_beside_choice_and_random_reexports_it():
    assert random.categorical is random_discrete.categorical
    assert "categorical" in random_discrete.__all__ and "categorical" in random.__all__


MISUSE = {
    "gumbel_int_dtype": lambda r, k: r.gumbel(k, (3,), np.int32),
    "gumbel_bool_dtype": lambda r, k: r.gumbel(k, (3,), np.bool_, "high"),
    "gumbel_unknown_mode": lambda r, k: r.gumbel(k, (3,), np.float32, "no such mode"),
    "gumbel_mode_in_capitals": lambda r, k: r.gumbel(k, (3,), np.float32, "HIGH"),
    "gumbel_mode_an_int": lambda r, k: r.gumbel(k, (3,), np.float32, 1),
    "gumbel_a_batch_of_keys": lambda r, k: r.gumbel(r.split(k, 2), (3,), mode="high"),
    "categorical_int_logits": lambda r, k: r.categorical(k, np.zeros(3, np.int32), mode="high"),
    "categorical_int_logits_too_many_draws": lambda r, k: r.categorical(
        k, np.zeros(3, np.int32), shape=(4,), replace=False),
    "categorical_unknown_mode": lambda r, k: r.categorical(k, L, mode="no such mode"),
    "categorical_unknown_mode_without_replacement": lambda r, k: r.categorical(
        k, L, replace=False, mode="middle"),
    "categorical_too_many_draws": lambda r, k: r.categorical(k, L, shape=(6, 3),
                                                             replace=False),
    "categorical_too_many_draws_along_axis_0": lambda r, k: r.categorical(
        k, L, axis=0, shape=(2, 2, 5), replace=False),
    "categorical_a_list": lambda r, k: r.categorical(k, [0.0, 1.0]),
    "categorical_shape_grows": lambda r, k: r.categorical(k, L, shape=(3, 1), replace=False),
    "categorical_a_float_shape": lambda r, k: r.categorical(k, L, shape=(3.0,)),
    "categorical_axis_out_of_range": lambda r, k: r.categorical(k, L, axis=2),
}


@pytest.mark.parametrize("name", MISUSE)
def test_misuse_is_refused_with_jax_errors(name):
    with pytest.raises(Exception) as want:  # noqa: PT011  (the type is compared)
        MISUSE[name](jax.random, jax.random.PRNGKey(0))
    with pytest.raises(type(want.value)) as got:
        MISUSE[name](random, random.PRNGKey(0))
    assert str(got.value) == str(want.value)

