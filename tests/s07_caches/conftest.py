"""Stage 7's test helpers: ours and JAX side by side, and counters read as deltas.

The caches are global (as JAX's are), so a test never asserts absolute counts: `Counts()` takes
a snapshot of every layer and `.delta()` gives what happened since, as {layer: (hits, misses)}
with the untouched layers left out. Each test jits functions it defines itself, so no other
test's entries can answer for it.
"""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import stages.s02_tracing as s02
import stages.s04_autodiff as s04
import stages.s05_vmap as s05
import stages.s06_control_flow as s06
import stages.s07_caches as s07
from stages.s02_tracing import config
from stages.s07_caches import compilation_cache, explain, util

OURS = SimpleNamespace(name="ours", jit=s07.jit, jnp=s02.numpy, lax=s02.lax, cf=s06,
                       make_jaxpr=s02.make_jaxpr, grad=s04.grad, jvp=s04.jvp, vjp=s04.vjp,
                       vmap=s05.vmap, disable_jit=s07.disable_jit, custom_jvp=s04.custom_jvp)
THEIRS = SimpleNamespace(name="jax", jit=jax.jit, jnp=jjnp, lax=jax.lax, cf=jax.lax,
                         make_jaxpr=jax.make_jaxpr, grad=jax.grad, jvp=jax.jvp, vjp=jax.vjp,
                         vmap=jax.vmap, disable_jit=jax.disable_jit, custom_jvp=jax.custom_jvp)

F32 = np.float32


class Counts:
    """A snapshot of every layer's counters; `delta()` is what happened since."""

    def __init__(self) -> None:
        self.before = {name: (c.hits, c.misses) for name, c in util.registry.items()}

    def delta(self) -> dict[str, tuple[int, int]]:
        out = {}
        for name, c in util.registry.items():
            hits, misses = self.before.get(name, (0, 0))
            d = (c.hits - hits, c.misses - misses)
            if d != (0, 0):
                out[name] = d
        return out


@pytest.fixture(scope="session")
def ours() -> SimpleNamespace:
    return OURS


@pytest.fixture(scope="session")
def theirs() -> SimpleNamespace:
    return THEIRS


@pytest.fixture
def counts() -> type[Counts]:
    return Counts


@pytest.fixture
def warnings_of(caplog):
    """`warnings_of(logger_name, fn)`: the WARNING messages the logger gave while fn ran."""
    def run(logger_name: str, fn: Any) -> list[str]:
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger=logger_name):
            fn()
        return [r.getMessage() for r in caplog.records
                if r.name == logger_name and r.levelno == logging.WARNING]
    return run


@pytest.fixture
def explaining():
    """Both libraries explain their cache misses, from a clean slate of seen call sites."""
    explain.callsites_with_tracing_cache_miss.clear()
    jax_pe = jax._src.interpreters.partial_eval
    jax_pe.callsites_with_tracing_cache_miss.clear()
    with config.explain_cache_misses(True), jax.explain_cache_misses(True):
        yield


@pytest.fixture
def cache_dir(tmp_path):
    """A fresh persistent cache directory, every compile written (no time threshold)."""
    compilation_cache.reset_cache()
    with config.compilation_cache_dir(str(tmp_path)), \
            config.persistent_cache_min_compile_time_secs(0.0):
        yield tmp_path
    compilation_cache.reset_cache()


def f32(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1.0, 1.0, shape).astype(F32)
