"""The finale's model: a character-level transformer on shared/data/shakespeare.txt.

Ours is written with stage 12's modules (`CharTransformer`), trained with our jit, grad and
optimizer. `jax_init` and `jax_loss` are the same model in jax.numpy, drawing its initial
params with jax.random along the same module paths: the test, the bench and the GPU check run
both and compare them. The batches of step k start at `random.bits(fold_in(key, k))`, so both
sides (and a resumed run) see the same data in the same order.
"""

from __future__ import annotations

import dataclasses
import zlib
from pathlib import Path
from typing import Any

import numpy as np

import stages.s12_system as ujax
from stages.s12_system import nn

TEXT = Path(__file__).resolve().parent / "data" / "shakespeare.txt"


@dataclasses.dataclass(frozen=True)
class Config:
    context: int = 32
    d_model: int = 64
    layers: int = 2
    heads: int = 4
    batch: int = 32
    steps: int = 600
    learning_rate: float = 3e-3
    seed: int = 0


def load_text(limit: int | None = None) -> tuple[np.ndarray, list[str]]:
    """The text as int32 character ids, and the sorted characters they index."""
    text = TEXT.read_text()[:limit]
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    return np.array([index[c] for c in text], np.int32), chars


# ------------------------------------------------------------------ ours: stage 12's modules

class Block(nn.Module):
    """Pre-norm transformer block: x + attention(ln(x)), then x + mlp(ln(x))."""

    def __init__(self, heads: int):
        self.heads = heads

    def __call__(self, x: Any, mask: Any) -> Any:
        d = np.shape(x)[-1]
        x = x + nn.MultiHeadAttention(self.heads, name="attn")(nn.LayerNorm(name="ln1")(x),
                                                               mask=mask)
        h = nn.gelu(nn.Dense(4 * d, name="fc")(nn.LayerNorm(name="ln2")(x)))
        return x + nn.Dense(d, name="proj")(h)


class CharTransformer(nn.Module):
    """Token and position embeddings, `layers` blocks, a final norm and a vocabulary head."""

    def __init__(self, vocab: int, config: Config):
        self.vocab, self.config = vocab, config

    def __call__(self, ids: Any) -> Any:
        c, length = self.config, np.shape(ids)[-1]
        pos = self.param("pos", nn.normal(0.02), (c.context, c.d_model))
        embed = nn.Embed(self.vocab, c.d_model, embedding_init=nn.normal(1.0), name="embed")
        x = embed(ids) + pos[:length]
        mask = nn.make_causal_mask(length)
        for i in range(c.layers):
            x = Block(c.heads, name=f"block_{i}")(x, mask)
        return nn.Dense(self.vocab, name="head")(nn.LayerNorm(name="ln_f")(x))


def cross_entropy(np_: Any, logits: Any, targets: Any, vocab: int) -> Any:
    """Mean negative log-likelihood of the targets (ids), written once for both numpys."""
    top = np_.max(logits, axis=-1, keepdims=True)
    log_z = np_.log(np_.sum(np_.exp(logits - top), axis=-1, keepdims=True)) + top
    hit = np_.expand_dims(targets, -1) == np_.arange(vocab)  # a where: -inf * 0 would be NaN
    picked = np_.sum(np_.where(hit, logits - log_z, 0.0), axis=-1)
    return -np_.mean(picked)


def make_train_step(model: CharTransformer, tx: Any) -> Any:
    """step(params, opt_state, x, y) -> (params, opt_state, loss), jitted with our jit: every
    stage's transformation is in it (the course-end page draws the step through them)."""
    return ujax.jit(make_step(model, tx))


