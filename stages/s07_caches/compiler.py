"""Compile a lowered program, or find the executable in the persistent cache first.

JAX: jax/_src/compiler.py (`compile_or_get_cached`, `_cache_read`, `_cache_write`,
`_compile_and_write_cache`). With a cache directory, every compile computes the persistent cache
key (cache_key.py) and tries the disk: a hit skips the backend's compile, a miss compiles and
writes the executable if that took at least `jax_persistent_cache_min_compile_time_secs`. A
failure to read or write only warns: the cache can make a run faster, never wrong.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import warnings
from typing import Any

from stages.s02_tracing import config

from . import cache_key as cache_key_lib
from . import compilation_cache, monitoring
from .serialization import NotSerializable
from .util import Counter

logger = logging.getLogger(__name__)

# The fifth layer: the disk. Its entries live in files; this counts what was asked of it.
persistent_cache = Counter("persistent", "SHA-256 of the program and its environment "
                           "(cache_key.py), on disk")
backend_compiles = Counter("compile", "(not a cache: each time the backend really compiled)",
                           layer=False)


@dataclasses.dataclass(frozen=True)
class CompileOptions:
    """What the compiler is asked for besides the program (JAX: xla_client.CompileOptions)."""

    num_replicas: int = 1
    num_partitions: int = 1
    # jit(..., compiler_options={...}): passed to the compiler as flag overrides
    env_option_overrides: tuple[tuple[str, Any], ...] = ()

    def serialize(self) -> bytes:
        """Canonical bytes (JAX: CompileOptions.SerializeAsString)."""
        fields = dataclasses.asdict(self)
        fields["env_option_overrides"] = [[k, repr(v)] for k, v in self.env_option_overrides]
        return repr(sorted(fields.items())).encode()


def get_compile_options(compiler_options_kvs: tuple[tuple[str, Any], ...] = ()
                        ) -> CompileOptions:
    return CompileOptions(env_option_overrides=tuple(compiler_options_kvs))


def log_persistent_cache_hit(module_name: str, cache_key: str) -> None:
    logger.log(logging.WARNING if config.log_compiles.value else logging.DEBUG,
               "Persistent compilation cache hit for '%s' with key %r", module_name, cache_key)


def log_persistent_cache_miss(module_name: str, cache_key: str) -> None:
    logger.log(_write_log_priority(), "PERSISTENT COMPILATION CACHE MISS for '%s' with key %r",
               module_name, cache_key)


def backend_compile(backend: Any, program: Any, options: CompileOptions) -> Any:
    backend_compiles.record(hit=False)
    return backend.compile(program, options)


def compile_or_get_cached(backend: Any, program: Any, options: CompileOptions) -> Any:
    """The executable of `program`: from the disk if a cache directory holds it, else compiled."""
    module_name = program.module_name
    if not compilation_cache.is_cache_used(backend):
        return backend_compile(backend, program, options)
    if not compilation_cache.is_persistent_cache_enabled():  # no directory: JAX asks anyway
        monitoring.record_event("/jax/compilation_cache/compile_requests_use_cache")
        return backend_compile(backend, program, options)
    try:
        key = cache_key_lib.get(program, backend.devices(), options, backend)
    except NotSerializable as err:  # e.g. a Python function in a param: no bytes to hash
        logger.log(_write_log_priority(), "Not using the persistent compilation cache for "
                   "'%s': its program cannot be serialized (%s)", module_name, err)
        return backend_compile(backend, program, options)
    # EXERCISE 7.4 (persistent-cache): try the disk, else compile and write it back
    monitoring.record_event("/jax/compilation_cache/compile_requests_use_cache")
    start = time.monotonic()
    executable, compile_time = _cache_read(module_name, key, options, backend)
    retrieval_time = time.monotonic() - start
    if executable is not None:
        persistent_cache.record(hit=True)
        log_persistent_cache_hit(module_name, key)
        monitoring.record_event("/jax/compilation_cache/cache_hits")
        monitoring.record_event_duration_secs("/jax/compilation_cache/compile_time_saved_sec",
                                              compile_time - retrieval_time)
        monitoring.record_event_duration_secs(
            "/jax/compilation_cache/cache_retrieval_time_sec", retrieval_time)
        return executable
    persistent_cache.record(hit=False)
    log_persistent_cache_miss(module_name, key)
    start = time.monotonic()
    executable = backend_compile(backend, program, options)
    _cache_write(key, time.monotonic() - start, module_name, backend, executable)
    return executable
    # END EXERCISE


def _cache_read(module_name: str, key: str, options: CompileOptions, backend: Any
                ) -> tuple[Any, float | None]:
    try:
        return compilation_cache.get_executable_and_time(key, options, backend)
    except Exception as err:
        if config.raise_persistent_cache_errors.value:
            raise
        warnings.warn(f"Error reading persistent compilation cache entry for "
                      f"'{module_name}': {type(err).__name__}: {err}", stacklevel=2)
        return None, None


def _write_log_priority() -> int:
    return (logging.WARNING if config.explain_cache_misses.value
            and compilation_cache.is_persistent_cache_enabled() else logging.DEBUG)


def _cache_write(key: str, compile_time_secs: float, module_name: str, backend: Any,
                 executable: Any) -> None:
    priority = _write_log_priority()
    min_compile_time = config.persistent_cache_min_compile_time_secs.value
    if compile_time_secs < min_compile_time:
        logger.log(priority, "Not writing persistent cache entry for '%s' because it took < "
                   "%.2f seconds to compile (%.2fs)", module_name, min_compile_time,
                   compile_time_secs)
        return
    try:
        compilation_cache.put_executable_and_time(key, module_name, executable, backend,
                                                  compile_time_secs)
    except Exception as err:
        if config.raise_persistent_cache_errors.value:
            raise
        warnings.warn(f"Error writing persistent compilation cache entry for "
                      f"'{module_name}': {type(err).__name__}: {err}", stacklevel=2)
