"""random against jax.random: the same seeds and shapes give the same bits, bit for bit.

Through PJRT both sides run XLA's kernels, so floats agree exactly too (normal's erf_inv is
XLA's polynomial on both sides). JAX 0.10.2's defaults: threefry2x32, partitionable counters.
"""

from __future__ import annotations

import warnings

import jax
import numpy as np
import pytest

import stages.s09_pjrt as s09
from stages.s02_tracing import config, make_jaxpr
from stages.s07_caches import clear_caches, jit
from stages.s12_system import random
from stages.s12_system.prng import threefry2x32

SEEDS = [0, 1, 42, 12345, 2**31 - 1, 2**32 - 1]
SHAPES = [(), (1,), (7,), (3, 4), (2, 3, 5)]


def _same(ours, theirs):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_array_equal(ours, theirs)


def test_jax_defaults_are_the_ones_built_here():
    assert jax.config.jax_default_prng_impl == "threefry2x32"
    assert jax.config.jax_threefry_partitionable is True


@pytest.mark.parametrize("seed", SEEDS)
def test_keys_split_and_fold_in_match_jax(seed):
    k, kj = random.PRNGKey(seed), jax.random.PRNGKey(seed)
    _same(k, kj)
    _same(random.key_data(random.key(seed)), jax.random.key_data(jax.random.key(seed)))
    _same(random.split(k), jax.random.split(kj))
    _same(random.split(k, (2, 3)), jax.random.split(kj, (2, 3)))
    for data in (0, 1, 2**31 + 5):
        _same(random.fold_in(k, data), jax.random.fold_in(kj, data))


@pytest.mark.parametrize("seed", SEEDS)
def test_samplers_match_jax_bit_for_bit(seed):
    k, kj = random.fold_in(random.PRNGKey(seed), 3), jax.random.fold_in(jax.random.PRNGKey(seed), 3)
    shape = SHAPES[seed % len(SHAPES)]
    _same(random.bits(k, shape), jax.random.bits(kj, shape))
    _same(random.uniform(k, shape), jax.random.uniform(kj, shape))
    _same(random.uniform(k, shape, minval=-2.0, maxval=3.0),
          jax.random.uniform(kj, shape, minval=-2.0, maxval=3.0))
    _same(random.normal(k, shape), jax.random.normal(kj, shape))
    _same(random.bernoulli(k, 0.3, shape), jax.random.bernoulli(kj, 0.3, shape))
    _same(random.gumbel(k, shape), jax.random.gumbel(kj, shape))


def test_uniform_clamps_at_minval_as_jax_even_when_minval_is_above_maxval():
    """JAX's uniform ends in lax.max(minval, ...): a reversed range gives minval everywhere, and
    a range below minval's rounding never returns less than minval."""
    k, kj = random.PRNGKey(7), jax.random.PRNGKey(7)
    for lo, hi in [(1.0, 0.0), (3.0, -2.0), (-2.0, 3.0)]:
        _same(random.uniform(k, (64,), minval=lo, maxval=hi),
              jax.random.uniform(kj, (64,), minval=lo, maxval=hi))
    assert (np.asarray(random.uniform(k, (64,), minval=1.0, maxval=0.0)) == 1.0).all()


@pytest.mark.parametrize("shape", SHAPES)
def test_every_shape_matches_jax(shape):
    k, kj = random.PRNGKey(5), jax.random.PRNGKey(5)
    _same(random.uniform(k, shape), jax.random.uniform(kj, shape))
    _same(random.normal(k, shape), jax.random.normal(kj, shape))


def test_a_large_draw_matches_jax():
    k, kj = random.PRNGKey(9), jax.random.PRNGKey(9)
    _same(random.normal(k, (256, 300)), jax.random.normal(kj, (256, 300)))


@pytest.mark.parametrize("seed", [0, 3, 2**31 - 1])
def test_categorical_matches_jax(seed):
    k, kj = random.PRNGKey(seed), jax.random.PRNGKey(seed)
    logits = np.asarray(jax.random.normal(jax.random.PRNGKey(seed + 1), (4, 6)))
    _same(random.categorical(k, logits), jax.random.categorical(kj, logits))
    _same(random.categorical(k, logits, axis=0), jax.random.categorical(kj, logits, axis=0))
    _same(random.categorical(k, logits, shape=(3, 4)),
          jax.random.categorical(kj, logits, shape=(3, 4)))


