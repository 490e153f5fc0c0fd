"""The stage timers, as log lines (`jax_log_compiles`) and as monitoring events, against JAX's.

Durations and cache-key digests differ run to run: `_masked` replaces them before comparing.
"""

from __future__ import annotations

import logging
import re

import jax
import numpy as np
import pytest
from jax._src import compilation_cache as jax_compilation_cache

import stages.s07_caches as s07
from stages.s02_tracing import config
from stages.s07_caches import monitoring

pytestmark = pytest.mark.oracle


def _masked(text: str) -> str:
    text = re.sub(r"\d+\.\d+ sec", "T sec", text)
    return re.sub(r"-[0-9a-f]{64}", "-KEY", text)


@pytest.fixture
def records(caplog):
    """`records(prefix, fn)`: the WARNING messages of loggers under `prefix` while fn ran."""
    def run(prefix: str, fn) -> list[str]:
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger=prefix):
            fn()
        return [_masked(r.getMessage()) for r in caplog.records
                if r.name.startswith(prefix) and r.levelno == logging.WARNING]
    return run


X = np.ones(3, np.float32)


def test_log_compiles_prints_jaxs_four_lines_in_jaxs_order(records):
    def f(x):
        return x * 2.0

    with config.log_compiles(True):
        ours = records("stages.s07_caches", lambda: s07.jit(f)(X))
    with jax.log_compiles(True):
        theirs = records("jax", lambda: jax.jit(f)(X))
    assert ours == theirs == [
        "Finished tracing f for jit in T sec",
        "Compiling jit(f) with global shapes and types (ShapedArray(float32[3]),). "
        "Argument mapping: (UnspecifiedValue,).",
        "Finished jaxpr to MLIR module conversion jit(f) in T sec",
        "Finished XLA compilation of jit(f) in T sec"]


def test_a_cache_hit_logs_nothing(records):
    g = s07.jit(lambda x: x + 1.0)
    g(X)
    with config.log_compiles(True):
        assert records("stages.s07_caches", lambda: g(X)) == []


def test_stage_timers_are_published_under_jaxs_event_names():
    def f(x):
        return x - 1.0

    def collect(register, unregister, call):
        seen = []

        def listener(event, duration, **kwargs):
            if event.startswith("/jax/core/compile/"):
                seen.append((event, kwargs, duration >= 0.0))
        register(listener)
        try:
            call()
        finally:
            unregister(listener)
        return seen

    ours = collect(monitoring.register_event_duration_secs_listener,
                   monitoring.unregister_event_duration_listener, lambda: s07.jit(f)(X))
    theirs = collect(jax.monitoring.register_event_duration_secs_listener,
                     jax._src.monitoring.unregister_event_duration_listener,
                     lambda: jax.jit(f)(X))
    assert ours == theirs == [
        ("/jax/core/compile/jaxpr_trace_duration", {"fun_name": "f"}, True),
        ("/jax/core/compile/jaxpr_to_mlir_module_duration", {"fun_name": "jit(f)"}, True),
        ("/jax/core/compile/backend_compile_duration", {"fun_name": "jit(f)"}, True)]


def test_persistent_cache_events_and_log_lines_match_jaxs(records, cache_dir, tmp_path):
    def f(x):
        return x * 5.0 + 1.0

    def events_and_logs(lib, call, clear, prefix):
        seen = []

        def listener(event, *args, **kwargs):
            if event.startswith("/jax/compilation_cache/") and "tasks" not in event:
                seen.append(event)
        lib.register_event_listener(listener)
        lib.register_event_duration_secs_listener(listener)
        try:
            logs = records(prefix, call)  # a miss: compiled and written
            clear()
            logs += records(prefix, call)  # a hit: read back from disk
        finally:
            lib.unregister_event_listener(listener)
            lib.unregister_event_duration_listener(listener)
        return seen, logs

    with config.log_compiles(True), config.explain_cache_misses(True):
        ours = events_and_logs(monitoring, lambda: s07.jit(f)(X), s07.clear_caches,
                               "stages.s07_caches.compil")
    jax_dir = tmp_path / "jax"
    jax_compilation_cache.reset_cache()
    with jax.log_compiles(True), jax.explain_cache_misses(True), \
            jax._src.config.compilation_cache_dir(str(jax_dir)), \
            jax._src.config.persistent_cache_min_compile_time_secs(0.0), \
            jax._src.config.persistent_cache_min_entry_size_bytes(0):
        theirs = events_and_logs(jax._src.monitoring, lambda: jax.jit(f)(X), jax.clear_caches,
                                 "jax._src.compil")
    jax_compilation_cache.reset_cache()
    assert ours[0] == theirs[0] == [
        "/jax/compilation_cache/compile_requests_use_cache",  # first call: a miss, written
        "/jax/compilation_cache/cache_misses",
        "/jax/compilation_cache/compile_requests_use_cache",  # second: a hit
        "/jax/compilation_cache/cache_hits",
        "/jax/compilation_cache/compile_time_saved_sec",
        "/jax/compilation_cache/cache_retrieval_time_sec"]
    assert ours[1] == theirs[1] == [
        "PERSISTENT COMPILATION CACHE MISS for 'jit_f' with key 'jit_f-KEY'",
        "Writing jit_f to persistent compilation cache with key 'jit_f-KEY'",
        "Persistent compilation cache hit for 'jit_f' with key 'jit_f-KEY'"]


def test_without_a_cache_directory_the_events_are_jaxs():
    # the cache is on by default even with no directory: JAX counts the task as using it and
    # asks it at every compile (hashing the program for a key nothing holds); ours asks too
    from stages.s07_caches import compilation_cache

    def events(lib, reset, call):
        seen = []

        def listener(event, **_):
            if event.startswith("/jax/compilation_cache/"):
                seen.append(event)
        reset()
        lib.register_event_listener(listener)
        try:
            call()
        finally:
            lib.unregister_event_listener(listener)
            reset()
        return seen

    def f(x):
        return x * 5.0 - 1.0

    assert config.compilation_cache_dir.value is None
    ours = events(monitoring, compilation_cache.reset_cache, lambda: s07.jit(f)(X))
    theirs = events(jax._src.monitoring, jax_compilation_cache.reset_cache,
                    lambda: jax.jit(f)(X))
    assert ours == theirs == ["/jax/compilation_cache/tasks_using_cache",
                              "/jax/compilation_cache/compile_requests_use_cache"]
    with config.enable_compilation_cache(False):
        assert events(monitoring, compilation_cache.reset_cache, lambda: s07.jit(f)(X[:2])) \
            == ["/jax/compilation_cache/task_disabled_cache"]
