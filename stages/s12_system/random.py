"""jax.random's functions over stage 2's ops: keys, split, fold_in, and samplers.

JAX: jax/_src/random/core.py (the public functions) over prng.py's threefry. Every sampler is
a jitted function of the key (stage 7's jit, shapes and dtypes static), so deriving a key and
drawing from it is one compiled program, as in JAX. The same key gives the same bits as
jax.random, because the bits are the same hash of the same counters; floats are made from the
top 23 bits of each word exactly as JAX makes them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from stages.s02_tracing import dtypes, lax
from stages.s02_tracing import numpy as jnp
from stages.s02_tracing.lax.utils import canonicalize_axis
from stages.s02_tracing.numpy.util import check_arraylike
from stages.s07_caches import jit

from . import prng
from .random_checks import check_key, check_shape, float32_dtype, split_shape, static_shape
from .random_discrete import categorical, choice, gumbel_highest, randint, samplers  # breadth
from .special import erf_inv

__all__ = ["PRNGKey", "bernoulli", "bits", "categorical", "choice", "fold_in", "gumbel", "key",
           "key_data", "normal", "permutation", "randint", "split", "uniform"]


# ------------------------------------------------------------------ keys

_seed = jit(prng.threefry_seed)


def _key(ctor_name: str, seed: Any) -> Any:
    """A key, uint32[2], from an integer seed (JAX: random/core.py `_key`). A Python int goes
    through int64 (beyond it, numpy's OverflowError); with x64 off only its low 32 bits count."""
    if np.ndim(seed):  # refused before any tracing, naming the function called
        raise TypeError(f"{ctor_name} accepts a scalar seed, but was given an array of shape "
                        f"{np.shape(seed)} != (). Use jax.vmap for batching")
    return _seed(np.int64(seed).astype(np.uint32) if isinstance(seed, int) else seed)


def PRNGKey(seed: Any) -> Any:  # noqa: N802 (JAX's name)
    """A key from an integer seed (JAX: jax.random.PRNGKey)."""
    return _key("PRNGKey", seed)


def key(seed: Any) -> Any:
    """JAX returns a typed key array here; ours is the same raw uint32[2] as PRNGKey."""
    return _key("key", seed)


def key_data(keys: Any) -> Any:
    """The raw uint32 words of keys: ours already are."""
    return keys


_split = jit(prng.threefry_split, static_argnums=1)


def split(key: Any, num: int | tuple[int, ...] = 2) -> Any:
    """`num` new keys, uint32[*num, 2], each independent of the others and of `key`."""
    check_key(key, "split")
    return _split(key, split_shape(num))


_fold_in = jit(prng.threefry_fold_in)


def fold_in(key: Any, data: Any) -> Any:
    """A new key determined by `key` and the integer `data` (a step number, a layer index)."""
    check_key(key, "fold_in")
    return _fold_in(key, jnp.asarray(data, dtype=np.uint32))


def _bits(key: Any, shape: tuple[int, ...]) -> Any:
    return prng.threefry_random_bits(key, 32, shape)


_bits_jit = jit(_bits, static_argnums=1)


def bits(key: Any, shape: Any = (), dtype: Any = np.uint32) -> Any:
    """Uniform random uint32 words."""
    check_key(key, "bits")
    if np.dtype(dtype) != np.uint32:
        raise TypeError("bits is built here for uint32 only")
    return _bits_jit(key, static_shape(shape))


# ------------------------------------------------------------------ samplers

# --8<-- [start:uniform]
def _uniform(key: Any, minval: Any, maxval: Any, shape: tuple, dtype: np.dtype) -> Any:
    minval = lax.convert_element_type(minval, dtype)
    maxval = lax.convert_element_type(maxval, dtype)
    # the top 23 bits become the mantissa of a float in [1, 2); minus 1 that is exactly
    # mantissa * 2**-23, which is how we write it (no bitcast primitive needed)
    # EXERCISE 12.2 (uniform): floats in [0, 1) from the top 23 bits, then scaled and clamped
    mantissa = lax.shift_right_logical(_bits(key, shape), lax.full(shape, 9, np.uint32))
    floats = lax.mul(lax.convert_element_type(mantissa, dtype), lax.full(shape, 2.0**-23, dtype))
    scaled = jnp.add(jnp.multiply(floats, jnp.subtract(maxval, minval)), minval)
    return jnp.maximum(minval, scaled)
    # END EXERCISE
# --8<-- [end:uniform]


_uniform_jit = jit(_uniform, static_argnums=(3, 4))


def uniform(key: Any, shape: Any = (), dtype: Any = np.float32, minval: Any = 0.0,
            maxval: Any = 1.0) -> Any:
    """Floats in [minval, maxval), 2**23 equally spaced values per unit interval."""
    check_key(key, "uniform")
    shape, ranks = static_shape(shape), {np.ndim(minval), np.ndim(maxval)}
    if max(ranks) > len(shape):  # JAX's lax.max(minval, floats of `shape`) refuses this
        raise TypeError(f"max: arrays must have the same number of dimensions, got "
                        f"{ {len(shape), max(ranks)} }")
    return _uniform_jit(key, minval, maxval, shape, float32_dtype(dtype, "uniform"))


def _normal(key: Any, shape: tuple, dtype: np.dtype) -> Any:
    lo = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype), dtype=dtype)
    u = _uniform(key, lo, np.array(1.0, dtype), shape, dtype)
    return jnp.multiply(np.array(np.sqrt(2), dtype), erf_inv(u))  # the inverse CDF


