"""Stage 5 demo: one example's function, vmapped; its batched jaxpr beside jax's; where the
batch axis sits on each value; and per-example gradients (vmap of grad)."""

from __future__ import annotations

import jax
import numpy as np

import stages.s02_tracing as s02
import stages.s05_vmap as s05

rng = np.random.default_rng(0)
W = rng.normal(size=(3, 2)).astype(np.float32)


def predict(lax, w, x):
    """One example: x is f32[3], the output f32[2]."""
    return lax.tanh(lax.dot_general(x, w, (((0,), (0,)), ((), ()))))


def main() -> None:
    xs = rng.normal(size=(4, 3)).astype(np.float32)  # 4 examples, stacked on axis 0
    ours = s02.make_jaxpr(s05.vmap(lambda w, x: predict(s02.lax, w, x), in_axes=(None, 0)))
    theirs = jax.make_jaxpr(jax.vmap(lambda w, x: predict(jax.lax, w, x), in_axes=(None, 0)))
    print("make_jaxpr(vmap(predict, in_axes=(None, 0)))(W, xs), ours:")
    print(ours(W, xs))
    print("\njax's:")
    print(theirs(W, xs))
    print(f"\nidentical text: {str(ours(W, xs)) == str(theirs(W, xs))}")

    print("\nthe same examples with the batch on axis 1 (in_axes=(None, 1)):")
    seen = []

    def traced(w, x):
        y = s02.lax.dot_general(x, w, (((0,), (0,)), ((), ())))
        seen.extend([("x", x), ("x @ w", y)])
        return s02.lax.tanh(y)

    out = s05.vmap(traced, in_axes=(None, 1))(W, xs.T)
    for name, t in seen:
        print(f"  {name:<6} per-example {t.aval.str_short():<12} batch_dim={t.batch_dim}  "
              f"value {s02.core.get_aval(t.val).str_short()}")
    want = jax.vmap(lambda x: predict(jax.lax, W, x))(xs)
    print(f"max |ours - jax.vmap| = {np.max(np.abs(out - np.asarray(want))):.2e}")
    _per_example_gradients(xs)


def _per_example_gradients(xs: np.ndarray) -> None:
    from stages.s04_autodiff import grad

    ys = rng.normal(size=(4, 2)).astype(np.float32)

    def loss(lax, w, x, y):
        d = lax.sub(predict(lax, w, x), y)
        return lax.reduce_sum(lax.mul(d, d), (0,))

    ours_loss = lambda w, x, y: loss(s02.lax, w, x, y)
    jax_loss = lambda w, x, y: loss(jax.lax, w, x, y)
    ours = s05.vmap(grad(ours_loss), in_axes=(None, 0, 0))(W, xs, ys)
    theirs = jax.vmap(jax.grad(jax_loss), in_axes=(None, 0, 0))(W, xs, ys)
    print("\nper-example gradients, vmap(grad(loss), in_axes=(None, 0, 0)): shape "
          f"{np.shape(ours)}, one f32[3,2] gradient per example")
    print(f"max |ours - jax| = {np.max(np.abs(ours - np.asarray(theirs))):.2e}")
    summed = grad(lambda w: s05.vmap(ours_loss, in_axes=(None, 0, 0))(w, xs, ys).sum())(W)
    print("summed over examples, they equal grad of the summed loss: "
          f"{np.allclose(np.sum(ours, axis=0), summed, rtol=1e-4)}")
    try:
        grad(s05.vmap(ours_loss, in_axes=(None, 0, 0)))(W, xs, ys)
    except TypeError as err:
        print(f"grad(vmap(loss)) instead: TypeError: {err}")


if __name__ == "__main__":
    main()
