"""Threefry-2x32, the counter-based hash behind every JAX key, made of stage 2's uint32 ops.

JAX: jax/_src/random/threefry2x32.py (the hash as the `threefry2x32` primitive, lowered to the
same rounds unrolled) and prng.py (`iota_2x32_shape`). A key is a uint32[2]; nothing is ever
"advanced": a new key or a block of bits is the hash of the key with a counter. JAX 0.10.2's
default is `jax_threefry_partitionable=True`: the counter of element i is the pair
(i >> 32, i & 0xFFFFFFFF) of its flat index, so each element's bits are independent of the
array's size, and `split` is a fold-in of the indices 0..n-1. Ours is that mode only.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from stages.s02_tracing import lax
from stages.s02_tracing import numpy as jnp

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = np.uint32(0x1BD11BDA)  # Threefish's key-schedule constant


def _u32(x: Any, value: int) -> Any:
    return lax.full_like(x, value, np.uint32)


def _rotate_left(x: Any, d: int) -> Any:
    return lax.bitwise_or(lax.shift_left(x, _u32(x, d)),
                          lax.shift_right_logical(x, _u32(x, 32 - d)))


# --8<-- [start:threefry]
def threefry2x32(k1: Any, k2: Any, x1: Any, x2: Any) -> tuple[Any, Any]:
    """Hash the counter pairs (x1, x2) under the key (k1, k2): 20 rounds of add, rotate, xor,
    with the key injected every 4 rounds. k1, k2 are uint32 scalars; x1, x2 uint32 arrays."""
    k1 = lax.broadcast_in_dim(k1, np.shape(x1), ())
    k2 = lax.broadcast_in_dim(k2, np.shape(x1), ())
    ks = [k1, k2, lax.bitwise_xor(lax.bitwise_xor(k1, k2), _u32(k1, _PARITY))]
    x = [lax.add(x1, ks[0]), lax.add(x2, ks[1])]
    for i in range(5):
        # EXERCISE 12.1 (threefry): four rounds of mix (add, rotate, xor), then a key injection
        for r in _ROTATIONS[i % 2]:
            x[0] = lax.add(x[0], x[1])
            x[1] = lax.bitwise_xor(x[0], _rotate_left(x[1], r))
        # inject the key, rotated by one each time, and the round number
        x[0] = lax.add(x[0], ks[(i + 1) % 3])
        x[1] = lax.add(lax.add(x[1], ks[(i + 2) % 3]), _u32(x[1], i + 1))
        # END EXERCISE
    return x[0], x[1]
# --8<-- [end:threefry]


def iota_2x32_shape(shape: tuple[int, ...]) -> tuple[Any, Any]:
    """The flat index of every element of `shape`, as (high word, low word) uint32 arrays."""
    if math.prod(shape) >= 2**32:
        raise NotImplementedError("random bits array of size 2 ** 32 or more")
    low = lax.reshape(lax.iota(np.uint32, math.prod(shape)), shape)
    return lax.full(shape, 0, np.uint32), low


def _halves(key: Any) -> tuple[Any, Any]:
    k1 = lax.reshape(lax.slice(key, (0,), (1,)), ())
    k2 = lax.reshape(lax.slice(key, (1,), (2,)), ())
    return k1, k2


def threefry_seed(seed: Any) -> Any:
    """A key from an integer seed: its high and low 32 bits (JAX: threefry_seed)."""
    seed = jnp.asarray(seed)
    if seed.shape:
        raise TypeError(f"PRNG key seed must be a scalar; got {seed!r}.")
    if not np.issubdtype(seed.dtype, np.integer):
        raise TypeError(f"PRNG key seed must be an integer; got {seed!r}")
    # a 32-bit seed has no high word (XLA's logical shift by the full width gives 0)
    high = lax.full((1,), 0, np.uint32)
    low = lax.reshape(lax.convert_element_type(seed, np.uint32), (1,))
    return lax.concatenate([high, low], 0)


def threefry_split(key: Any, shape: tuple[int, ...]) -> Any:
    """`shape` new keys: element i is the hash of the counter i (the partitionable split)."""
    k1, k2 = _halves(key)
    bits1, bits2 = threefry2x32(k1, k2, *iota_2x32_shape(shape))
    return jnp.stack([bits1, bits2], axis=len(shape))


def threefry_fold_in(key: Any, data: Any) -> Any:
    """A new key from `key` and an integer: the hash of the counter pair (0, data)."""
    k1, k2 = _halves(key)
    count = threefry_seed(jnp.asarray(data, dtype=np.uint32))
    c1, c2 = _halves(count)
    bits1, bits2 = threefry2x32(k1, k2, lax.reshape(c1, (1,)), lax.reshape(c2, (1,)))
    return lax.concatenate([bits1, bits2], 0)


def threefry_random_bits(key: Any, bit_width: int, shape: tuple[int, ...]) -> Any:
    """uint32 bits of `shape`: the two hash words of each element's counter, xored."""
    if bit_width != 32:
        raise NotImplementedError("only 32-bit random bits are built here")
    k1, k2 = _halves(key)
    bits1, bits2 = threefry2x32(k1, k2, *iota_2x32_shape(shape))
    return lax.bitwise_xor(bits1, bits2)
