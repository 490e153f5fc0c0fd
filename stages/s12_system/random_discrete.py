"""jax.random's discrete samplers: randint (integers from two words of bits), choice and
categorical; and gumbel's "highest" draws, floats from two words of bits.

JAX: jax/_src/random/core.py (`randint`, `_randint`, `choice`, `categorical`, and
`_safe_int_to_float` in `_gumbel`). randint is one jitted program, as the samplers in random.py
are; choice and categorical are made of them (randint, permutation, uniform, gumbel), as JAX's
are. Bit for bit JAX's: the same key gives the same integers, picks and floats. random.py imports
this module (it re-exports all three, and its gumbel calls gumbel_highest) and hands it its
samplers through the `samplers` table, so this module never imports random.py back.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from stages.s02_tracing import lax
from stages.s02_tracing import numpy as jnp
from stages.s02_tracing.lax.utils import canonicalize_axis
from stages.s02_tracing.numpy.util import check_arraylike, promote_dtypes_inexact
from stages.s07_caches import jit

from . import prng
from .random_checks import check_key, check_shape, int_dtype, static_shape

__all__ = ["categorical", "choice", "gumbel_highest", "randint", "samplers"]

# random.py's uniform, gumbel and permutation, which choice and categorical draw with: random.py
# fills this table when it is imported (a table, as the rule tables are, not an import back)
samplers: dict[str, Callable[..., Any]] = {}


def _clip_into(x: Any, dtype: np.dtype) -> Any:
    """x converted to `dtype`, saturating: values beyond dtype's range become its ends."""
    have, want = np.iinfo(x.dtype), np.iinfo(dtype)
    lo, hi = max(have.min, want.min), min(have.max, want.max)
    return lax.convert_element_type(jnp.clip(x, x.dtype.type(lo), x.dtype.type(hi)), dtype)


def _randint(key: Any, minval: Any, maxval: Any, shape: tuple, dtype: np.dtype) -> Any:
    check_arraylike("randint", minval, maxval)
    minval, maxval = (x if np.issubdtype(x.dtype, np.integer) else
                      lax.convert_element_type(x, np.int32)
                      for x in (jnp.asarray(minval), jnp.asarray(maxval)))
    # bounds of their own shape (one per column, say) broadcast to the draw's, as in JAX
    minval, maxval = jnp.broadcast_to(minval, shape), jnp.broadcast_to(maxval, shape)
    # a maxval past dtype's top (256 for uint8) is clipped to the top, so the span grows by 1
    beyond = jnp.greater(maxval, _clip_into(jnp.asarray(np.iinfo(dtype).max, dtype),
                                            maxval.dtype))
    lo, hi = _clip_into(minval, dtype), _clip_into(maxval, dtype)
    # the span as uint32 (maxval - minval may wrap in dtype; its bits are still the span);
    # an empty range (maxval <= minval) has span 1, so every draw is minval
    span = lax.convert_element_type(jnp.subtract(hi, lo), np.uint32)
    span = jnp.where(jnp.less_equal(hi, lo), np.uint32(1), span)
    span = jnp.where(jnp.logical_and(beyond, jnp.greater(hi, lo)),
                     jnp.add(span, np.uint32(1)), span)  # 2**32 wraps to 0: x % 0 is x
    # two words per draw, read as one 64-bit number h * 2**32 + l, taken modulo span
    # without 64-bit ints: (h % span) * (2**32 % span) + l % span, all modulo span
    keys = prng.threefry_split(key, (2,))
    high, low = (prng.threefry_random_bits(lax.reshape(lax.slice(keys, (i, 0), (i + 1, 2)),
                                                       (2,)), 32, shape) for i in (0, 1))
    wrap = lax.rem(jnp.full_like(span, 2**16), span)
    wrap = lax.rem(jnp.multiply(wrap, wrap), span)  # 2**32 % span (its square, as JAX: mod 2**32)
    offset = jnp.add(jnp.multiply(lax.rem(high, span), wrap), lax.rem(low, span))
    offset = lax.rem(offset, span)
    return jnp.add(lo, lax.convert_element_type(offset, dtype))


_randint_jit = jit(_randint, static_argnums=(3, 4))


