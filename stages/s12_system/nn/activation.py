"""Activations and softmax over stage 2's numpy: the functions a layer applies between params.

JAX: jax/_src/nn/functions.py (`relu`, `gelu`, `log_softmax`, `softmax`, `one_hot`); Flax's
flax/linen/activation.py re-exports them. Ours are float32-first, with JAX's dtype rules.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from stages.s02_tracing import lax
from stages.s02_tracing import numpy as jnp
from stages.s02_tracing.numpy.util import promote_args_inexact
from stages.s04_autodiff import custom_jvp
from stages.s04_autodiff.ad_util import stop_gradient

from ..special import erfc


@custom_jvp
def relu(x: Any) -> Any:
    """max(x, 0), keeping x's dtype; its derivative at 0 is 0, as JAX defines it."""
    return jnp.maximum(x, 0)


relu.defjvps(lambda g, ans, x: jnp.where(jnp.greater(x, 0), g, jnp.zeros_like(g)))


def gelu(x: Any, approximate: bool = True) -> Any:
    """x * Phi(x): the tanh approximation (jax.nn.gelu's default) or the exact erf form."""
    [x] = promote_args_inexact("gelu", x)  # an int goes to float before x ** 3
    if approximate:
        c = np.sqrt(2 / np.pi).astype(x.dtype)
        return x * (0.5 * (1.0 + jnp.tanh(c * (x + 0.044715 * (x ** 3)))))
    return 0.5 * x * erfc(-x * np.sqrt(0.5).astype(x.dtype))


def _max_or_minus_inf(x: Any, axis: int | tuple[int, ...]) -> Any:
    # JAX: jnp.max(x, axis, initial=-inf, keepdims=True), so an empty axis reduces to -inf
    axes = tuple(sorted(a % np.ndim(x) for a in ((axis,) if np.ndim(axis) == 0 else axis)))
    return lax.expand_dims(lax.reduce_max(x, axes), axes)


def log_softmax(x: Any, axis: int | tuple[int, ...] = -1) -> Any:
    shifted = x - stop_gradient(_max_or_minus_inf(x, axis))
    return shifted - jnp.log(jnp.sum(jnp.exp(shifted), axis=axis, keepdims=True))


def softmax(x: Any, axis: int | tuple[int, ...] = -1) -> Any:
    return jnp.exp(log_softmax(x, axis))


def one_hot(x: Any, num_classes: int, dtype: Any = np.float32, axis: int = -1) -> Any:
    """1 where a new axis `axis` (the last by default) reaches x's class, 0 elsewhere."""
    x = jnp.expand_dims(x, axis)
    axis = axis % np.ndim(x)
    shape = tuple(num_classes if a == axis else 1 for a in range(np.ndim(x)))
    return jnp.equal(x, lax.broadcasted_iota(np.int32, shape, axis)).astype(dtype)