_normal_jit = jit(_normal, static_argnums=(1, 2))


def normal(key: Any, shape: Any = (), dtype: Any = np.float32) -> Any:
    """Standard normal samples: sqrt(2) * erfinv(u) for u uniform in (-1, 1)."""
    check_key(key, "normal")
    return _normal_jit(key, static_shape(shape), float32_dtype(dtype, "normal"))


def _bernoulli(key: Any, p: Any, shape: tuple, mode: str) -> Any:
    p = jnp.asarray(p)
    if mode == "low":
        return jnp.less(_uniform(key, 0.0, 1.0, shape, p.dtype), p)
    # "high": a second uniform, scaled below the first one's resolution, decides within it,
    # so a p below ~1e-7 keeps its odds
    u1, u2 = _uniform(key, 0.0, 1.0, (2, *shape), p.dtype)
    return jnp.less(u2 * p.dtype.type(2.0 ** -np.finfo(p.dtype).nmant), p - u1)


_bernoulli_jit = jit(_bernoulli, static_argnums=(2, 3))


def bernoulli(key: Any, p: Any = 0.5, shape: Any = None, mode: str = "low") -> Any:
    """True with probability p: mode "low" draws one uniform per sample, "high" two."""
    if mode not in ("high", "low"):
        raise ValueError(f"got {mode=}, expected 'high' or 'low'")
    check_key(key, "bernoulli")
    shape = np.shape(p) if shape is None else \
        check_shape("bernoulli", static_shape(shape), np.shape(p))
    p = np.float32(p) if type(p) is float else jnp.asarray(p)
    if not dtypes.issubdtype(p.dtype, np.floating):
        raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {p.dtype}.")
    float32_dtype(p.dtype, "bernoulli")
    return _bernoulli_jit(key, p, shape, mode)


def _gumbel(key: Any, shape: tuple, dtype: np.dtype, mode: str) -> Any:
    if mode == "highest":  # one float32 from 64 bits, with clz and a bitcast
        return gumbel_highest(key, shape)
    if mode == "low":
        u = _uniform(key, np.finfo(dtype).tiny, 1.0, shape, dtype)
        return jnp.negative(jnp.log(jnp.negative(jnp.log(u))))
    # "high": below 0.5 a second uniform fills in the bits the first one lacks, and log1p(-x)
    # keeps them, so the largest draws reach ~32, not ~16 (tiny odds keep their weight)
    high, low = _uniform(key, 0.0, 1.0, (2, *shape), dtype)
    x = jnp.where(jnp.greater_equal(high, dtype.type(0.5)), high,
                  high + dtype.type(2.0 ** -np.finfo(dtype).nmant) * low + np.finfo(dtype).tiny)
    return jnp.negative(jnp.log(jnp.negative(jnp.log1p(jnp.negative(x)))))


_gumbel_jit = jit(_gumbel, static_argnums=(1, 2, 3))


def gumbel(key: Any, shape: Any = (), dtype: Any = np.float32, mode: str | None = None) -> Any:
    """Standard Gumbel samples, -log(-log(u)); mode "high" draws two uniforms per sample,
    "highest" (float32) one u from 64 bits."""
    check_key(key, "gumbel")
    dtype, shape = float32_dtype(dtype, "gumbel"), static_shape(shape)
    mode = "low" if mode is None else mode  # JAX: jax_high_dynamic_range_gumbel, off
    if mode not in ("highest", "high", "low"):
        raise ValueError(f"Must provide valid mode for gumbel got: {mode}")
    return _gumbel_jit(key, shape, dtype, mode)


# ------------------------------------------------------------------ permutation

def _shuffle(key: Any, x: Any, axis: int) -> Any:
    # JAX: a few rounds of sorting by fresh 32-bit keys, enough that ties are unlikely to matter
    rounds = int(np.ceil(3 * np.log(max(1, x.size)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(rounds):
        keys = prng.threefry_split(key, (2,))
        key = lax.reshape(lax.slice(keys, (0, 0), (1, 2)), (2,))
        subkey = lax.reshape(lax.slice(keys, (1, 0), (2, 2)), (2,))
        _, x = lax.sort((_bits(subkey, x.shape), x), dimension=axis, num_keys=1)  # bit for bit
    return x


def _permutation(key: Any, x: Any, axis: int, independent: bool) -> Any:
    if independent or np.ndim(x) == 1 or x.shape[axis] == 0:  # no rows: nothing to gather
        return _shuffle(key, x, axis)  # each vector along `axis` on its own
    order = _shuffle(key, lax.iota(np.int32, x.shape[axis]), 0)
    return jnp.take(x, order, axis=axis, unique_indices=True)  # whole slices, in one order


_permutation_jit = jit(_permutation, static_argnums=(2, 3))


def permutation(key: Any, x: Any, axis: int = 0, independent: bool = False) -> Any:
    """A random permutation of range(x), or of x's slices along `axis` (with `independent`,
    each vector along it shuffled on its own)."""
    check_key(key, "permutation")
    check_arraylike("permutation", x)
    axis = canonicalize_axis(axis, np.ndim(x) or 1)
    if np.ndim(x) == 0:
        if not np.issubdtype(np.result_type(x), np.integer):
            raise TypeError("x must be an integer or at least 1-dimensional")
        return _permutation_jit(key, jnp.arange(max(int(x), 0)), 0, True)  # x < 0: empty
    return _permutation_jit(key, x, axis, bool(independent))


samplers.update(uniform=uniform, gumbel=gumbel, permutation=permutation)  # choice draws with them
