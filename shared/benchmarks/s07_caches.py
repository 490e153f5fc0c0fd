"""Stage 7 rows: what a cache hit costs, and what each kind of miss costs, ours vs jax.jit.

Hit rows: a tiny function called with the same signature again. The first row times our call
with the backend's execute replaced by a stub that returns the outputs (everything but the
execute: flattening, the signature key, the lookup, unflattening); JAX's side is the whole
`jax.jit` call, its C++ fast path plus XLA's execute, which the design notes put at about 4 us.
Miss rows use the AOT stations, so each times one layer: a fresh function is traced (layer 2),
a fresh trace lowered (layer 3), a fresh lowering compiled (layer 4); a signature miss that the
trace cache answers clears only the signature cache; the disk row compiles a function whose
executable a cache directory already holds.
"""

from __future__ import annotations

import tempfile
import time

import jax
import jax.numpy as jjnp
import numpy as np
from jax._src import compilation_cache as jax_compilation_cache
from jax._src import config as jax_config

import stages.s07_caches as s07
from shared.benchmarks.harness import Row, best_time
from stages.s02_tracing import config
from stages.s02_tracing import numpy as jnp
from stages.s07_caches import compilation_cache, pjit

X = np.ones(8, np.float32)


def tiny(ns):
    def f(x):
        return ns.sin(x) * 2.0 + 1.0
    return f


def mlp(ns):
    w = np.linspace(-1, 1, 64 * 64, dtype=np.float32).reshape(64, 64)

    def f(x):
        for _ in range(8):
            x = ns.tanh(ns.dot(x, w) + 0.5)
        return x.sum()
    return f


def _hit_rows(repeat: int, number: int) -> list[Row]:
    ours, theirs = s07.jit(tiny(jnp)), jax.jit(tiny(jjnp))
    ours(X)
    theirs(X).block_until_ready()
    entry = pjit._signature_cache.get_or_compute(
        ours._fun, ours._signature((X,), {})[0], lambda: None)
    mesh_executable = entry.executable  # its unsafe_call is the backend's execute itself
    outs = mesh_executable.unsafe_call(X)
    call = best_time(lambda: ours(X), repeat=repeat, number=number)
    backend_call, mesh_executable.unsafe_call = mesh_executable.unsafe_call, lambda *a: outs
    try:  # the backend's execute, made free
        dispatch = best_time(lambda: ours(X), repeat=repeat, number=number)
    finally:
        mesh_executable.unsafe_call = backend_call
    jax_call = best_time(lambda: theirs(X).block_until_ready(), repeat=repeat, number=number)
    return [
        Row(7, "jit cache hit, everything but the execute", dispatch, jax_call,
            "whole jax.jit call", note="ours: the backend's execute replaced by a stub"),
        Row(7, "jit cache hit, whole call", call, jax_call, "whole jax.jit call",
            note="ours executes by interpreting the jaxpr with numpy"),
    ]


def _miss_rows(repeat: int) -> list[Row]:
    rows = []
    ours, theirs = s07.jit(tiny(jnp)), jax.jit(tiny(jjnp))
    ours(X)
    theirs(X)

    def ours_signature_miss():
        pjit._signature_cache.evict(ours._fun)  # layer 1 forgets; layers 2-4 answer
        ours(X)

    def jax_signature_miss():
        theirs._clear_cache()  # the C++ cache only
        theirs(X).block_until_ready()

    rows.append(Row(7, "signature miss, trace hit (layers 2-4 answer)",
                    best_time(ours_signature_miss, repeat=repeat),
                    best_time(jax_signature_miss, repeat=repeat), "jax.jit, C++ cache cleared"))
    x = np.ones((4, 64), np.float32)
    rows.append(Row(7, "trace miss: trace a fresh function (layer 2)",
                    best_time(lambda: s07.jit(mlp(jnp)).trace(x), repeat=repeat),
                    best_time(lambda: jax.jit(mlp(jjnp)).trace(x), repeat=repeat),
                    "jax.jit(f).trace", note="an 8-layer tanh MLP, 64 wide"))
    rows.append(Row(7, "lowering miss: lower a fresh trace (layer 3)",
                    _stage_time(lambda: s07.jit(mlp(jnp)).trace(x), lambda t: t.lower(), repeat),
                    _stage_time(lambda: jax.jit(mlp(jjnp)).trace(x), lambda t: t.lower(),
                                repeat), "jax: to StableHLO",
                    note="ours: DCE of the jaxpr; jax: jaxpr to an MLIR module"))
    rows.append(Row(7, "executable miss: compile a fresh lowering (layer 4)",
                    _stage_time(lambda: s07.jit(mlp(jnp)).lower(x), lambda lo: lo.compile(),
                                repeat),
                    _stage_time(lambda: jax.jit(mlp(jjnp)).lower(x), lambda lo: lo.compile(),
                                repeat), "jax: XLA compile",
                    note="ours: a type check of the jaxpr; jax: XLA's optimizing compiler"))
    rows.append(_disk_row(repeat, x))
    return rows


def _stage_time(prepare, stage, repeat: int) -> float:
    """Best time of `stage(prepare())`, the preparation left out of the timing."""
    best = float("inf")
    for _ in range(repeat):
        made = prepare()
        start = time.perf_counter()
        stage(made)
        best = min(best, time.perf_counter() - start)
    return best


def _disk_row(repeat: int, x: np.ndarray) -> Row:
    """Compile with the executable on disk: the key, a read, a deserialization."""
    ours_dir, jax_dir = tempfile.mkdtemp(), tempfile.mkdtemp()
    compilation_cache.reset_cache()
    jax_compilation_cache.reset_cache()
    with config.compilation_cache_dir(ours_dir), \
            config.persistent_cache_min_compile_time_secs(0.0), \
            jax_config.compilation_cache_dir(jax_dir), \
            jax_config.persistent_cache_min_compile_time_secs(0.0):
        s07.jit(mlp(jnp)).lower(x).compile()  # written to disk
        jax.jit(mlp(jjnp)).lower(x).compile()
        ours = _stage_time(lambda: s07.jit(mlp(jnp)).lower(x), lambda lo: lo.compile(), repeat)
        theirs = _stage_time(lambda: jax.jit(mlp(jjnp)).lower(x), lambda lo: lo.compile(),
                             repeat)
    compilation_cache.reset_cache()
    jax_compilation_cache.reset_cache()
    return Row(7, "persistent cache hit: compile with the entry on disk (layer 5)", ours,
               theirs, "jax persistent cache hit",
               note="cache key + read + check + deserialize")


def rows(quick: bool = False) -> list[Row]:
    repeat, number = (3, 200) if quick else (7, 2000)
    return _hit_rows(repeat, number) + _miss_rows(3 if quick else 5)
