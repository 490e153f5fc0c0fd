"""Learning-rate schedules: functions of the step count, traced with the step like any array.

optax: optax/schedules/_schedule.py and _join.py. The count is an int32 array in the optimizer's
state, so a schedule is written with numpy ops (no Python `if` on it) and jit compiles it in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from stages.s02_tracing import numpy as jnp

Schedule = Callable[[Any], Any]


def constant_schedule(value: float) -> Schedule:
    """The same value at every step."""
    return lambda count: value


def polynomial_schedule(init_value: float, end_value: float, power: float,
                        transition_steps: int, transition_begin: int = 0) -> Schedule:
    """From init_value to end_value over transition_steps, as (1 - t/T) ** power."""
    if transition_steps <= 0:
        return lambda count: init_value
    transition_begin = max(transition_begin, 0)

    def schedule(count: Any) -> Any:
        count = jnp.clip(count - transition_begin, 0, transition_steps)
        frac = 1 - count / transition_steps
        return (init_value - end_value) * (frac ** power) + end_value

    return schedule


def linear_schedule(init_value: float, end_value: float, transition_steps: int,
                    transition_begin: int = 0) -> Schedule:
    """A straight line from init_value to end_value, then end_value."""
    return polynomial_schedule(init_value, end_value, 1, transition_steps, transition_begin)


def exponential_decay(init_value: float, transition_steps: int, decay_rate: float,
                      transition_begin: int = 0, staircase: bool = False,
                      end_value: float | None = None) -> Schedule:
    """init_value * decay_rate ** (steps / transition_steps), optionally stepwise and bounded."""
    if transition_steps <= 0 or decay_rate == 0:
        return lambda count: init_value
    transition_begin = max(transition_begin, 0)

    def schedule(count: Any) -> Any:
        decreased = count - transition_begin
        p = decreased / transition_steps
        if staircase:
            p = jnp.floor(p)
        value = jnp.where(decreased <= 0, init_value, init_value * jnp.power(decay_rate, p))
        if end_value is not None:
            value = (jnp.maximum if decay_rate < 1.0 else jnp.minimum)(value, end_value)
        return value

    return schedule


def cosine_decay_schedule(init_value: float, decay_steps: int, alpha: float = 0.0,
                          exponent: float = 1.0) -> Schedule:
    """Half a cosine from init_value down to alpha * init_value over decay_steps."""
    if not decay_steps > 0:
        raise ValueError("The cosine_decay_schedule requires positive decay_steps, got"
                         f" decay_steps={decay_steps!r}.")

    def schedule(count: Any) -> Any:
        count = jnp.minimum(float(count) if isinstance(count, int) else count,
                            float(decay_steps))
        cosine = 0.5 * (1 + jnp.cos(np.pi * count / float(decay_steps)))
        return init_value * ((1 - alpha) * cosine ** exponent + alpha)

    return schedule


def join_schedules(schedules: Sequence[Schedule], boundaries: Sequence[int]) -> Schedule:
    """schedules[0] until boundaries[0], then schedules[1] counted from there, and so on."""
    def schedule(step: Any) -> Any:
        output = schedules[0](step)
        for boundary, later in zip(boundaries, schedules[1:], strict=False):
            output = jnp.where(step < boundary, output, later(step - boundary))
        return output

    return schedule


def warmup_cosine_decay_schedule(init_value: float, peak_value: float, warmup_steps: int,
                                 decay_steps: int, end_value: float = 0.0,
                                 exponent: float = 1.0) -> Schedule:
    """A linear warmup to peak_value, then a cosine decay to end_value."""
    alpha = 0.0 if peak_value == 0.0 else end_value / peak_value
    return join_schedules([linear_schedule(init_value, peak_value, warmup_steps),
                           cosine_decay_schedule(peak_value, decay_steps - warmup_steps,
                                                 alpha, exponent)], [warmup_steps])
