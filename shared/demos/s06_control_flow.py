"""Stage 6 demo: a loop that stays one equation, the carry rule, cond under vmap, grad of scan."""

from __future__ import annotations

import jax
import numpy as np

import stages.s06_control_flow as lax
from stages.s02_tracing import make_jaxpr
from stages.s02_tracing import numpy as jnp
from stages.s04_autodiff import grad, jvp
from stages.s05_vmap import vmap


def step(c, x):
    return c * 0.5 + jnp.sin(x), c


def main() -> None:
    def python_loop(c, xs):
        for x in xs:
            c, _ = step(c, x)
        return c

    print("equations in the jaxpr: a Python for loop unrolls, a scan does not")
    for n in (10, 100, 1_000):
        xs = np.ones(n, np.float32)
        loop = len(make_jaxpr(python_loop)(0.0, xs).eqns)
        scanned = len(make_jaxpr(lambda c, xs: lax.scan(step, c, xs))(0.0, xs).eqns)
        print(f"  length {n:>5}: Python loop {loop:>5}, scan {scanned}")

    xs = np.linspace(0, 1, 4, dtype=np.float32)
    print("\nthe scan, its body a parameter of one equation:")
    print(make_jaxpr(lambda c, xs: lax.scan(step, c, xs))(np.float32(1.0), xs))

    print("\nthe carry must keep its type (JAX's message):")
    try:
        lax.scan(lambda c, x: (c.astype(np.int32), x), np.float32(0), xs)
    except TypeError as err:
        print(f"  TypeError: {err}")
    print("  ...but a Python-scalar init is promoted:",
          lax.scan(lambda c, x: (c + x, x), 0, xs)[0])

    pred = np.array([True, False, True])
    f = vmap(lambda p, x: lax.cond(p, jnp.sin, jnp.cos, x))
    print("\nvmap of cond with a batched predicate runs both branches and selects:")
    print(make_jaxpr(f)(pred, xs[:3]))
    print("  values:", f(pred, xs[:3]), " jax:",
          jax.vmap(lambda p, x: jax.lax.cond(p, jax.numpy.sin, jax.numpy.cos, x))(pred, xs[:3]))

    loss = lambda w: lax.scan(lambda c, x: (jnp.tanh(c * w + x), c), 0.0, xs)[0]  # noqa: E731
    jloss = lambda w: jax.lax.scan(  # noqa: E731
        lambda c, x: (jax.numpy.tanh(c * w + x), c), 0.0, xs)[0]
    print(f"\ngrad of a scan: ours {grad(loss)(0.7):.6f}, jax {jax.grad(jloss)(0.7):.6f}")
    doubling = lambda x: lax.while_loop(lambda c: c < 10.0, lambda c: c * 2.0, x)  # noqa: E731
    print("jvp of a while_loop:", [float(v) for v in jvp(doubling, (1.0,), (1.0,))])
    try:
        grad(doubling)(1.0)
    except ValueError as err:
        print(f"grad of a while_loop: ValueError: {err}")


if __name__ == "__main__":
    main()
