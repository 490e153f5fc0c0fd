"""Stage 8 row: lowering a 10,000-equation jaxpr to StableHLO text, ours vs JAX's.

Both sides start from a traced program and stop at the module's text. JAX caches a lowering on
its Traced object, so each of its samples traces a fresh function first (untimed) and times
`traced.lower().as_text()`; ours keeps no cache, so it lowers the same jaxpr each time.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jjnp
import numpy as np

import stages.s02_tracing as s02
import stages.s08_lowering as s08
from shared.benchmarks.harness import Row


def _program(jnp: Any, steps: int) -> Callable:
    """A fresh function of 4 equations a step: sin, a multiply by a literal, add, square."""
    def f(x):
        for _ in range(steps):
            x = jnp.sin(x) * 1.5 + x
            x = x * x
        return x
    return f


def _best(run: Callable[[Any], object], setup: Callable[[], Any], repeat: int) -> float:
    """Best seconds of `run(setup())`, the setup untimed, gc off while timing."""
    best = float("inf")
    for _ in range(repeat):
        arg = setup()
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            run(arg)
            best = min(best, time.perf_counter() - start)
        finally:
            gc.enable()
    return best


def rows(quick: bool = False) -> list[Row]:
    steps = 250 if quick else 2_500
    repeat = 3 if quick else 5
    x = np.ones(4, np.float32)
    closed = s02.make_jaxpr(_program(s02.numpy, steps))(x)
    n = len(closed.eqns)
    ours_text = s08.lower_jaxpr(closed, "f", result_names=["result"]).as_text()
    theirs_text = jax.jit(_program(jjnp, steps)).lower(x).as_text()
    assert ours_text == theirs_text  # the same module, so the same work
    ours = _best(lambda c: s08.lower_jaxpr(c, "f", result_names=["result"]).as_text(),
                 lambda: closed, repeat)
    theirs = _best(lambda t: t.lower().as_text(),
                   lambda: jax.jit(_program(jjnp, steps)).trace(x), repeat)
    return [Row(stage=8, what=f"lower a {n:,}-equation jaxpr to text", ours_s=ours,
                ref_s=theirs, ref_name="jax.jit(f).trace(x).lower().as_text()",
                note="identical text on both sides")]
