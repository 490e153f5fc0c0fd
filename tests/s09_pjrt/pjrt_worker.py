"""A fresh process for stage 9: jit through PJRT with a persistent cache directory; report JSON.

    python pjrt_worker.py DIR    the backend before, inside and after use_pjrt(); then jit one
                                 function with the cache in DIR; print its value and counters
"""

from __future__ import annotations

import json
import sys

import numpy as np

import stages.s02_tracing as s02
import stages.s07_caches as s07
import stages.s09_pjrt as s09
from stages.s02_tracing import config, core
from stages.s07_caches import compiler, xla_bridge

X = np.linspace(-1.0, 1.0, 4, dtype=np.float32)


def f(x):
    return s02.numpy.tanh(x) * 3.0 + 1.0


def main(cache: str) -> dict:
    report = {"before": xla_bridge.get_backend().platform}  # importing stage 9 switches nothing
    config.update("jax_compilation_cache_dir", cache)
    config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    config.update("jax_raise_persistent_cache_errors", True)
    with s09.use_pjrt():
        report["inside"] = xla_bridge.get_backend().platform
        report["dispatching"] = type(core.trace_ctx.trace).__name__
        out = s07.jit(f)(X)
        report["type"] = type(out).__name__
        report["value"] = out.tolist()
    report["after"] = xla_bridge.get_backend().platform
    report["after_trace"] = type(core.trace_ctx.trace).__name__
    report["compiles"] = compiler.backend_compiles.misses
    report["persistent"] = [compiler.persistent_cache.hits, compiler.persistent_cache.misses]
    report["compile_time_samples"] = (s09.metrics.metric_data("CompileTime") or [0])[0]
    return report


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))
