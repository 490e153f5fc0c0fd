"""What every optimizer module builds on: the GradientTransformation pair, the states several
transformations share, and the step counter's arithmetic. optim.py and optim_variants.py both
import this module; optim.py re-exports every name here, so users need only `optim`.

optax: optax/_src/base.py (GradientTransformation, EmptyState, identity), numerics.py
(safe_increment), transform.py (ScaleByAdamState; scale_by_adam's casts),
optax/tree_utils/_tree_math.py (tree_bias_correction, public as optax.tree.bias_correction).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from stages.s01_pytrees import tree_map
from stages.s02_tracing import numpy as jnp

__all__ = ["EmptyState", "GradientTransformation", "ScaleByAdamState", "bias_correction",
           "cast_moments", "identity", "init_adam_state", "init_empty_state", "safe_increment"]


class GradientTransformation(NamedTuple):
    """A pair of pure functions (optax: base.GradientTransformation)."""

    init: Callable[[Any], Any]
    update: Callable[..., tuple[Any, Any]]


# optax's base.NO_PARAMS_MSG: an update that needs the params was called without them
NO_PARAMS_MSG = ("You are using a transformation that requires the current value of parameters, "
                 "but you are not passing `params` when calling `update`.")


class EmptyState(NamedTuple):
    """The state of a transformation that keeps none."""


def init_empty_state(params: Any) -> EmptyState:
    """The init of a transformation that keeps no state."""
    return EmptyState()


def identity() -> GradientTransformation:
    """Pass the updates through unchanged (optax: base.identity); its state is EmptyState."""
    return GradientTransformation(init_empty_state,
                                  lambda updates, state, params=None: (updates, state))


class ScaleByAdamState(NamedTuple):
    """Adam's state, and NAdam's: the step count and the two moments."""

    count: Any
    mu: Any
    nu: Any


def init_adam_state(params: Any, mu_dtype: Any = None) -> ScaleByAdamState:
    """Adam's state before the first step: no steps, both moments zeros shaped as the params
    (the first in mu_dtype, when one is given)."""
    mu = tree_map(lambda p: jnp.zeros_like(p, dtype=mu_dtype), params)
    nu = tree_map(jnp.zeros_like, params)
    return ScaleByAdamState(count=jnp.zeros((), np.int32), mu=mu, nu=nu)


def cast_moments(mu: Any, nu: Any, state: ScaleByAdamState, mu_dtype: Any = None) -> tuple:
    """The moments as optax stores them: mu in mu_dtype (if given), nu in the dtype the state
    held it in, so float32 gradients do not turn a float16 state into float32 (optax)."""
    mu = mu if mu_dtype is None else tree_map(lambda m: m.astype(mu_dtype), mu)
    return mu, tree_map(lambda n, old: n.astype(old.dtype), nu, state.nu)


def safe_increment(count: Any) -> Any:
    """An int32 step counter plus one, stopping at its maximum instead of wrapping (optax)."""
    top = np.iinfo(np.int32).max
    return jnp.where(count < top, count + 1, top).astype(np.int32)


def bias_correction(moment: Any, decay: float, count: Any) -> Any:
    """A moment started at zero is too small by 1 - decay**count: divided by it (optax:
    tree_bias_correction)."""
    correction = 1 - decay ** count
    return tree_map(lambda t: t / correction.astype(t.dtype), moment)


def abs_sq(x: Any) -> Any:
    """|x|**2, real for a complex x (optax: numerics.abs_sq); for a real x, x * x."""
    return jnp.real(jnp.conj(x) * x)  # jnp's: a leaf may be a Python float
