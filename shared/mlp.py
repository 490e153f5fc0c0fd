"""A multilayer perceptron and its SGD training step, written once against a numpy module.

`make_train_step(np_module, value_and_grad, tree_map)` is the same step on our stages
(`stages.s02_tracing.numpy`, stage 4's `value_and_grad`, stage 1's `tree_map`) and on JAX
(`jax.numpy`, `jax.value_and_grad`, `jax.tree_util.tree_map`): stage 9's page, its demo, the
benchmarks and the GPU check jit both and compare them step by step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np


def init_params(sizes: Sequence[int] = (784, 512, 512, 10), seed: int = 0) -> list[dict]:
    """One {"w", "b"} per layer, float32, scaled so the activations stay O(1)."""
    rng = np.random.default_rng(seed)
    return [{"w": (rng.standard_normal((m, n)) / np.sqrt(m)).astype(np.float32),
             "b": np.zeros(n, np.float32)} for m, n in zip(sizes[:-1], sizes[1:], strict=True)]


def batch(batch_size: int = 128, sizes: Sequence[int] = (784, 512, 512, 10), seed: int = 1
          ) -> tuple[np.ndarray, np.ndarray]:
    """Inputs and one-hot labels of one batch."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch_size, sizes[0])).astype(np.float32)
    labels = rng.integers(0, sizes[-1], batch_size)
    return x, np.eye(sizes[-1], dtype=np.float32)[labels]


def make_train_step(np_: Any, value_and_grad: Callable, tree_map: Callable,
                    learning_rate: float = 0.01) -> Callable:
    """step(params, x, y) -> (new params, loss): softmax cross-entropy, one SGD update."""
    def loss(params: list[dict], x: Any, y: Any) -> Any:
        for layer in params[:-1]:
            x = np_.maximum(np_.dot(x, layer["w"]) + layer["b"], 0.0)
        logits = np_.dot(x, params[-1]["w"]) + params[-1]["b"]
        top = np_.max(logits, axis=1, keepdims=True)
        log_z = np_.log(np_.sum(np_.exp(logits - top), axis=1, keepdims=True)) + top
        return -np_.mean(np_.sum((logits - log_z) * y, axis=1))

    def step(params: list[dict], x: Any, y: Any) -> tuple[list[dict], Any]:
        value, grads = value_and_grad(loss)(params, x, y)
        return tree_map(lambda p, g: p - learning_rate * g, params, grads), value

    return step