def make_step(model: CharTransformer, tx: Any) -> Any:
    """The training step before jit (stage 11's jit takes it with shardings)."""
    def one_example(logits: Any, targets: Any) -> Any:
        return cross_entropy(ujax.numpy, logits, targets, model.vocab)

    def loss(params: Any, x: Any, y: Any) -> Any:
        # per-example losses by vmap (stage 5), then their mean
        return ujax.numpy.mean(ujax.vmap(one_example)(model.apply(params, x), y))

    def step(params: Any, opt_state: Any, x: Any, y: Any) -> tuple[Any, Any, Any]:
        value, grads = ujax.value_and_grad(loss)(params, x, y)
        updates, new_opt_state = tx.update(grads, opt_state, params)
        new_params = ujax.optim.apply_updates(params, updates)
        # a step whose loss is not finite is skipped: a cond (stage 6), decided on the device
        return (*ujax.lax.cond(value < np.float32(np.inf), lambda: (new_params, new_opt_state),
                               lambda: (params, opt_state)), value)

    return step


def batch_starts(random: Any, key: Any, step: int, n: int, config: Config) -> np.ndarray:
    """Where the windows of step `step` start: random bits of the step's key, modulo."""
    bits = np.asarray(random.bits(random.fold_in(key, step), (config.batch,)))
    return (bits % np.uint32(n - config.context - 1)).astype(np.int64)


def get_batch(data: np.ndarray, starts: np.ndarray, context: int) -> tuple[np.ndarray, ...]:
    """Inputs and next-character targets, (batch, context) int32 each."""
    windows = starts[:, None] + np.arange(context + 1)
    chunk = data[windows]
    return chunk[:, :-1], chunk[:, 1:]


def sample(model: CharTransformer, params: Any, prompt: np.ndarray, length: int, key: Any,
           temperature: float = 0.8) -> np.ndarray:
    """Continue `prompt` by `length` characters, one jitted call per character (fixed shape)."""
    context = model.config.context

    @ujax.jit
    def next_id(params: Any, window: Any, key: Any) -> Any:
        logits = model.apply(params, window[None, :])[0, -1]
        return ujax.random.categorical(key, logits / temperature)

    ids = list(np.asarray(prompt, np.int32))
    for k in range(length):
        window = np.array(([ids[0]] * context + ids)[-context:], np.int32)
        ids.append(int(next_id(params, window, ujax.random.fold_in(key, k))))
    return np.array(ids[len(prompt):], np.int32)


# ------------------------------------------------------------------ the same model in JAX

def _jax_key(jax: Any, seed: int, path: tuple[str, ...]) -> Any:
    key = jax.random.PRNGKey(seed)
    for name in path:
        key = jax.random.fold_in(key, zlib.crc32(name.encode()))
    return key


def jax_init(vocab: int, config: Config) -> dict:
    """The params stage 12's init makes, drawn with jax.random along the same paths."""
    import jax

    c, s = config, config.seed

    def normal(path: tuple, shape: tuple, scale: float) -> Any:
        return jax.random.normal(_jax_key(jax, s, path), shape) * np.float32(scale)

    def dense(path: tuple, fan_in: int, features: int) -> dict:
        return {"kernel": normal((*path, "kernel"), (fan_in, features), 1 / np.sqrt(fan_in)),
                "bias": np.zeros(features, np.float32)}

    def norm() -> dict:
        return {"scale": np.ones(c.d_model, np.float32), "bias": np.zeros(c.d_model, np.float32)}

    params = {"pos": normal(("pos",), (c.context, c.d_model), 0.02),
              "embed": {"embedding": normal(("embed", "embedding"), (vocab, c.d_model), 1.0)},
              "ln_f": norm(), "head": dense(("head",), c.d_model, vocab)}
    for i in range(c.layers):
        b = f"block_{i}"
        params[b] = {"ln1": norm(), "ln2": norm(),
                     "attn": {n: dense((b, "attn", n), c.d_model, c.d_model)
                              for n in ("query", "key", "value", "out")},
                     "fc": dense((b, "fc"), c.d_model, 4 * c.d_model),
                     "proj": dense((b, "proj"), 4 * c.d_model, c.d_model)}
    return params