@pytest.mark.parametrize("seed", [0, 11, 2**31 - 1])
def test_permutation_matches_jax(seed):
    k, kj = random.PRNGKey(seed), jax.random.PRNGKey(seed)
    _same(random.permutation(k, 10), jax.random.permutation(kj, 10))
    _same(random.permutation(k, 1700), jax.random.permutation(kj, 1700))  # two sorting rounds
    x = np.arange(24, dtype=np.float32).reshape(8, 3)
    _same(random.permutation(k, x), jax.random.permutation(kj, x))
    _same(random.permutation(k, np.arange(9)), jax.random.permutation(kj, np.arange(9)))
    _same(random.permutation(k, -3), jax.random.permutation(kj, -3))  # arange(-3): empty


AXES = {"columns": dict(axis=1), "last": dict(axis=-1),
        "independent_rows": dict(axis=0, independent=True),
        "independent_columns": dict(axis=1, independent=True),
        "independent_1d": dict(axis=0, independent=True), "no_columns": dict(axis=1)}


@pytest.mark.parametrize("name", AXES)
def test_permutation_along_an_axis_and_independent_matches_jax(name):
    x = np.arange(1, 1 + 4 * 600, dtype=np.float32).reshape(4, 600)  # 2400 values: two rounds
    x = x[0] if name == "independent_1d" else np.zeros((3, 0)) if name == "no_columns" else x
    for seed in (0, 5):
        k, kj = random.PRNGKey(seed), jax.random.PRNGKey(seed)
        _bits_equal(random.permutation(k, x, **AXES[name]),
                    jax.random.permutation(kj, x, **AXES[name]))


def _bits_equal(ours, theirs):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert (ours.dtype, ours.shape) == (theirs.dtype, theirs.shape)
    assert ours.tobytes() == theirs.tobytes()  # NaN payloads and the sign of -0.0 included


PERMUTED = {
    "inf_row": np.array([[np.inf], [1.0], [2.0]], np.float32),
    "nan_and_zeros": np.float32([[-0.0, 1.0], [0.0, -0.0], [np.nan, -np.inf], [3.0, 4.0]]),
    "negative_zeros": np.float32([-0.0, -0.0, 0.0, -0.0, np.nan]),
    "bool": np.array([True, False, True, True, False]),
    "bool_rows": np.array([[True, False], [False, False], [True, True]]),
    "int_rows": np.arange(12, dtype=np.int32).reshape(4, 3) - 5,
    "no_rows": np.zeros((0, 2), np.float32),
}


@pytest.mark.parametrize("name", PERMUTED)
def test_permutation_moves_values_bit_for_bit(name):
    """Rows are gathered and values sorted along with the keys, never computed: no inf * 0,
    no -0.0 + 0.0, no bool summed into an int."""
    for seed in (0, 5):
        k, kj = random.PRNGKey(seed), jax.random.PRNGKey(seed)
        x = PERMUTED[name]
        _bits_equal(random.permutation(k, x), jax.random.permutation(kj, x))


@pytest.mark.parametrize("seed", [2**32 + 5, 2**40 + 7, -2**31 - 1, 2**63 - 1, -2**63,
                                  np.int64(2**40 + 7)])
def test_64_bit_seeds_keep_their_low_word_as_jax_does_without_x64(seed):
    _same(random.PRNGKey(seed), jax.random.PRNGKey(seed))
    _same(random.split(random.PRNGKey(seed)), jax.random.split(jax.random.PRNGKey(seed)))


def _raises_as_jax(ours, theirs):
    with pytest.raises(Exception) as want:
        theirs()
    with pytest.raises(type(want.value)) as got:
        ours()
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("seed", [2**64, 2**64 + 3, -2**63 - 1])
def test_seeds_beyond_64_bits_are_refused_as_jax_refuses_them(seed):
    _raises_as_jax(lambda: random.PRNGKey(seed), lambda: jax.random.PRNGKey(seed))


