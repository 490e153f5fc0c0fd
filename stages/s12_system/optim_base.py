"""What every optimizer module builds on: the GradientTransformation pair, the states several
transformations share, and the step counter's arithmetic. optim.py and optim_variants.py both
import this module; optim.py re-exports every name here, so users need only `optim`.

optax: optax/_src/base.py (GradientTransformation, EmptyState), numerics.py (safe_increment),
transform.py (ScaleByAdamState, bias_correction).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from stages.s01_pytrees import tree_map
from stages.s02_tracing import numpy as jnp

__all__ = ["EmptyState", "GradientTransformation", "ScaleByAdamState", "bias_correction",
           "init_adam_state", "safe_increment"]


class GradientTransformation(NamedTuple):
    """A pair of pure functions (optax: base.GradientTransformation)."""

    init: Callable[[Any], Any]
    update: Callable[..., tuple[Any, Any]]


class EmptyState(NamedTuple):
    """The state of a transformation that keeps none."""


class ScaleByAdamState(NamedTuple):
    """Adam's state, and NAdam's: the step count and the two moments."""

    count: Any
    mu: Any
    nu: Any


def init_adam_state(params: Any) -> ScaleByAdamState:
    """Adam's state before the first step: no steps, both moments zeros shaped as the params."""
    zeros = tree_map(jnp.zeros_like, params)
    return ScaleByAdamState(count=jnp.zeros((), np.int32), mu=zeros, nu=zeros)


def safe_increment(count: Any) -> Any:
    """An int32 step counter plus one, stopping at its maximum instead of wrapping (optax)."""
    top = np.iinfo(np.int32).max
    return jnp.where(count < top, count + 1, top).astype(np.int32)


def bias_correction(moment: Any, decay: float, count: Any) -> Any:
    """A moment started at zero is too small by 1 - decay**count: divided by it (optax)."""
    correction = 1 - decay ** count
    return tree_map(lambda t: t / correction.astype(t.dtype), moment)
