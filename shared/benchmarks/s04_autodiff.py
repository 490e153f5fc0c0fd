"""Stage 4 rows: grad of a long function, traced to a jaxpr (trace + linearize + transpose),
ours vs `jax.make_jaxpr(jax.grad(f))`, and eager grad on numpy beside jax.grad.

The function repeats sin, mul, add over a vector and sums it, so its gradient jaxpr holds the
forward equations, the linear ones, and their transposes. A fresh function per call keeps
JAX's trace caches (keyed on the function object) from answering instead of tracing.
"""

from __future__ import annotations

import jax
import numpy as np

import stages.s02_tracing as s02
import stages.s04_autodiff as s04
from shared.benchmarks.harness import Row, best_time
from shared.benchmarks.s02_tracing import long_function

X = np.linspace(-1.0, 1.0, 8, dtype=np.float32)


def _long_function(lax, num_eqns: int):
    """A fresh scalar function of `num_eqns` equations: stage 2's sin, mul, add chain, a sum."""
    chain = long_function(lax, num_eqns - 1)

    def f(x):
        return lax.reduce_sum(chain(x), (0,))

    return f


def rows(quick: bool = False) -> list[Row]:
    n = 200 if quick else 1_000
    repeat = 3 if quick else 5
    ours_closed = s02.make_jaxpr(s04.grad(_long_function(s02.lax, n)))(X)
    theirs_closed = jax.make_jaxpr(jax.grad(_long_function(jax.lax, n)))(X)
    got = s02.eval_jaxpr(ours_closed.jaxpr, ours_closed.consts, X)[0]
    np.testing.assert_allclose(got, jax.grad(_long_function(jax.lax, n))(X), rtol=1e-4,
                               atol=1e-5)
    ours_s = best_time(lambda: s02.make_jaxpr(s04.grad(_long_function(s02.lax, n)))(X),
                       repeat=repeat)
    ref_s = best_time(lambda: jax.make_jaxpr(jax.grad(_long_function(jax.lax, n)))(X),
                      repeat=repeat)
    out = [Row(stage=4, what=f"make_jaxpr(grad(f)), {n:,}-equation f", ours_s=ours_s,
               ref_s=ref_s, ref_name="jax.make_jaxpr(jax.grad)",
               note=f"{len(ours_closed.eqns):,} eqns in ours, {len(theirs_closed.eqns):,} in jax")]

    m = n // 5
    f_ours, f_theirs = _long_function(s02.lax, m), _long_function(jax.lax, m)
    ours_s = best_time(lambda: s04.grad(f_ours)(X), repeat=repeat)
    ref_s = best_time(lambda: jax.grad(f_theirs)(X), repeat=repeat)
    out.append(Row(stage=4, what=f"eager grad(f), {m:,}-equation f on f32[8]", ours_s=ours_s,
                   ref_s=ref_s, ref_name="jax.grad (op-by-op)",
                   note="ours runs numpy per equation; jax dispatches each op to XLA"))
    return out