MISUSE = {
    "int_p": lambda r, k: r.bernoulli(k, 1, (3,)),
    "bool_p": lambda r, k: r.bernoulli(k, True, (3,)),
    "int_array_p": lambda r, k: r.bernoulli(k, np.int32([0, 1])),
    "minval_of_higher_rank": lambda r, k: r.uniform(k, (2,), minval=np.zeros((3, 2), np.float32)),
    "maxval_not_broadcastable": lambda r, k: r.uniform(k, (2,), maxval=np.ones(3, np.float32)),
    "permutation_of_a_list": lambda r, k: r.permutation(k, [3.0, 4.0]),
    "permutation_of_a_tuple": lambda r, k: r.permutation(k, (3.0, 4.0)),
    "permutation_of_a_bool": lambda r, k: r.permutation(k, True),
    "bernoulli_negative_shape": lambda r, k: r.bernoulli(k, 0.5, (-1,)),
    "categorical_negative_shape": lambda r, k: r.categorical(k, np.zeros(3, np.float32),
                                                             shape=(-2,)),
    "PRNGKey_of_an_array": lambda r, k: r.PRNGKey(np.array([1, 2])),
    "key_of_an_array": lambda r, k: r.key(np.zeros((2, 1), np.int32)),
}


@pytest.mark.parametrize("name", MISUSE)
def test_misuse_is_refused_with_jax_errors(name):
    f = MISUSE[name]
    _raises_as_jax(lambda: f(random, random.PRNGKey(0)), lambda: f(jax.random,
                                                                   jax.random.PRNGKey(0)))


def test_bounds_that_broadcast_still_match_jax():
    k, kj = random.PRNGKey(3), jax.random.PRNGKey(3)
    for lo in (np.zeros(2, np.float32), np.float32([[1.0], [-2.0], [0.5]]), -1.0):
        _same(random.uniform(k, (3, 2), minval=lo, maxval=4.0),
              jax.random.uniform(kj, (3, 2), minval=lo, maxval=4.0))
    p = np.float32([0.2, 0.9])
    _same(random.bernoulli(k, p), jax.random.bernoulli(kj, p))


def test_key_derivation_and_sampling_trace_to_one_program():
    def draw(seed):
        k1, k2 = random.split(random.PRNGKey(seed))
        return random.normal(k1, (3,)) + random.uniform(random.fold_in(k2, 1), (3,))

    jaxpr = make_jaxpr(draw)(np.int32(0)).jaxpr
    # each step is a jitted call, as in JAX; jit of the whole is one program
    names = [e.primitive.name for e in jaxpr.eqns]
    assert names.count("jit") == 5  # seed, split, normal, fold_in, uniform
    assert not {"xor", "shift_left", "shift_right_logical"} & set(names)
    _same(jit(draw)(s09.device_put(np.int32(0))), jax.jit(lambda s: jax.random.normal(
        jax.random.split(jax.random.PRNGKey(s))[0], (3,)) + jax.random.uniform(
        jax.random.fold_in(jax.random.split(jax.random.PRNGKey(s))[1], 1), (3,)))(0))


def test_the_hash_is_made_of_uint32_ops_only():
    u = np.zeros(4, np.uint32)
    jaxpr = make_jaxpr(threefry2x32)(np.uint32(1), np.uint32(2), u, u).jaxpr
    names = {e.primitive.name for e in jaxpr.eqns}
    assert names <= {"add", "xor", "or", "shift_left", "shift_right_logical", "broadcast_in_dim"}
    assert all(v.aval.dtype == np.uint32 for e in jaxpr.eqns for v in e.outvars)


def test_misuse_is_reported():
    with pytest.raises(TypeError, match="PRNG key seed must be an integer"):
        random.PRNGKey(np.float32(1.0))
    with pytest.raises(TypeError, match="x must be an integer or at least 1-dimensional"):
        random.permutation(random.PRNGKey(0), 2.5)


