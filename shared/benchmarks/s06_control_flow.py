"""Stage 6 rows: tracing a scan is flat in its length; grad of a long scan, ours vs JAX.

Each timed call builds fresh Python functions, so neither side can answer from a trace cache
(JAX memoizes tracing on function identity): we time tracing, not a cache hit. JAX's side is
traced with `jax.make_jaxpr`, so both sides stop at the jaxpr.
"""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np

import stages.s02_tracing as s02
import stages.s04_autodiff as s04
import stages.s06_control_flow as s06
from shared.benchmarks.harness import Row, best_time


def _scan_fn(cf, jnp):
    """A fresh function whose body is a few equations: c = tanh(c * w + x); y = c * c."""
    def f(w, xs):
        def body(c, x):
            c = jnp.tanh(c * w + x)
            return c, c * c
        c, ys = cf.scan(body, jnp.zeros(4), xs)
        return (c.sum() + ys.sum()) * 0.5
    return f


def _trace_ours(length: int) -> object:
    return s02.make_jaxpr(_scan_fn(s06, s02.numpy))(np.float32(0.5), np.ones((length, 4),
                                                                             np.float32))


def _trace_jax(length: int) -> object:
    return jax.make_jaxpr(_scan_fn(jax.lax, jjnp))(np.float32(0.5), np.ones((length, 4),
                                                                           np.float32))


def rows(quick: bool = False) -> list[Row]:
    repeat = 3 if quick else 7
    long = 1_000 if quick else 10_000
    out = []
    times = {}
    for length in (10, long):
        assert len(_trace_ours(length).eqns) == len(_trace_ours(10).eqns)  # flat
        times[length] = best_time(lambda n=length: _trace_ours(n), repeat=repeat)
        out.append(Row(stage=6, what=f"make_jaxpr of a scan, length {length:,}",
                       ours_s=times[length],
                       ref_s=best_time(lambda n=length: _trace_jax(n), repeat=repeat),
                       ref_name="jax.make_jaxpr(lax.scan)",
                       note=f"ours length {long:,} / length 10: "
                            f"{times[long] / times[10]:.2f}x (flat)" if length == long else ""))

    steps = 100 if quick else 1_000
    xs = np.linspace(-1, 1, steps * 4, dtype=np.float32).reshape(steps, 4)

    def grad_ours() -> object:
        return s02.make_jaxpr(s04.grad(_scan_fn(s06, s02.numpy), (0, 1)))(np.float32(0.5), xs)

    def grad_jax() -> object:
        return jax.make_jaxpr(jax.grad(_scan_fn(jax.lax, jjnp), (0, 1)))(np.float32(0.5), xs)

    ours_g = s04.grad(_scan_fn(s06, s02.numpy), (0, 1))(np.float32(0.5), xs)
    jax_g = jax.grad(_scan_fn(jax.lax, jjnp), (0, 1))(np.float32(0.5), xs)
    np.testing.assert_allclose(ours_g[1], jax_g[1], rtol=1e-4, atol=1e-6)
    out.append(Row(stage=6, what=f"make_jaxpr(grad) of a {steps:,}-step scan",
                   ours_s=best_time(grad_ours, repeat=repeat),
                   ref_s=best_time(grad_jax, repeat=repeat),
                   ref_name="jax.make_jaxpr(jax.grad(lax.scan))",
                   note="jvp + partial eval + transpose of the body, once"))
    return out
