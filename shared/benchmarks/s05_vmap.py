"""Stage 5 rows: vmap over a batch vs a Python loop of the same function (both ours: the
speedup batching buys), and the trace time of make_jaxpr(vmap(f)), ours vs JAX's, for a long
elementwise function and for a gather-heavy one (an embedding lookup and a loss)."""

from __future__ import annotations

import jax
import numpy as np

import stages.s02_tracing as s02
import stages.s05_vmap as s05
from shared.benchmarks.harness import Row, best_time

_rng = np.random.default_rng(0)
W1 = _rng.standard_normal((32, 16)).astype(np.float32)
W2 = _rng.standard_normal((8, 32)).astype(np.float32)


def _mlp(lax):
    """One example's forward pass: a two-layer MLP with a softmax, ~15 primitives."""

    def f(x):
        h = lax.tanh(lax.dot_general(W1, x, (((1,), (0,)), ((), ()))))
        logits = lax.dot_general(W2, h, (((1,), (0,)), ((), ())))
        e = lax.exp(lax.sub(logits, lax.reduce_max(logits, (0,))))
        return lax.div(e, lax.reduce_sum(e, (0,)))

    return f


def _long_function(lax, num_eqns: int):
    """A fresh per-example function of about `num_eqns` primitives (fresh: jax caches traces
    on the function object, and a cache hit is not a trace)."""

    def f(x, y):
        for i in range(num_eqns // 3):
            x = lax.add(lax.mul(lax.sin(x), y), 0.5) if i % 2 else lax.tanh(lax.sub(x, y))
        return lax.reduce_sum(x, (0,))

    return f


def _embedding_loss(jnp):
    """One example's loss: look its token ids up in a shared table (a gather), pool, compare.
    Fresh on every call, so that no trace cache answers for it."""

    def loss(table, ids, target):
        emb = jnp.asarray(table)[ids]  # (tokens, dim): one gather
        pooled = jnp.tanh(emb).sum(0) / ids.shape[0]
        return jnp.sum((pooled - target) ** 2)

    return loss


def _embedding_row(quick: bool) -> Row:
    batch, tokens, vocab, dim = (16, 8, 100, 16) if quick else (64, 32, 1_000, 64)
    table = _rng.standard_normal((vocab, dim)).astype(np.float32)
    ids = _rng.integers(0, vocab, (batch, tokens)).astype(np.int32)
    targets = _rng.standard_normal((batch, dim)).astype(np.float32)
    args = (table, ids, targets)

    def ours():
        return s02.make_jaxpr(s05.vmap(_embedding_loss(s02.numpy), in_axes=(None, 0, 0)))(*args)

    def theirs():
        return jax.make_jaxpr(jax.vmap(_embedding_loss(jax.numpy), in_axes=(None, 0, 0)))(*args)

    assert str(ours()) == str(theirs())
    np.testing.assert_allclose(
        s05.vmap(_embedding_loss(s02.numpy), in_axes=(None, 0, 0))(*args),
        jax.vmap(_embedding_loss(jax.numpy), in_axes=(None, 0, 0))(*args), rtol=1e-4)
    ours_s, ref_s = best_time(ours), best_time(theirs)
    return Row(stage=5, what=f"make_jaxpr(vmap(embedding lookup + loss)), batch {batch}",
               ours_s=ours_s, ref_s=ref_s, ref_name="jax.make_jaxpr(jax.vmap)",
               note=f"same printed jaxpr ({len(ours().eqns)} equations, one batched gather)")


def rows(quick: bool = False) -> list[Row]:
    out: list[Row] = []
    batch = 128 if quick else 1_024
    xs = _rng.standard_normal((batch, 16)).astype(np.float32)
    f = _mlp(s02.lax)
    batched = s05.vmap(f)
    looped = lambda: np.stack([f(x) for x in xs])
    np.testing.assert_allclose(batched(xs), looped(), rtol=1e-5, atol=1e-6)
    ours_s = best_time(lambda: batched(xs))
    loop_s = best_time(looped, repeat=3)
    out.append(Row(stage=5, what=f"vmap of an MLP over {batch:,} examples", ours_s=ours_s,
                   ref_s=loop_s, ref_name="Python loop (ours)",
                   note=f"vmap is {loop_s / ours_s:.0f}x faster than the loop"))

    num_eqns = 60 if quick else 300
    ys = _rng.standard_normal((8, 4)).astype(np.float32)
    mine = s02.make_jaxpr(s05.vmap(_long_function(s02.lax, num_eqns), in_axes=(0, None)))(
        ys, ys[0])
    theirs = jax.make_jaxpr(jax.vmap(_long_function(jax.lax, num_eqns), in_axes=(0, None)))(
        ys, ys[0])
    assert str(mine) == str(theirs)
    ours_s = best_time(lambda: s02.make_jaxpr(
        s05.vmap(_long_function(s02.lax, num_eqns), in_axes=(0, None)))(ys, ys[0]))
    ref_s = best_time(lambda: jax.make_jaxpr(
        jax.vmap(_long_function(jax.lax, num_eqns), in_axes=(0, None)))(ys, ys[0]))
    out.append(Row(stage=5, what=f"make_jaxpr(vmap(f)), {len(mine.eqns)} equations",
                   ours_s=ours_s, ref_s=ref_s, ref_name="jax.make_jaxpr(jax.vmap)",
                   note="same printed jaxpr; trace + batch every equation"))
    out.append(_embedding_row(quick))
    return out


if __name__ == "__main__":
    from shared.benchmarks.__main__ import format_table

    print(format_table(rows()))
