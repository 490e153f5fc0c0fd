"""A separate process for the persistent cache tests: run with a cache directory, report JSON.

    python cache_worker.py run DIR            jit FUNCTION once; print the value and counters
    python cache_worker.py hammer DIR N ID    wait for N workers, then all write and read one key

`hammer` makes N processes compile the same function at the same moment (all miss, all write the
same key), then each deletes, rewrites and reads that key back many times: a reader must only
ever see no entry or a whole, valid one.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

import stages.s02_tracing as s02
import stages.s07_caches as s07
from stages.s02_tracing import config
from stages.s07_caches import cache_key, compilation_cache, compiler, xla_bridge

X = np.linspace(-1.0, 1.0, 4, dtype=np.float32)


def f(x):
    return s02.numpy.sin(x) * 3.0 + 1.0


def _configure(cache: str) -> None:
    config.update("jax_compilation_cache_dir", cache)
    config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    config.update("jax_raise_persistent_cache_errors", True)


def run(cache: str) -> dict:
    _configure(cache)
    out = s07.jit(f)(X)
    return {"value": out.tolist(), "compiles": compiler.backend_compiles.misses,
            "persistent": [compiler.persistent_cache.hits, compiler.persistent_cache.misses]}


def hammer(cache: str, n: int, me: str) -> dict:
    ready = Path(cache).parent
    (ready / f"ready-{me}").touch()
    while len(list(ready.glob("ready-*"))) < n:  # start together
        time.sleep(0.002)
    _configure(cache)
    out = s07.jit(f)(X)
    lowered = s07.jit(f).lower(X)
    backend = xla_bridge.get_backend()
    key = cache_key.get(lowered.compiler_ir(), backend.devices(),
                        compiler.get_compile_options(), backend)
    executable = lowered.compile().runtime_executable()
    entry = compilation_cache.combine_executable_and_time(backend.serialize(executable), 0.0)
    disk = compilation_cache._get_cache()
    seen_whole = seen_none = 0
    for _ in range(150):
        disk.delete(key)
        disk.put(key, entry)
        got = disk.get(key)
        if got is None:
            seen_none += 1
        else:
            compilation_cache.extract_executable_and_time(got)  # raises on a torn entry
            seen_whole += 1
    return {"value": out.tolist(), "whole": seen_whole, "none": seen_none}


if __name__ == "__main__":
    command = sys.argv[1]
    if command == "run":
        result = run(sys.argv[2])
    else:
        result = hammer(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    print(json.dumps(result))
