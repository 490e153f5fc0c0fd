"""gumbel's mode "highest" against jax.random: each float32 draw from one 64-bit uniform u,
turned into a float with clz and a bitcast, bit for bit over seeds and shapes; and categorical's
and choice's Gumbel noise in that mode.

The modes must really differ for the comparisons to mean anything: "highest" reads the same
words as "high" but rounds them otherwise, so most draws differ in their last bits, and a full
ordering of many equal logits (Gumbel top-k) swaps neighbours somewhere.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

from stages.s12_system import random, random_discrete

SEEDS = [0, 1, 7, 42, 2**31 - 1]
SHAPES = [(), (1,), (5,), (3, 4), (2, 3, 2), (4096,)]


def _same(ours, theirs):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_gumbel_highest_matches_jax_bit_for_bit(shape):
    for seed in SEEDS:
        _same(random.gumbel(random.PRNGKey(seed), shape, np.float32, "highest"),
              jax.random.gumbel(jax.random.PRNGKey(seed), shape, np.float32, "highest"))


def test_gumbel_highest_under_split_and_fold_in_keys_matches_jax():
    keys = [(r.split(r.PRNGKey(3))[1], r.fold_in(r.PRNGKey(9), 4)) for r in (random, jax.random)]
    for key, jkey in zip(*keys, strict=True):
        _same(random.gumbel(key, (64,), mode="highest"),
              jax.random.gumbel(jkey, (64,), mode="highest"))


def test_the_highest_mode_differs_from_high_and_low():
    key = random.PRNGKey(0)
    draws = {m: np.asarray(random.gumbel(key, (1000,), mode=m)) for m in ("low", "high", "highest")}
    # the same words as "high", rounded otherwise: most draws move in their last bits
    assert (draws["highest"] != draws["high"]).mean() > 0.5
    np.testing.assert_allclose(draws["highest"], draws["high"], rtol=1e-3, atol=1e-3)
    # "low" reads other words altogether
    assert (draws["highest"] != draws["low"]).all()
    assert np.isfinite(draws["highest"]).all()


def test_highest_draws_are_the_gumbel_of_their_64_bit_uniform():
    # independent of JAX: u = (hi * 2**32 + lo) / 2**64 from the same words, in float64
    key = random.PRNGKey(5)
    words = np.asarray(jax.random.bits(jax.random.PRNGKey(5), (2, 2000)), np.float64)
    u = (words[0] * 2.0**32 + words[1]) / 2.0**64
    want = -np.log(-np.log1p(-u))
    got = np.asarray(random.gumbel(key, (2000,), mode="highest"), np.float64)
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)  # float32 logs of float64 u


# all-equal logits, drawn without replacement: the draws are the noise's full ordering, and for
# this key "high" and "highest" order two neighbours differently
EQUAL = np.zeros(500, np.float32)
ORDER_SEED = 22


def _order(r, mode, via):
    key = r.PRNGKey(ORDER_SEED)
    if via == "categorical":
        return np.asarray(r.categorical(key, EQUAL, shape=(500,), replace=False, mode=mode))
    return np.asarray(r.choice(key, 500, (500,), replace=False, p=np.ones(500, np.float32),
                               mode=mode))


@pytest.mark.parametrize("via", ["categorical", "choice"])
def test_top_k_with_the_highest_mode_matches_jax_where_high_orders_otherwise(via):
    ours = _order(random, "highest", via)
    _same(ours, _order(jax.random, "highest", via))
    assert (ours != _order(random, "high", via)).any()  # a "high" fallback would fail here
    assert (ours != _order(random, "low", via)).any()


L = np.random.default_rng(5).standard_normal((3, 5)).astype(np.float32)
TINY = np.log(np.float32([1e-9, 0.3, 1e-8, 0.2, 0.5, 1e-12, 1e-30, 0.1, 1e-7, 1e-6]))
CATEGORICAL_CASES = {
    "rows": (L, dict()),
    "columns": (L, dict(axis=0)),
    "a_prefix_of_draws": (L, dict(shape=(2, 3))),
    "tiny_odds_many_draws": (TINY, dict(shape=(2000,))),
    "without_replacement": (L, dict(replace=False, shape=(4, 3))),
    "without_replacement_tiny_odds": (TINY, dict(replace=False, shape=(7,))),
}


@pytest.mark.parametrize("name", CATEGORICAL_CASES)
def test_categorical_highest_matches_jax_bit_for_bit(name):
    logits, kwargs = CATEGORICAL_CASES[name]
    for seed in SEEDS:
        _same(random.categorical(random.PRNGKey(seed), logits, mode="highest", **kwargs),
              jax.random.categorical(jax.random.PRNGKey(seed), logits, mode="highest",
                                     **kwargs))


def test_choice_highest_with_tiny_odds_matches_jax():
    p = np.float32([1e-9, 0.3, 1e-8, 0.2, 0.5, 1e-12, 0.0, 0.1, 1e-7, 1e-6])
    for seed in SEEDS:
        _same(random.choice(random.PRNGKey(seed), 10, (7,), replace=False, p=p, mode="highest"),
              jax.random.choice(jax.random.PRNGKey(seed), 10, (7,), replace=False, p=p,
                                mode="highest"))


def test_the_64_bit_draws_live_beside_the_lesson():
    assert "gumbel_highest" in random_discrete.__all__
    assert random.gumbel_highest is random_discrete.gumbel_highest