def randint(key: Any, shape: Any, minval: Any, maxval: Any, dtype: Any = None) -> Any:
    """Integers in [minval, maxval) of `shape` and dtype (None: int32); the bounds broadcast to
    `shape` and are clipped into dtype's range. Slightly biased unless the span is a power of
    2, as JAX's is."""
    check_key(key, "randint")
    dtype, shape = int_dtype(dtype, "randint"), static_shape(shape)
    out = dtype
    if np.iinfo(dtype).bits < 32:  # drawn as int32, so the narrow span is not biased further
        info, dtype = np.iinfo(dtype), np.dtype(np.int32)
        minval = jnp.clip(jnp.asarray(minval).astype(dtype), info.min, info.max)
        maxval = jnp.clip(jnp.asarray(maxval).astype(dtype), info.min, info.max + 1)
    check_shape("randint", shape, np.shape(minval), np.shape(maxval))
    return _randint_jit(key, minval, maxval, shape, dtype).astype(out)


# ------------------------------------------------------------------ gumbel's "highest" mode

def _fixed_point_to_float32(hi: Any, lo: Any) -> Any:
    """The fraction (hi * 2**32 + lo) / 2**64 rounded down to a float32's 24 significant bits
    (0 becomes 2**-65): the exponent from the leading zeros, the mantissa the 23 bits after the
    leading one, put together as a float's bits."""
    u32 = np.uint32
    hi_zeros, lo_zeros = lax.clz(hi), lax.clz(lo)
    in_lo = jnp.equal(hi_zeros, u32(32))  # hi is 0: the leading one is in lo
    # the 32 bits from the leading one on (a shift by 32 gives 0, so hi == 0 adds nothing)
    from_lo = jnp.where(in_lo, lax.shift_left(lo, lo_zeros),
                        lax.shift_right_logical(lo, jnp.subtract(u32(32), hi_zeros)))
    top = lax.bitwise_or(lax.shift_left(hi, hi_zeros), from_lo)
    mantissa = lax.bitwise_and(lax.shift_right_logical(top, u32(8)), u32(2**23 - 1))
    # 2**-(zeros + 1) is the biased exponent 126 - zeros: at least 62, so it is never subnormal
    exponent = jnp.subtract(u32(126), jnp.where(in_lo, jnp.add(u32(32), lo_zeros), hi_zeros))
    bits = lax.bitwise_or(lax.shift_left(exponent, u32(23)), mantissa)
    return lax.bitcast_convert_type(bits, np.float32)


def gumbel_highest(key: Any, shape: tuple) -> Any:
    """float32 Gumbel samples, each from a 64-bit uniform u (gumbel's mode "highest"): the
    largest draws reach ~44, where one 23-bit uniform stops at ~16."""
    bits = prng.threefry_random_bits(key, 32, (2, *shape))
    hi, lo = bits[0], bits[1]
    # 1 - u in the same fixed point: the two's complement of (hi, lo), the carry by hand
    carry = lax.convert_element_type(jnp.equal(lo, np.uint32(0)), np.uint32)
    neg_hi, neg_lo = lax.bitwise_not(hi) + carry, lax.bitwise_not(lo) + np.uint32(1)
    below_half = jnp.less(hi, np.uint32(2**31))
    # x is the smaller of u and 1 - u, so its float keeps every bit that matters near 0
    x = _fixed_point_to_float32(jnp.where(below_half, hi, neg_hi),
                                jnp.where(below_half, lo, neg_lo))
    return jnp.where(below_half, -jnp.log(-jnp.log1p(-x)), -jnp.log(-jnp.log(x)))


# ------------------------------------------------------------------ choice

def _count_below(sorted_: Any, values: Any) -> Any:
    """numpy's searchsorted(sorted_, values) (side "left"): how many entries are < each value."""
    below = jnp.less(sorted_, jnp.expand_dims(values, -1))
    return jnp.sum(below, axis=-1, dtype=np.int32)


def _largest(scores: Any, k: int) -> Any:
    """The indices of the k largest scores along the last axis, largest first, ties by index
    (lax.top_k's order)."""
    last = scores.ndim - 1
    order = lax.broadcasted_iota(np.int32, scores.shape, last)
    _, order = lax.sort((jnp.negative(scores), order), dimension=last, num_keys=1)  # stable
    return lax.slice_in_dim(order, 0, k, axis=last)


