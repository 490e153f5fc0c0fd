"""Optimizers as pure functions over pytrees, optax's way: init(params) -> state,
update(grads, state, params) -> (updates, state), and apply_updates adds the updates.

optax: optax/_src/base.py (GradientTransformation, kept in optim_base.py), transform.py
(scale_by_adam, scale), transforms/_accumulation.py (trace), _clipping.py (clip_by_global_norm),
_adding.py (add_decayed_weights), _combining.py (chain), alias.py (sgd, adam, adamw). Each block
transforms gradients into updates; an optimizer is a `chain` of them ending in the learning
rate's sign flip. State is a tuple of NamedTuples, so it is a pytree that jit carries.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from stages.s01_pytrees import tree_leaves, tree_map, tree_reduce
from stages.s02_tracing import lax
from stages.s02_tracing import numpy as jnp

from .optim_base import (  # the pair, the shared states and counters: re-exported from here
    NO_PARAMS_MSG,
    EmptyState,
    GradientTransformation,
    ScaleByAdamState,
    abs_sq,
    bias_correction,
    cast_moments,
    identity,
    init_adam_state,
    init_empty_state,
    safe_increment,
)
from .optim_variants import masked, nesterov_mu_hat

Schedule = Callable[[Any], Any]
ScalarOrSchedule = float | Schedule


def apply_updates(params: Any, updates: Any) -> Any:
    """params + updates, leaf by leaf, keeping each parameter's dtype."""
    return tree_map(lambda p, u: jnp.asarray(p + u).astype(jnp.asarray(p).dtype), params, updates)


# ------------------------------------------------------------------ building blocks

# --8<-- [start:chain]
def chain(*transforms: GradientTransformation) -> GradientTransformation:
    """Apply the transformations in order, each to the previous one's updates."""
    def init(params: Any) -> tuple:
        return tuple(t.init(params) for t in transforms)

    def update(updates: Any, state: tuple, params: Any = None) -> tuple[Any, tuple]:
        if len(state) != len(transforms):  # optax's words
            raise ValueError("The number of updates and states has to be the same in chain! "
                             "Make sure you have called init first!")
        new_state = []
        for t, s in zip(transforms, state, strict=True):
            updates, s = t.update(updates, s, params)
            new_state.append(s)
        return updates, tuple(new_state)

    return GradientTransformation(init, update)
# --8<-- [end:chain]


def scale(step_size: float) -> GradientTransformation:
    """Multiply every update by a constant."""
    def update(updates: Any, state: EmptyState, params: Any = None) -> tuple[Any, EmptyState]:
        return tree_map(lambda g: step_size * g, updates), state

    return GradientTransformation(init_empty_state, update)


class ScaleByScheduleState(NamedTuple):
    count: Any


def scale_by_schedule(step_size_fn: Schedule) -> GradientTransformation:
    """Multiply every update by step_size_fn(count), count the steps taken so far."""
    def init(params: Any) -> ScaleByScheduleState:
        return ScaleByScheduleState(count=jnp.zeros((), np.int32))

    def update(updates: Any, state: ScaleByScheduleState, params: Any = None) -> tuple:
        step_size = step_size_fn(state.count)
        updates = tree_map(lambda g: jnp.array(step_size, dtype=g.dtype) * g, updates)
        return updates, ScaleByScheduleState(count=safe_increment(state.count))

    return GradientTransformation(init, update)


def scale_by_learning_rate(learning_rate: ScalarOrSchedule | None, *, flip_sign: bool = True
                           ) -> GradientTransformation:
    """-learning_rate * updates: the step that turns gradients into descent (None: no step)."""
    if learning_rate is None:
        return identity()
    m = -1 if flip_sign else 1
    if callable(learning_rate):
        return scale_by_schedule(lambda count: m * learning_rate(count))
    return scale(m * learning_rate)


class TraceState(NamedTuple):
    trace: Any


# --8<-- [start:trace]
def trace(decay: float, nesterov: bool = False) -> GradientTransformation:
    """Momentum: keep t = g + decay * t, and pass t on (or g + decay * t again, Nesterov)."""
    def init(params: Any) -> TraceState:
        return TraceState(trace=tree_map(jnp.zeros_like, params))

    def update(updates: Any, state: TraceState, params: Any = None) -> tuple:
        # EXERCISE 12.4 (momentum): the new trace, and the updates it gives
        def f(g: Any, t: Any) -> Any:
            return g + decay * t
        new_trace = tree_map(f, updates, state.trace)
        updates = tree_map(f, updates, new_trace) if nesterov else new_trace
        # END EXERCISE
        return updates, TraceState(trace=new_trace)

    return GradientTransformation(init, update)
# --8<-- [end:trace]


