"""Stage 2 rows: make_jaxpr of long functions (ours vs jax.make_jaxpr), and eval_jaxpr's
per-equation overhead (ours on numpy vs the same numpy calls made directly)."""

from __future__ import annotations

import jax
import numpy as np

import stages.s02_tracing as s02
from shared.benchmarks.harness import Row, best_time

X = np.linspace(-1.0, 1.0, 8, dtype=np.float32)


def long_function(lax, num_eqns: int):
    """A fresh function of `num_eqns` equations: sin, mul, add, repeated.

    Fresh each call: jax.make_jaxpr goes through jit, which caches traces keyed on the function
    object, and a cache hit is not a trace.
    """

    def f(x):
        for i in range(num_eqns):
            step = i % 3
            if step == 0:
                x = lax.sin(x)
            elif step == 1:
                x = lax.mul(x, 1.5)
            else:
                x = lax.add(x, 0.25)
        return x

    return f


def _numpy_directly(x: np.ndarray, num_eqns: int) -> np.ndarray:
    """The same computation as numpy calls, with no interpreter around them."""
    for i in range(num_eqns):
        step = i % 3
        if step == 0:
            x = np.sin(x)
        elif step == 1:
            x = np.multiply(x, np.float32(1.5))
        else:
            x = np.add(x, np.float32(0.25))
    return x


def rows(quick: bool = False) -> list[Row]:
    sizes = [100, 1_000] if quick else [1_000, 10_000]
    out: list[Row] = []
    per_eqn: dict[int, float] = {}
    for n in sizes:
        ours_closed = s02.make_jaxpr(long_function(s02.lax, n))(X)
        theirs_closed = jax.make_jaxpr(long_function(jax.lax, n))(X)
        assert str(ours_closed) == str(theirs_closed)
        repeat = 3 if n >= 10_000 else 5
        ours_s = best_time(lambda n=n: s02.make_jaxpr(long_function(s02.lax, n))(X),
                           repeat=repeat)
        ref_s = best_time(lambda n=n: jax.make_jaxpr(long_function(jax.lax, n))(X),
                          repeat=repeat)
        per_eqn[n] = ours_s / n
        out.append(Row(stage=2, what=f"make_jaxpr, {n:,} equations", ours_s=ours_s, ref_s=ref_s,
                       ref_name="jax.make_jaxpr",
                       note=f"ours {per_eqn[n] * 1e6:.1f} us/eqn, jax {ref_s / n * 1e6:.1f}"))
    small, large = sizes
    out[-1].note += (f"; ours per eqn {per_eqn[large] / per_eqn[small]:.2f}x the {small:,}-eqn "
                     "figure (1.00x = linear)")

    n = sizes[0]
    closed = s02.make_jaxpr(long_function(s02.lax, n))(X)
    got = s02.eval_jaxpr(closed.jaxpr, closed.consts, X)[0]
    np.testing.assert_allclose(got, _numpy_directly(X, n), rtol=1e-5)
    ours_s = best_time(lambda: s02.eval_jaxpr(closed.jaxpr, closed.consts, X))
    ref_s = best_time(lambda: _numpy_directly(X, n))
    out.append(Row(stage=2, what=f"eval_jaxpr, {n:,} equations on f32[8]", ours_s=ours_s,
                   ref_s=ref_s, ref_name="numpy calls directly",
                   note=f"interpreter overhead {(ours_s - ref_s) / n * 1e6:.1f} us/eqn"))
    return out


if __name__ == "__main__":
    from shared.benchmarks.__main__ import format_table

    print(format_table(rows()))