def choice(key: Any, a: Any, shape: Any = (), replace: bool = True, p: Any = None,
           axis: int = 0, mode: str | None = None) -> Any:
    """Samples of `shape` from range(a) or from a's entries along `axis`, uniformly or with
    probabilities p, with or without replacement. `mode` ("low", "high" or "highest") is the
    gumbel noise's when p is given and replace is False: "high" draws twice the bits, as JAX's."""
    check_key(key, "choice")
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"shape argument of jax.random.choice must be a sequence, got {shape}")
    check_arraylike("choice", a)
    arr = jnp.asarray(a)
    if arr.ndim == 0:
        n = int(a)
    else:
        axis = canonicalize_axis(axis, arr.ndim)
        n = arr.shape[axis]
    draws = math.prod(shape)
    if draws == 0:
        return jnp.zeros(shape, dtype=arr.dtype)
    if n <= 0:
        raise ValueError("a must be greater than 0 unless no samples are taken")
    if not replace and draws > n:
        raise ValueError(f"Cannot take a larger sample (size {draws}) than population "
                         f"(size {n}) when 'replace=False'")
    if p is None and replace:
        picks = randint(key, shape, 0, n)
    elif p is None:  # the first `draws` entries of a permutation
        picks = samplers["permutation"](key, n)[:draws]
    else:
        check_arraylike("choice", p)
        (p,) = promote_dtypes_inexact(p)
        if p.shape != (n,):
            raise ValueError("p must be None or a 1D vector with the same size as a.shape[axis]. "
                             f"p has shape {p.shape} and a.shape[axis] is {n}.")
        if replace:  # inverse CDF: where a uniform draw falls among the running totals
            totals = jnp.cumsum(p)
            u = samplers["uniform"](key, tuple(shape), dtype=totals.dtype)
            picks = _count_below(totals, jnp.multiply(totals[-1], jnp.subtract(1, u)))
        else:  # Gumbel top-k: the k largest of log p plus Gumbel noise
            noise = samplers["gumbel"](key, (n,), p.dtype, mode)
            picks = _largest(jnp.add(noise, jnp.log(p)), draws)
    out = picks if arr.ndim == 0 else jnp.take(arr, picks, axis)
    return jnp.reshape(out, tuple(shape) if arr.ndim == 0 else
                       arr.shape[:axis] + tuple(shape) + arr.shape[axis + 1:])


# ------------------------------------------------------------------ categorical

def _categorical(key: Any, logits: Any, axis: int, shape: tuple, replace: bool,
                 mode: str | None) -> Any:
    batch_shape = tuple(np.delete(logits.shape, axis))
    prefix = shape[:len(shape) - len(batch_shape)]
    if replace:  # the Gumbel-max trick: per draw, the largest of logits plus Gumbel noise
        axis = axis - logits.ndim if axis >= 0 else axis
        noise_shape = list(shape[len(shape) - len(batch_shape):])
        noise_shape.insert(axis % logits.ndim, logits.shape[axis])
        noise = samplers["gumbel"](key, (*prefix, *noise_shape), logits.dtype, mode)
        logits = lax.reshape(logits, (1,) * len(prefix) + logits.shape)
        return jnp.argmax(jnp.add(noise, logits), axis=axis)
    # Gumbel top-k: one draw of noise, and the k = prod(prefix) largest along `axis`
    logits = jnp.add(logits, samplers["gumbel"](key, logits.shape, logits.dtype, mode))
    k, axis = math.prod(prefix), canonicalize_axis(axis, logits.ndim)
    if k > logits.shape[axis]:
        raise ValueError(f"Number of samples without replacement ({k}) cannot exceed number of "
                         f"categories ({logits.shape[axis]}).")
    last = [d for d in range(logits.ndim) if d != axis] + [axis]
    top = _largest(lax.transpose(logits, last), k)  # batch_shape + (k,)
    return lax.reshape(top, shape, (top.ndim - 1, *range(top.ndim - 1)))  # k first


_categorical_jit = jit(_categorical, static_argnums=(2, 3, 4, 5))


def categorical(key: Any, logits: Any, axis: int = -1, shape: Any = None, replace: bool = True,
                mode: str | None = None) -> Any:
    """Indices drawn with probabilities softmax(logits) along `axis`, with or without
    replacement; `mode` is the gumbel noise's ("low", "high" or "highest")."""
    check_key(key, "categorical")
    check_arraylike("categorical", logits)
    logits = jnp.asarray(logits)
    batch_shape = tuple(np.delete(logits.shape, axis))
    shape = batch_shape if shape is None else \
        check_shape("categorical", static_shape(shape), batch_shape)
    return _categorical_jit(key, logits, axis, shape, replace, mode)