# --8<-- [start:adam]
def scale_by_adam(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, eps_root: float = 0.0,
                  mu_dtype: Any = None, *, nesterov: bool = False) -> GradientTransformation:
    """Adam's direction: bias-corrected first moment over the root of the second; with
    `nesterov`, NAdam's first moment, taken one step ahead (optim_variants.py)."""
    def update(updates: Any, state: ScaleByAdamState, params: Any = None) -> tuple:
        # EXERCISE 12.5 (adam): the moments, their bias correction, and the direction
        mu = tree_map(lambda g, t: (1 - b1) * (g ** 1) + b1 * t, updates, state.mu)
        nu = tree_map(lambda g, t: (1 - b2) * abs_sq(g) + b2 * t, updates, state.nu)
        count = safe_increment(state.count)
        if nesterov:
            mu_hat = nesterov_mu_hat(mu, updates, b1, count)
        else:
            mu_hat = bias_correction(mu, b1, count)
        nu_hat = bias_correction(nu, b2, count)
        updates = tree_map(lambda m, v: m / (jnp.sqrt(v + eps_root) + eps), mu_hat, nu_hat)
        # END EXERCISE
        return updates, ScaleByAdamState(count, *cast_moments(mu, nu, state, mu_dtype))

    return GradientTransformation(lambda params: init_adam_state(params, mu_dtype), update)
# --8<-- [end:adam]


class WeightDecaySchedule(NamedTuple):
    count: Any


def add_decayed_weights(weight_decay: ScalarOrSchedule = 0.0,
                        mask: Any = None) -> GradientTransformation:
    """updates + weight_decay * params (decoupled weight decay), where `mask` says (optax).
    A schedule gives the decay of each step, weight_decay(count), counted in the state."""
    if mask is not None:  # the leaves it leaves out pass through (optim_variants.py)
        return masked(add_decayed_weights(weight_decay), mask)
    scheduled = callable(weight_decay)

    def init(params: Any) -> Any:
        return WeightDecaySchedule(jnp.zeros((), np.int32)) if scheduled else EmptyState()

    def update(updates: Any, state: Any, params: Any = None) -> tuple:
        if params is None:
            raise ValueError(NO_PARAMS_MSG)
        if isinstance(weight_decay, int | float) and weight_decay == 0.0:
            return updates, state  # no decay to add, as optax skips it: inf params stay inf
        decay = weight_decay(state.count) if scheduled else weight_decay
        state = WeightDecaySchedule(safe_increment(state.count)) if scheduled else state
        return tree_map(lambda g, p: g + decay * p, updates, params), state

    return GradientTransformation(init, update)


def global_norm(updates: Any) -> Any:
    """The L2 norm of all leaves together, as if they were one flat vector."""
    sums = [jnp.sum(abs_sq(x)) for x in tree_leaves(updates)]
    return jnp.sqrt(tree_reduce(lambda a, b: a + b, sums, 0))


def clip_by_global_norm(max_norm: float) -> GradientTransformation:
    """Scale all updates down together when their global norm exceeds max_norm."""
    def update(updates: Any, state: EmptyState, params: Any = None) -> tuple:
        g_norm = global_norm(updates)
        trigger = jnp.squeeze(g_norm < max_norm)

        def clip(t: Any) -> Any:
            return lax.select(trigger, t, (t / g_norm.astype(t.dtype)) * max_norm)
        return tree_map(clip, updates), state

    return GradientTransformation(init_empty_state, update)


# ------------------------------------------------------------------ the aliases

def sgd(learning_rate: ScalarOrSchedule, momentum: float | None = None,
        nesterov: bool = False) -> GradientTransformation:
    """Stochastic gradient descent, with optional (Nesterov) momentum; as in optax, `identity()`
    stands where the momentum would be, so the state always has two entries."""
    opt = trace(decay=momentum, nesterov=nesterov) if momentum is not None else identity()
    return chain(opt, scale_by_learning_rate(learning_rate))


def momentum(learning_rate: ScalarOrSchedule, beta: float = 0.9,
             nesterov: bool = False) -> GradientTransformation:
    """SGD with momentum beta (optax spells it sgd(learning_rate, momentum=beta))."""
    return sgd(learning_rate, momentum=beta, nesterov=nesterov)


def adam(learning_rate: ScalarOrSchedule, b1: float = 0.9, b2: float = 0.999,
         eps: float = 1e-8, eps_root: float = 0.0, mu_dtype: Any = None, *,
         nesterov: bool = False) -> GradientTransformation:
    """Adam: scale_by_adam, then the learning rate; mu_dtype is the first moment's dtype."""
    return chain(scale_by_adam(b1, b2, eps, eps_root, mu_dtype, nesterov=nesterov),
                 scale_by_learning_rate(learning_rate))


def adamw(learning_rate: ScalarOrSchedule, b1: float = 0.9, b2: float = 0.999,
          eps: float = 1e-8, eps_root: float = 0.0, mu_dtype: Any = None,
          weight_decay: ScalarOrSchedule = 1e-4, mask: Any = None, *, nesterov: bool = False
          ) -> GradientTransformation:
    """Adam with decoupled weight decay: the decay is added after Adam's scaling."""
    return chain(scale_by_adam(b1, b2, eps, eps_root, mu_dtype, nesterov=nesterov),
                 add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate))