def test_on_the_numpy_backend_bits_and_unit_uniforms_match_jax_too():
    # no PJRT: stage 2's numpy impls; integer ops and the exact [0, 1) floats still agree
    saved = config.platforms.value
    config.platforms.set_global("interpreter")
    clear_caches()  # jit's first cache layer does not name the backend
    try:
        k, kj = random.PRNGKey(4), jax.random.PRNGKey(4)
        _same(random.split(k, 3), jax.random.split(kj, 3))
        _same(random.uniform(k, (5, 2)), jax.random.uniform(kj, (5, 2)))
    finally:
        config.platforms.set_global(saved)
        clear_caches()


def test_erf_inv_has_a_rule_in_every_table():
    from stages.s04_autodiff import ad, grad
    from stages.s05_vmap import batching, vmap
    from stages.s08_lowering import mlir
    from stages.s12_system.special import erf_inv, erf_inv_p

    assert erf_inv_p in ad.primitive_jvps and erf_inv_p in batching.primitive_batchers
    assert erf_inv_p in mlir.lowering_rules
    x = np.array([-0.9, -0.3, 0.0, 0.5, 0.99], np.float32)
    np.testing.assert_allclose(np.asarray(jit(vmap(grad(erf_inv)))(x)),
                               np.asarray(jax.vmap(jax.grad(jax.lax.erf_inv))(x)), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(erf_inv(x)), np.asarray(jax.lax.erf_inv(x)), rtol=1e-6)


@pytest.mark.parametrize("name, call", [
    ("uniform", lambda r, k: r.uniform(k, (3,))), ("normal", lambda r, k: r.normal(k, (3,))),
    ("bernoulli", lambda r, k: r.bernoulli(k, 0.5, (3,))), ("split", lambda r, k: r.split(k)),
    ("fold_in", lambda r, k: r.fold_in(k, 1)), ("permutation", lambda r, k: r.permutation(k, 3)),
    ("categorical", lambda r, k: r.categorical(k, np.zeros(3, np.float32))),
])
def test_a_batch_of_keys_or_malformed_key_data_is_refused_as_jax_refuses_it(name, call):
    errors = []
    for r in (random, jax.random):
        keys = r.split(r.PRNGKey(0), (2, 3))
        for bad in (keys, np.zeros(3, np.uint32), np.zeros(2, np.int32)):
            with pytest.raises((TypeError, ValueError)) as err:
                call(r, bad)
            errors.append((type(err.value), str(err.value).split(" for impl=")[0]))
    assert errors[:3] == errors[3:]
    assert errors[0][1] == (f"{name} accepts a single key, but was given a key array of shape "
                            "(2, 3, 2) != (). Use jax.vmap for batching.")


@pytest.mark.parametrize("call", [
    lambda r, k: r.uniform(k, (4,), np.int32), lambda r, k: r.uniform(k, (4,), np.bool_),
    lambda r, k: r.normal(k, (4,), np.int32), lambda r, k: r.gumbel(k, (4,), np.int32),
    lambda r, k: r.categorical(k, np.zeros(3, np.int32)),
], ids=["uniform int", "uniform bool", "normal int", "gumbel int", "categorical int logits"])
def test_a_sampler_of_floats_refuses_an_int_or_bool_dtype_as_jax(call):
    _same_value_error(call)


def _same_value_error(call):
    errors = []
    for r in (random, jax.random):
        with pytest.raises(ValueError) as err:
            call(r, r.PRNGKey(0))
        errors.append(str(err.value))
    assert errors[0] == errors[1]


@pytest.mark.parametrize("call", [
    lambda r, k: r.bernoulli(k, np.full(3, 0.5, np.float32), (2, 1)),
    lambda r, k: r.bernoulli(k, np.full(3, 0.5, np.float32), (2,)),
    lambda r, k: r.categorical(k, np.zeros((3, 4), np.float32), shape=(3, 1)),
    lambda r, k: r.categorical(k, np.zeros((3, 4), np.float32), shape=(2,)),
], ids=["bernoulli grows", "bernoulli clashes", "categorical grows", "categorical clashes"])
def test_parameters_must_broadcast_to_the_shape_asked_for_as_jax_checks(call):
    # broadcasting p against (2, 1) would give (2, 3) samples: JAX refuses, so must we
    _same_value_error(call)


