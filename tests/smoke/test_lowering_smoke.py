"""Smoke test of stage 8: our StableHLO text compiles and runs with the installed jaxlib.

Values only (the stage's tests pin JAX 0.10.2's exact text), so that it holds on whatever JAX is
installed, a GPU machine's environment included (it compiles for jaxlib's CPU client there too).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from shared.xla_runner import run_text
from stages import s02_tracing as s02
from stages import s04_autodiff as s04
from stages import s06_control_flow as s06
from stages import s08_lowering as s08

onp = s02.numpy
X = np.array([0.5, -1.25, 2.0], np.float32)
W = np.arange(12, dtype=np.float32).reshape(3, 4) / 10


def _program(np_, cf, grad):
    def loss(w, x):
        h, _ = cf.scan(lambda c, r: (np_.tanh(c * r), c.sum()), x, np_.transpose(w))
        return cf.cond(np_.sum(h) > 0.0, lambda h: np_.sum(h * h), lambda h: -np_.sum(h), h)
    return lambda w, x: (loss(w, x), grad(loss)(w, x))


def test_a_lowered_program_runs_and_agrees_with_jax():
    text = s08.lower(_program(onp, s06, s04.grad), W, X).as_text()
    ours = run_text(text, [W, X])
    theirs = jax.jit(_program(jnp, jax.lax, jax.grad))(W, X)
    for a, e in zip(ours, jax.tree.leaves(theirs), strict=True):
        np.testing.assert_allclose(a, np.asarray(e), rtol=1e-4, atol=1e-6)
