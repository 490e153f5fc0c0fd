"""Stage 4 demo: a function, its jvp, its linear jaxpr and residuals, grad vs the analytic one."""

from __future__ import annotations

import jax
import numpy as np

import stages.s02_tracing as s02
import stages.s04_autodiff as s04


def f(lax, x):
    """sin(x) * cos(x), whose derivative is cos(2x)."""
    return lax.mul(lax.sin(x), lax.cos(x))


def main() -> None:
    lax = s02.lax
    x = np.float32(0.5)
    print("f(x) = sin(x) * cos(x)")
    print(s02.make_jaxpr(lambda x: f(lax, x))(x))

    y, t = s04.jvp(lambda x: f(lax, x), (x,), (np.float32(1.0),))
    print(f"\njvp at x = 0.5, tangent 1.0: f = {float(y):.6f}, df = {float(t):.6f}")
    print("the jvp as a jaxpr (primal and tangent equations interleaved):")
    print(s02.make_jaxpr(lambda x, t: s04.jvp(lambda x: f(lax, x), (x,), (t,)))(x, x))

    _, f_jvp = s04.linearize(lambda x: f(lax, x), x)
    print("\nlinearize: the linear jaxpr; its constants are the residuals")
    print(f_jvp.jaxpr)
    print("residuals:", [round(float(r), 6) for r in f_jvp.residuals],
          f"(cos 0.5 = {np.cos(0.5):.6f}, sin 0.5 = {np.sin(0.5):.6f})")

    xs = np.linspace(-2.0, 2.0, 5, dtype=np.float32)
    ours = np.array([float(s04.grad(lambda x: f(lax, x))(v)) for v in xs])
    theirs = np.array([float(jax.grad(lambda x: f(jax.lax, x))(v)) for v in xs])
    print("\ngrad at", xs)
    print("  ours      ", np.round(ours, 6))
    print("  jax.grad  ", np.round(theirs, 6))
    print("  cos(2x)   ", np.round(np.cos(2 * xs), 6))
    print(f"max |ours - cos(2x)| = {np.max(np.abs(ours - np.cos(2 * xs))):.1e}")


if __name__ == "__main__":
    main()