def jax_apply(params: dict, ids: Any, vocab: int, config: Config) -> Any:
    """CharTransformer's forward pass in jax.numpy."""
    import jax
    import jax.numpy as jnp

    c, length = config, ids.shape[-1]

    def dense(p: dict, x: Any) -> Any:
        return x @ p["kernel"] + p["bias"]

    def norm(p: dict, x: Any) -> Any:
        mean = jnp.mean(x, -1, keepdims=True)
        var = jnp.maximum(0.0, jnp.mean(x * x, -1, keepdims=True) - mean * mean)
        return (x - mean) * jax.lax.rsqrt(var + 1e-6) * p["scale"] + p["bias"]

    def heads(y: Any) -> Any:
        return jnp.swapaxes(y.reshape(*y.shape[:-1], c.heads, c.d_model // c.heads), -2, -3)

    x = jnp.take(params["embed"]["embedding"], ids, axis=0) + params["pos"][:length]
    mask = np.tril(np.ones((length, length), bool))
    for i in range(c.layers):
        p = params[f"block_{i}"]
        h = norm(p["ln1"], x)
        q, k, v = (heads(dense(p["attn"][n], h)) for n in ("query", "key", "value"))
        logits = q @ jnp.swapaxes(k, -1, -2) / np.float32(np.sqrt(c.d_model // c.heads))
        logits = jnp.where(mask, logits, np.float32(-1e9))
        z = jnp.exp(logits - jax.lax.stop_gradient(jnp.max(logits, -1, keepdims=True)))
        att = jnp.swapaxes((z / jnp.sum(z, -1, keepdims=True)) @ v, -2, -3)
        x = x + dense(p["attn"]["out"], att.reshape(*att.shape[:-2], c.d_model))
        h = dense(p["fc"], norm(p["ln2"], x))
        x = x + dense(p["proj"], 0.5 * h * (1 + jnp.tanh(np.float32(np.sqrt(2 / np.pi)) * (
            h + 0.044715 * h ** 3))))
    return dense(params["head"], norm(params["ln_f"], x))


def jax_train_step(vocab: int, config: Config) -> Any:
    """The same step with jax.jit, jax.value_and_grad and optax.adam."""
    import jax
    import jax.numpy as jnp
    import optax

    tx = optax.adam(config.learning_rate)

    def loss(params: Any, x: Any, y: Any) -> Any:
        return cross_entropy(jnp, jax_apply(params, x, vocab, config), y, vocab)

    @jax.jit
    def step(params: Any, opt_state: Any, x: Any, y: Any) -> tuple[Any, Any, Any]:
        value, grads = jax.value_and_grad(loss)(params, x, y)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, value

    return step, tx


def both_steps(config: Config, device: Any = None) -> tuple[Any, Any]:
    """Ours and JAX's training step on one batch, each calling its step once per call with the
    state kept on its device, from the same params (drawn by jax_init, which the tests show is
    bit-equal to our init). Call inside `use_pjrt()`: returns (run_ours, run_jax), each
    returning the step's loss."""
    import jax

    data, chars = load_text()
    vocab = len(chars)
    model = CharTransformer(vocab, config)
    tx = ujax.optim.adam(config.learning_rate)
    ours = make_train_step(model, tx)
    theirs, jtx = jax_train_step(vocab, config)
    params = jax.tree_util.tree_map(np.asarray, jax_init(vocab, config))
    key = jax.random.fold_in(jax.random.PRNGKey(config.seed), 1)
    x, y = get_batch(data, batch_starts(jax.random, key, 0, len(data), config), config.context)
    state = [ujax.tree_util.tree_map(ujax.device_put, params),
             ujax.tree_util.tree_map(ujax.device_put, tx.init(params))]
    jstate = [jax.device_put(params, device), jax.device_put(jtx.init(params), device)]
    xd, yd = ujax.device_put(x), ujax.device_put(y)
    xj, yj = jax.device_put((x, y), device)

    def run_ours() -> Any:
        state[0], state[1], loss = ours(state[0], state[1], xd, yd)
        return loss

    def run_jax() -> Any:
        jstate[0], jstate[1], loss = theirs(jstate[0], jstate[1], xj, yj)
        return loss

    return run_ours, run_jax
