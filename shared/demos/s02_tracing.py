"""Stage 2 demo: a small function traced to a jaxpr, printed beside jax's, then evaluated."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import stages.s02_tracing as s02

rng = np.random.default_rng(0)
W = rng.normal(size=(3, 2)).astype(np.float32)  # captured from the closure: a constvar
B = np.zeros(2, np.float32)


def layer(lax, x):
    """tanh(x @ W + B) * 2.0, written against a `lax` module so it runs on ours and on jax's."""
    y = lax.dot_general(x, W, (((1,), (0,)), ((), ())))
    y = lax.add(y, lax.broadcast_in_dim(B, y.shape, (1,)))
    return lax.mul(lax.tanh(y), 2.0)


def main() -> None:
    x = rng.normal(size=(4, 3)).astype(np.float32)
    calls = []

    def ours_fn(x):
        calls.append(repr(x))  # runs once, during tracing, and sees a tracer
        return layer(s02.lax, x)

    ours = s02.make_jaxpr(ours_fn)(x)
    theirs = jax.make_jaxpr(lambda x: layer(jax.lax, x))(x)
    print("ours, stages.s02_tracing.make_jaxpr:")
    print(ours)
    print("\njax.make_jaxpr:")
    print(theirs)
    print(f"\nidentical text: {str(ours) == str(theirs)}")
    print(f"the Python function ran {len(calls)} time(s) while tracing; "
          f"its argument was {calls[0]}")

    (out,) = s02.eval_jaxpr(ours.jaxpr, ours.consts, x)
    want = np.asarray(jnp.tanh(x @ W + B) * 2.0)
    print("\neval_jaxpr(ours) on numpy:")
    print(np.round(out, 4))
    print(f"max |ours - jax| = {np.max(np.abs(out - want)):.2e}")


if __name__ == "__main__":
    main()