# ------------------------------------------------------------------ randint and choice

K_SEEDS = [0, 7, 2**31 - 1]
I32 = np.iinfo(np.int32)
RANDINT = {  # shape, minval, maxval, dtype
    "scalar_bounds": ((2, 3), -5, 5, None), "int_shape": (4, 0, 10, np.int32),
    "array_min": ((4,), np.int32([0, 1, 2, 3]), 10, None),
    "both_broadcast": ((3, 2), np.int32([[0], [5], [-3]]), np.int32([4, 9]), None),
    "uint8_to_256": ((9,), 0, 256, np.uint8), "int8_clipped": ((9,), -1000, 1000, np.int8),
    "int16": ((9,), -200, 100, np.int16), "uint16_clipped": ((9,), -40000, 70000, np.uint16),
    "uint8_of_int8": ((9,), np.int8(-5), np.int8(100), np.uint8),
    "uint32": ((9,), 0, I32.max, np.uint32), "uint32_wide": ((9,), np.uint32(3),
                                                               np.uint32(2**32 - 1), np.uint32),
    "empty_range": ((6,), 5, 5, None), "reversed_range": ((6,), 5, -3, None),
    "widest_int32": ((6,), I32.min, I32.max, None),
    "span_wraps_to_0": ((6,), np.int32(I32.min), np.uint32(2**32 - 1), None),
    "maxval_past_dtype": ((50,), np.int32(I32.max - 9), np.uint32(2**31 + 5), None),
    "big_span": ((7,), 3, 2**20 + 7, None), "float_bounds": ((5,), 0.5, 7.9, None),
    "float_past_int32": ((5,), 0, 1e12, None), "scalar": ((), 0, 3, np.int16),
    "no_draws": ((0,), 0, 3, None),
    "bounds_per_column": ((2, 3), np.int32([0, 10, -20]), np.int32([5, 15, 100]), None),
    "bounds_per_row_uint8": ((2, 3), np.int32([[0], [200]]), 300, np.uint8),
}


@pytest.mark.parametrize("name", RANDINT)
def test_randint_matches_jax_bit_for_bit(name):
    shape, lo, hi, dtype = RANDINT[name]
    for seed in K_SEEDS:
        k, kj = random.PRNGKey(seed), jax.random.PRNGKey(seed)
        _same(random.randint(k, shape, lo, hi, dtype), jax.random.randint(kj, shape, lo, hi, dtype))


def test_randint_uses_both_words_of_every_draw():
    # a span past 2**16 needs the high word's share; a draw of 2**32 - 1 wide shows every bit
    k, kj = random.PRNGKey(1), jax.random.PRNGKey(1)
    got = np.asarray(random.randint(k, (4000,), I32.min, I32.max))
    _same(got, jax.random.randint(kj, (4000,), I32.min, I32.max))
    assert len(np.unique(got)) == 4000 and got.min() < -2**30 and got.max() > 2**30


CHOICE_X = np.arange(24, dtype=np.float32).reshape(4, 6)
P5 = np.float32([0.1, 0.0, 0.5, 0.2, 0.2])
CHOICE = {
    "int": dict(a=10), "int_shape": dict(a=5, shape=(2, 3)), "rows": dict(a=CHOICE_X, shape=(5,)),
    "columns": dict(a=CHOICE_X, shape=(2,), axis=1), "list_shape": dict(a=3, shape=[2]),
    "no_replace_all": dict(a=10, shape=(10,), replace=False),
    "no_replace": dict(a=CHOICE_X, shape=(2, 2), replace=False),
    "no_replace_last_axis": dict(a=CHOICE_X, shape=(3,), axis=-1, replace=False),
    "no_replace_long": dict(a=np.arange(1700), shape=(5,), replace=False),
    "bools": dict(a=np.array([True, False, True]), shape=(4,)),
    "none": dict(a=CHOICE_X, shape=(0,)),
    "p": dict(a=5, shape=(7,), p=P5), "p_of_values": dict(a=np.arange(5) * 3, shape=(2, 4), p=P5),
    "int_p": dict(a=CHOICE_X, shape=(3,), p=np.int32([1, 2, 3, 4])),
    "p_no_replace": dict(a=5, shape=(3,), p=P5, replace=False),
    "p_no_replace_past_zeros": dict(a=5, shape=(5,), p=P5, replace=False),
    "p_no_replace_axis": dict(a=CHOICE_X, shape=(2,), p=np.float32([1, 2, 3, 4, 5, 6]), axis=1,
                              replace=False),
}


