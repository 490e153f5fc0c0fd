"""The layers: Dense, Conv, Embed, LayerNorm, Dropout, MultiHeadAttention, Sequential, MLP.

Flax: flax/linen/linear.py (Dense, Conv, Embed), normalization.py (LayerNorm), stochastic.py
(Dropout), attention.py (MultiHeadDotProductAttention), combinators.py (Sequential). Each is
configuration in __init__ and arithmetic in __call__ over stage 2's numpy; params come from
`self.param`, so init and apply run the same code.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import ml_dtypes
import numpy as np

from stages.s02_tracing import dtypes, lax
from stages.s02_tracing import numpy as jnp

from .. import random
from .activation import relu, softmax
from .module import Module

# ------------------------------------------------------------------ initializers

def zeros(key: Any, shape: tuple, dtype: Any = np.float32) -> Any:
    return jnp.zeros(shape, dtype)


def ones(key: Any, shape: tuple, dtype: Any = np.float32) -> Any:
    return jnp.ones(shape, dtype)


def normal(stddev: float = 1e-2) -> Callable:
    def init(key: Any, shape: tuple, dtype: Any = np.float32) -> Any:
        return random.normal(key, shape, dtype) * np.asarray(stddev, dtype)
    return init


def lecun_normal(fan_in_axes: Sequence[int] = (-2,)) -> Callable:
    """normal / sqrt(fan_in); Flax's draws from a truncated normal, ours from a plain one."""
    def init(key: Any, shape: tuple, dtype: Any = np.float32) -> Any:
        fan_in = int(np.prod([shape[a] for a in fan_in_axes]))
        return normal(1.0 / np.sqrt(fan_in))(key, shape, dtype)
    return init


# ------------------------------------------------------------------ layers

# --8<-- [start:dense]
class Dense(Module):
    """y = x @ kernel + bias, the kernel (in_features, features)."""

    def __init__(self, features: int, use_bias: bool = True,
                 kernel_init: Callable | None = None, bias_init: Callable = zeros):
        self.features, self.use_bias = features, use_bias
        self.kernel_init, self.bias_init = kernel_init or lecun_normal(), bias_init

    def __call__(self, x: Any) -> Any:
        # EXERCISE 12.3 (dense): ask for the kernel and bias, and apply them
        kernel = self.param("kernel", self.kernel_init, (np.shape(x)[-1], self.features))
        y = jnp.matmul(x, kernel)
        if self.use_bias:
            y = y + self.param("bias", self.bias_init, (self.features,))
        return y
        # END EXERCISE
# --8<-- [end:dense]


class Embed(Module):
    """A table of num_embeddings vectors; ids pick rows, a gather (Flax: `jnp.take`)."""

    def __init__(self, num_embeddings: int, features: int, embedding_init: Callable | None = None):
        self.num_embeddings, self.features = num_embeddings, features
        # Flax's default_embed_init, variance_scaling(1.0, "fan_in", "normal", out_axis=0): a
        # normal of std 1/sqrt(features)
        self.embedding_init = embedding_init or lecun_normal(fan_in_axes=(-1,))

    def __call__(self, ids: Any) -> Any:
        table = self.param("embedding", self.embedding_init, (self.num_embeddings, self.features))
        if not np.issubdtype(np.result_type(ids), np.integer):
            raise ValueError("Input type must be an integer or unsigned integer.")
        return jnp.take(table, ids, axis=0)  # an id out of range reads NaN, as in Flax

    def attend(self, x: Any) -> Any:
        """x @ table.T: logits over the vocabulary, the weights tied to the embedding."""
        table = self.param("embedding", self.embedding_init, (self.num_embeddings, self.features))
        return jnp.matmul(x, jnp.transpose(table))


class LayerNorm(Module):
    """Normalize the last axis to mean 0, variance 1, then scale and shift (Flax's stats)."""

    def __init__(self, epsilon: float = 1e-6, use_bias: bool = True, use_scale: bool = True):
        self.epsilon, self.use_bias, self.use_scale = epsilon, use_bias, use_scale

    def __call__(self, x: Any) -> Any:
        # the statistics in float32 at least, as Flax's: E[x²] - E[x]² cancels away in float16
        dtype = jnp.asarray(x).dtype
        x = x.astype(jnp.promote_types(dtype, np.float32))
        mean = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.maximum(0.0, jnp.mean(jnp.square(x), axis=-1, keepdims=True) - mean * mean)
        y = (x - mean) * lax.rsqrt(var + self.epsilon)
        features = (np.shape(x)[-1],)
        if self.use_scale:
            y = y * self.param("scale", ones, features)
        if self.use_bias:
            y = y + self.param("bias", zeros, features)
        if not (self.use_scale or self.use_bias) and dtypes.issubdtype(dtype, np.inexact):
            y = y.astype(dtype)  # Flax's result dtype: x's and the params' (none here) together
        return y


