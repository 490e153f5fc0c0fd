"""Activations and softmax over stage 2's numpy: the functions a layer applies between params.

JAX: jax/_src/nn/functions.py (`relu`, `gelu`, `log_softmax`, `softmax`, `one_hot`); Flax's
flax/linen/activation.py re-exports them. Ours are float32-first, with JAX's dtype rules.
"""

from __future__ import annotations

import operator
import warnings
from typing import Any

import numpy as np

from stages.s02_tracing import lax
from stages.s02_tracing import numpy as jnp
from stages.s02_tracing.numpy.util import check_arraylike, promote_args_inexact
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


def _shifted(x: Any, axis: Any, where: Any) -> Any:
    # x less its max along axis (a constant to autodiff); an empty axis, or one where= leaves
    # empty, has max -inf, as JAX's jnp.max(..., initial=-inf) gives
    x_max = jnp.max(x, axis, where=where, initial=-np.inf, keepdims=True)
    x_safe = x if where is None else jnp.where(where, x, -np.inf)
    return x_safe - stop_gradient(x_max)


def log_softmax(x: Any, axis: int | tuple[int, ...] | None = -1, where: Any = None) -> Any:
    """x - logsumexp(x) along axis (None: all axes); where= leaves out entries, -inf there."""
    check_arraylike("log_softmax", x)
    shifted = _shifted(x, axis, where)
    result = shifted - jnp.log(jnp.sum(jnp.exp(shifted), axis, where=where, keepdims=True))
    return result if where is None else jnp.where(where, result, -np.inf)


def softmax(x: Any, axis: int | tuple[int, ...] | None = -1, where: Any = None) -> Any:
    """exp(x) / sum(exp(x)) along axis, shifted by the max first, as JAX divides (not
    exp(log_softmax(x)), which rounds differently); where= leaves out entries, 0 there."""
    unnormalized = jnp.exp(_shifted(x, axis, where))
    result = unnormalized / jnp.sum(unnormalized, axis, where=where, keepdims=True)
    return result if where is None else jnp.where(where, result, 0)


def one_hot(x: Any, num_classes: int, *, dtype: Any = None, axis: int = -1) -> Any:
    """1 where a new axis `axis` (the last by default) reaches x's class, 0 elsewhere; float32
    unless dtype says otherwise (dtype and axis by keyword only, as in JAX)."""
    num_classes = operator.index(num_classes)  # 3.0 is refused, as JAX's concrete_dim_or_error
    dtype, x = np.float32 if dtype is None else dtype, jnp.asarray(x)  # a list too, as in JAX
    if not np.issubdtype(x.dtype, np.integer):  # bool too: JAX deprecated both in 2024
        warnings.warn(f"jax.nn.one_hot input should be integer-typed; got dtype={x.dtype}",
                      DeprecationWarning, stacklevel=2)
    x = jnp.expand_dims(x, axis)
    axis = axis % np.ndim(x)
    shape = tuple(num_classes if a == axis else 1 for a in range(np.ndim(x)))
    # the classes counted in x's own dtype: a bool x is refused by iota, as in JAX
    return jnp.equal(x, lax.broadcasted_iota(x.dtype, shape, axis)).astype(dtype)