@pytest.mark.parametrize("name", CHOICE)
def test_choice_matches_jax_bit_for_bit(name):
    for seed in K_SEEDS:
        k, kj = random.PRNGKey(seed), jax.random.PRNGKey(seed)
        _same(random.choice(k, **CHOICE[name]), jax.random.choice(kj, **CHOICE[name]))


def test_on_the_numpy_backend_randint_and_choice_match_jax_too():
    saved = config.platforms.value
    config.platforms.set_global("interpreter")
    clear_caches()
    try:
        for name in ("both_broadcast", "uint8_to_256", "span_wraps_to_0", "float_past_int32"):
            shape, lo, hi, dtype = RANDINT[name]
            _same(random.randint(random.PRNGKey(2), shape, lo, hi, dtype),
                  jax.random.randint(jax.random.PRNGKey(2), shape, lo, hi, dtype))
        for name in ("columns", "no_replace_last_axis"):
            _same(random.choice(random.PRNGKey(2), **CHOICE[name]),
                  jax.random.choice(jax.random.PRNGKey(2), **CHOICE[name]))
    finally:
        config.platforms.set_global(saved)
        clear_caches()


def test_a_64_bit_dtype_is_truncated_with_jax_warning():
    warned = []
    for r in (random, jax.random):
        with pytest.warns(UserWarning) as record:
            out = r.randint(r.PRNGKey(0), (3,), 0, 9, np.int64)
        warned.append((str(record[0].message), np.asarray(out).dtype, np.asarray(out).tolist()))
    assert warned[0] == warned[1]


BAD_DRAWS = {
    "float_dtype": lambda r, k: r.randint(k, (3,), 0, 5, np.float32),
    "bool_dtype": lambda r, k: r.randint(k, (3,), 0, 5, np.bool_),
    "float_dim": lambda r, k: r.randint(k, (3.0,), 0, 5),
    "float_dim_in_a_list": lambda r, k: r.randint(k, [2.0], 0, 5),
    "negative_dim": lambda r, k: r.randint(k, (-1,), 0, 5),
    "no_shape": lambda r, k: r.randint(k, None, 0, 5),
    "bounds_grow_the_shape": lambda r, k: r.randint(k, (3,), np.zeros((2, 3), np.int32), 5),
    "bounds_clash": lambda r, k: r.randint(k, (3,), np.zeros(2, np.int32), 5),
    "maxval_past_int32": lambda r, k: r.randint(k, (3,), 0, 2**31),
    "randint_of_key_batch": lambda r, k: r.randint(r.split(k), (3,), 0, 5),
    "shape_not_a_sequence": lambda r, k: r.choice(k, 5, 3),
    "nothing_to_choose": lambda r, k: r.choice(k, 0, (2,)),
    "too_many_without_replacement": lambda r, k: r.choice(k, 3, (4,), replace=False),
    "p_of_wrong_size": lambda r, k: r.choice(k, 3, (2,), p=np.ones(4, np.float32)),
    "axis_out_of_range": lambda r, k: r.choice(k, np.zeros((2, 3)), (2,), axis=2),
    "a_list": lambda r, k: r.choice(k, [1, 2], (2,)),
    "p_list": lambda r, k: r.choice(k, 2, (2,), p=[0.5, 0.5]),
}


@pytest.mark.parametrize("name", BAD_DRAWS)
def test_randint_and_choice_refuse_misuse_with_jax_errors(name):
    f = BAD_DRAWS[name]
    _raises_as_jax(lambda: f(random, random.PRNGKey(0)), lambda: f(jax.random,
                                                                   jax.random.PRNGKey(0)))