class Dropout(Module):
    """Zero each element with probability `rate` and rescale the rest, when not deterministic."""

    def __init__(self, rate: float, deterministic: bool | None = None):
        self.rate, self.deterministic = rate, deterministic

    def __call__(self, x: Any, deterministic: bool | None = None) -> Any:
        if self.deterministic is None and deterministic is None:  # Flax's merge_param
            raise ValueError('Parameter "deterministic" must be passed to the constructor or at '
                             "call time.")
        if self.deterministic is not None and deterministic is not None:
            raise ValueError('Parameter "deterministic" was passed to the constructor and at call '
                             "time. Should be passed just once.")
        deterministic = self.deterministic if deterministic is None else deterministic
        if deterministic or self.rate == 0.0:
            return x
        if self.rate == 1.0:  # nothing kept: zeros, not x / 0 (whose gradient is NaN)
            return jnp.zeros_like(x)
        keep = random.bernoulli(self.make_rng("dropout"), 1.0 - self.rate, np.shape(x))
        return jnp.where(keep, x / (1.0 - self.rate), jnp.zeros_like(x))


class MultiHeadAttention(Module):
    """softmax(q k^T / sqrt(d) + mask) v, in num_heads heads, then an output projection."""

    def __init__(self, num_heads: int, qkv_features: int | None = None):
        self.num_heads, self.qkv_features = num_heads, qkv_features

    def __call__(self, inputs_q: Any, inputs_k: Any = None, inputs_v: Any = None, *,
                 mask: Any = None) -> Any:
        # Flax's order: keys default to the queries, values to the keys; mask by keyword only
        inputs_k = inputs_q if inputs_k is None else inputs_k
        inputs_v = inputs_k if inputs_v is None else inputs_v
        features = self.qkv_features or np.shape(inputs_q)[-1]
        if features % self.num_heads:  # Flax's assertion
            raise AssertionError(f"Memory dimension ({features}) must be divisible by number of "
                                 f"heads ({self.num_heads}).")
        head = features // self.num_heads

        def heads(y: Any) -> Any:  # (..., length, features) -> (..., heads, length, head)
            y = jnp.reshape(y, (*np.shape(y)[:-1], self.num_heads, head))
            return jnp.swapaxes(y, -2, -3)

        q = heads(Dense(features, name="query")(inputs_q))
        k = heads(Dense(features, name="key")(inputs_k))
        v = heads(Dense(features, name="value")(inputs_v))
        logits = jnp.matmul(q, jnp.swapaxes(k, -1, -2)) / np.float32(np.sqrt(head))
        if mask is not None:
            # Flax's big_neg: the dtype's lowest, so no logit is ever below a masked one
            big_neg = np.array(ml_dtypes.finfo(logits.dtype).min, logits.dtype)
            logits = jnp.where(mask, logits, big_neg)
        out = jnp.swapaxes(jnp.matmul(softmax(logits), v), -2, -3)
        out = jnp.reshape(out, (*np.shape(out)[:-2], features))
        return Dense(np.shape(inputs_q)[-1], name="out")(out)


def make_causal_mask(length: int) -> Any:
    """True where a position may attend: itself and earlier ones."""
    return lax.ge(lax.broadcasted_iota(np.int32, (length, length), 0),
                  lax.broadcasted_iota(np.int32, (length, length), 1))


class Sequential(Module):
    """Call the layers in order (Flax: nn.Sequential); params under layers_0, layers_1, ..."""

    def __init__(self, layers: Sequence[Any]):
        self.layers = list(layers)

    def __call__(self, x: Any) -> Any:
        for layer in self.layers:
            x = layer(x)
        return x


class MLP(Module):
    """Dense layers with an activation between them, created inline (Dense_0, Dense_1, ...)."""

    def __init__(self, features: Sequence[int], activation: Callable = relu):
        self.features, self.activation = tuple(features), activation

    def __call__(self, x: Any) -> Any:
        for i, f in enumerate(self.features):
            x = Dense(f)(x)
            if i < len(self.features) - 1:
                x = self.activation(x)
        return x
