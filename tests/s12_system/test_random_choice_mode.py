"""random.choice's `mode` against jax.random.choice: the gumbel noise of a draw without
replacement with p, "low" (one uniform) or "high" (two), bit for bit; elsewhere it is unused."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from stages.s12_system import random

SEEDS = [0, 1, 7, 42, 2**31 - 1]
# entries of tiny p: "high" gives them the odds "low" cannot, so the two modes pick differently
P_TINY = np.float32([1e-9, 0.3, 1e-8, 0.2, 0.5, 1e-12, 0.0, 0.1, 1e-7, 1e-6])
CASES = {
    "three_of_ten": dict(a=10, shape=(3,), p=P_TINY),
    "all_that_can_be": dict(a=10, shape=(7,), p=P_TINY),
    "a_grid": dict(a=10, shape=(2, 3), p=P_TINY),
    "rows_of_an_array": dict(a=np.arange(30, dtype=np.float32).reshape(10, 3), shape=(4,),
                             p=P_TINY),
    "columns": dict(a=np.arange(20, dtype=np.int32).reshape(2, 10), shape=(2,), axis=1,
                    p=P_TINY),
    "uniform_p": dict(a=6, shape=(6,), p=np.ones(6, np.float32)),
}


def _same(ours, theirs):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("mode", [None, "low", "high"])
@pytest.mark.parametrize("name", CASES)
def test_choice_with_a_mode_matches_jax_bit_for_bit(name, mode):
    for seed in SEEDS:
        k, kj = random.PRNGKey(seed), jax.random.PRNGKey(seed)
        _same(random.choice(k, replace=False, mode=mode, **CASES[name]),
              jax.random.choice(kj, replace=False, mode=mode, **CASES[name]))


def test_the_high_mode_draws_other_picks_than_the_low_one():
    # the comparison above means something only if the modes differ on these draws
    def picks(r, mode):
        return [np.asarray(r.choice(r.PRNGKey(s), 10, (7,), replace=False, p=P_TINY,
                                    mode=mode)).tolist() for s in SEEDS]
    assert picks(random, "high") == picks(jax.random, "high")
    assert picks(random, "high") != picks(random, "low")


@pytest.mark.parametrize("kwargs", [dict(), dict(replace=False), dict(p=P_TINY)],
                         ids=["uniform", "no_replace", "p"])
def test_the_mode_is_not_read_where_no_gumbel_noise_is_drawn(kwargs):
    for mode in ("high", "no such mode"):
        _same(random.choice(random.PRNGKey(3), 10, (4,), mode=mode, **kwargs),
              jax.random.choice(jax.random.PRNGKey(3), 10, (4,), mode=mode, **kwargs))


@pytest.mark.parametrize("mode", ["no such mode", "HIGH", 1])
def test_an_unknown_mode_is_refused_with_jax_error(mode):
    with pytest.raises(Exception) as want:
        jax.random.choice(jax.random.PRNGKey(0), 10, (3,), replace=False, p=P_TINY, mode=mode)
    with pytest.raises(type(want.value)) as got:
        random.choice(random.PRNGKey(0), 10, (3,), replace=False, p=P_TINY, mode=mode)
    assert str(got.value) == str(want.value)