@pytest.mark.parametrize("mode", ["low", "high"])
@pytest.mark.parametrize("seed", SEEDS[:4])
def test_bernoulli_modes_match_jax_bit_for_bit(seed, mode):
    k, kj = random.PRNGKey(seed), jax.random.PRNGKey(seed)
    p = np.array([1e-8, 3e-8, 0.25, 0.5], np.float32)  # tiny odds: where the modes differ
    for args in [(p,), (p, (64, 4)), (0.3, (5,)), (np.float32(2e-8), (4096,))]:
        _same(random.bernoulli(k, *args, mode=mode), jax.random.bernoulli(kj, *args, mode=mode))


def test_bernoulli_high_decides_within_one_uniforms_step_and_a_bad_mode_gets_jaxs_error():
    kj, k = jax.random.PRNGKey(7), random.PRNGKey(7)
    # each p half a step (2**-24) above the first uniform "high" draws for it (the same one
    # "low" draws, the counters being partitionable): "low" says True every time, "high" asks
    # its second uniform, which says True about half the time
    p = np.asarray(jax.random.uniform(kj, (64,))) + np.float32(2.0 ** -24)
    low, high = (np.asarray(random.bernoulli(k, p, mode=m)) for m in ("low", "high"))
    _same(high, jax.random.bernoulli(kj, p, mode="high"))
    assert low.all() and 0 < high.sum() < 64
    with pytest.raises(ValueError) as theirs:
        jax.random.bernoulli(kj, 0.5, mode="middle")
    with pytest.raises(ValueError) as ours:
        random.bernoulli(k, 0.5, mode="middle")
    assert str(ours.value) == str(theirs.value) == "got mode='middle', expected 'high' or 'low'"


_SHAPE_AND_DTYPE_CASES = {
    "split_by_a_float": lambda r, k: r.split(k, 2.5),
    "split_by_a_float_in_a_tuple": lambda r, k: r.split(k, (2.0,)),
    "split_by_none": lambda r, k: r.split(k, None),
    "bits_of_a_float_shape": lambda r, k: r.bits(k, (2.0,)),
    "normal_of_a_float_shape": lambda r, k: r.normal(k, (2.0,)),
    "uniform_of_a_float": lambda r, k: r.uniform(k, 2.0),
    "gumbel_of_a_float_shape": lambda r, k: r.gumbel(k, (2.0,)),
    "bernoulli_of_a_float_shape": lambda r, k: r.bernoulli(k, 0.5, (2.0,)),
    "normal_of_none": lambda r, k: r.normal(k, None),
    "uniform_of_python_int": lambda r, k: r.uniform(k, (2,), int),
}


@pytest.mark.parametrize("name", list(_SHAPE_AND_DTYPE_CASES))
def test_a_shape_or_count_that_is_no_integer_is_refused_as_jax_refuses_it(name):
    messages = []
    for lib in (random, jax.random):
        with pytest.raises((TypeError, ValueError)) as e:
            _SHAPE_AND_DTYPE_CASES[name](lib, lib.PRNGKey(0))
        messages.append((type(e.value).__name__, str(e.value)))
    assert messages[0] == messages[1]


@pytest.mark.parametrize("sampler", ["uniform", "normal", "gumbel"])
def test_a_float64_dtype_is_float32_with_x64_off_as_in_jax(sampler):
    # Python's float quietly, numpy's float64 with JAX's truncation warning
    for dtype, warns in ((float, False), (np.float64, True)):
        outs = []
        for lib in (random, jax.random):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                outs.append(getattr(lib, sampler)(lib.PRNGKey(3), (4,), dtype))
            assert any("float64 is not available" in str(w.message) for w in caught) == warns
        assert outs[0].dtype == outs[1].dtype == np.float32
        np.testing.assert_array_equal(np.asarray(outs[0]), np.asarray(outs[1]))


def test_bfloat16_is_named_as_what_is_not_built_here_not_as_no_float():
    for call in (lambda: random.uniform(random.PRNGKey(0), (2,), jax.numpy.bfloat16),
                 lambda: random.bernoulli(random.PRNGKey(0), jax.numpy.bfloat16(0.5), (2,))):
        with pytest.raises(TypeError, match="is built here for float32 only, got bfloat16"):
            call()

