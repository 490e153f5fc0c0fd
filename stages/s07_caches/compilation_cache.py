"""The persistent compilation cache: executables on disk, keyed by cache_key.py.

JAX: jax/_src/compilation_cache.py and lru_cache.py. One file `<key>-cache` per executable,
beside a `<key>-atime` file holding when it was last used. Four properties:

- atomic writes: an entry is written to a temporary file and renamed into place, so a reader,
  or another process writing the same key at the same time, never sees half an entry;
- checked reads: an entry starts with a SHA-256 of the rest, so flipped or missing bytes are
  caught; such an entry is warned about once, deleted, and the program compiled again;
- a size threshold: entries smaller than `jax_persistent_cache_min_entry_size_bytes` are not
  written (and compiler.py skips those that compiled faster than the time threshold);
- a size cap: past `jax_compilation_cache_max_size` bytes, least recently used entries go.

An entry is `MAGIC | sha256(rest) | compile time (float64, seconds) | zlib(executable bytes)`.
JAX's entry is `zstd(compile time (int32) | executable)`, without a checksum: XLA's own
deserializer is trusted to reject garbage, which our JSON reader would not always do.
"""

from __future__ import annotations

import contextlib
import hashlib
import heapq
import logging
import os
import struct
import tempfile
import threading
import time
import warnings
import zlib
from pathlib import Path
from typing import Any

from stages.s02_tracing import config

from . import monitoring
from .serialization import DeserializationError, NotSerializable

try:  # a lock across processes for eviction; without fcntl (Windows) the rename still is atomic
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None

logger = logging.getLogger(__name__)

MAGIC = b"UAPIXC01"  # 8 bytes: this file format, version 1
_CACHE_SUFFIX, _ATIME_SUFFIX = "-cache", "-atime"


class CorruptEntry(ValueError):
    """The bytes on disk are not an entry this process wrote: wrong header or checksum."""


def combine_executable_and_time(serialized_executable: bytes, compile_time: float) -> bytes:
    body = struct.pack(">d", compile_time) + zlib.compress(serialized_executable)
    return MAGIC + hashlib.sha256(body).digest() + body


def extract_executable_and_time(entry: bytes) -> tuple[bytes, float]:
    # EXERCISE 7.5 (checksum): reject a short or foreign entry, or one whose SHA-256 disagrees
    header = len(MAGIC) + 32 + 8
    if len(entry) < header or entry[:len(MAGIC)] != MAGIC:
        raise CorruptEntry("not an entry of this format (truncated, or another writer's)")
    digest, body = entry[len(MAGIC):len(MAGIC) + 32], entry[len(MAGIC) + 32:]
    if hashlib.sha256(body).digest() != digest:
        raise CorruptEntry("checksum mismatch")
    # END EXERCISE
    (compile_time,) = struct.unpack(">d", body[:8])
    try:
        return zlib.decompress(body[8:]), compile_time
    except zlib.error as err:
        raise CorruptEntry(f"cannot decompress: {err}") from None


def _atomic_write(path: Path, data: bytes) -> None:
    """Write `data` to a temporary file beside `path`, then rename it into place."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)  # atomic: readers see the old file or the whole new one
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


class LRUCache:
    """Files in a directory, evicted least recently used first beyond `max_size` bytes."""

    def __init__(self, path: str, *, max_size: int):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.max_size = max_size
        self.eviction_enabled = max_size != -1  # -1: no cap

    @contextlib.contextmanager
    def _lock(self):
        """Exclusive across processes while eviction decides what to delete."""
        if fcntl is None or not self.eviction_enabled:
            yield
            return
        with open(self.path / ".lockfile", "a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def _touch(self, key: str) -> None:
        _atomic_write(self.path / f"{key}{_ATIME_SUFFIX}", time.time_ns().to_bytes(8, "little"))

    def get(self, key: str) -> bytes | None:
        try:
            value = (self.path / f"{key}{_CACHE_SUFFIX}").read_bytes()
        except FileNotFoundError:
            return None
        if self.eviction_enabled:
            self._touch(key)
        return value

    def put(self, key: str, value: bytes) -> None:
        if self.eviction_enabled and len(value) > self.max_size:
            warnings.warn(f"Cache value for key {key!r} of size {len(value)} bytes exceeds "
                          f"the maximum cache size of {self.max_size} bytes", stacklevel=2)
            return
        path = self.path / f"{key}{_CACHE_SUFFIX}"
        if path.exists():  # another writer was first; its entry is as good as ours
            return
        with self._lock():
            self._evict_if_needed(additional_size=len(value))
            _atomic_write(path, value)
            if self.eviction_enabled:
                self._touch(key)

    def delete(self, key: str) -> None:
        for suffix in (_CACHE_SUFFIX, _ATIME_SUFFIX):
            with contextlib.suppress(FileNotFoundError):
                (self.path / f"{key}{suffix}").unlink()

    def _evict_if_needed(self, additional_size: int) -> None:
        # EXERCISE 7.6 (lru-eviction): drop the least recently used entries until the new fits
        if not self.eviction_enabled:
            return
        heap, total = [], 0  # heap: (last used, key, size) per entry; total: their sizes
        for entry in self.path.glob(f"*{_CACHE_SUFFIX}"):
            key = entry.name.removesuffix(_CACHE_SUFFIX)
            try:
                size = entry.stat().st_size
                atime = int.from_bytes((self.path / f"{key}{_ATIME_SUFFIX}").read_bytes(),
                                       "little")
            except FileNotFoundError:  # deleted meanwhile, or never touched: oldest
                size, atime = (entry.stat().st_size if entry.exists() else 0), 0
            total += size
            heapq.heappush(heap, (atime, key, size))
        while heap and total > self.max_size - additional_size:
            _, key, size = heapq.heappop(heap)
            logger.debug("Evicting cache entry %r: file size %d bytes, target cache size %d bytes",
                         key, size, self.max_size - additional_size)
            self.delete(key)
            total -= size
        # END EXERCISE


# ------------------------------------------------------------------ the process's cache

_cache: LRUCache | None = None
_cache_lock = threading.Lock()
_cache_checked = False
_warned_corrupt: set[str] = set()


def is_persistent_cache_enabled() -> bool:
    return (config.compilation_cache_dir.value is not None
            and config.enable_compilation_cache.value)


def _get_cache() -> LRUCache | None:
    """The cache of the configured directory, made again when the configuration changes."""
    global _cache
    if not is_persistent_cache_enabled():
        return None
    path = Path(config.compilation_cache_dir.value)
    max_size = config.compilation_cache_max_size.value
    with _cache_lock:
        if _cache is None or _cache.path != path or _cache.max_size != max_size:
            _cache = LRUCache(str(path), max_size=max_size)
        return _cache


def is_cache_used(backend: Any) -> bool:
    """Whether compiles ask the cache: `jax_enable_compilation_cache` (on by default) and a
    backend that serializes, a directory or not; reported once per process, as JAX does."""
    global _cache_checked
    used = config.enable_compilation_cache.value and backend.supports_executable_serialization
    with _cache_lock:
        if not _cache_checked:
            _cache_checked = True
            monitoring.record_event("/jax/compilation_cache/tasks_using_cache" if used else
                                    "/jax/compilation_cache/task_disabled_cache")
    return used


def reset_cache() -> None:
    """Back to the pristine state: no cache object, nothing reported, nothing warned."""
    global _cache, _cache_checked
    with _cache_lock:
        _cache, _cache_checked = None, False
        _warned_corrupt.clear()


# --8<-- [start:get_executable_and_time]
def get_executable_and_time(cache_key: str, compile_options: Any, backend: Any
                            ) -> tuple[Any, float | None]:
    """The cached executable and its compile time, or (None, None)."""
    cache = _get_cache()
    if cache is None:
        return None, None
    entry = cache.get(cache_key)
    if entry is None:
        return None, None
    try:
        serialized, compile_time = extract_executable_and_time(entry)
    except CorruptEntry as err:
        _warn_once(cache_key, f"Corrupt persistent compilation cache entry {cache_key!r} "
                              f"({err}); deleting it and compiling again.")
        cache.delete(cache_key)
        return None, None
    try:
        return backend.deserialize(serialized, compile_options), compile_time
    except DeserializationError as err:  # intact, but not loadable here: leave it for others
        _warn_once(cache_key, f"Cannot load persistent compilation cache entry {cache_key!r} "
                              f"({err}); compiling again.")
        return None, None
# --8<-- [end:get_executable_and_time]


def _warn_once(key: str, message: str) -> None:
    with _cache_lock:
        if key in _warned_corrupt:
            return
        _warned_corrupt.add(key)
    warnings.warn(message, stacklevel=3)


def put_executable_and_time(cache_key: str, module_name: str, executable: Any, backend: Any,
                            compile_time: float) -> None:
    """Write the executable and its compile time, unless it is too small or cannot be written."""
    priority = (logging.WARNING if config.explain_cache_misses.value
                and is_persistent_cache_enabled() else logging.DEBUG)
    cache = _get_cache()
    if cache is None:
        logger.log(priority, "Not writing persistent cache entry with key %r since cache is "
                   "disabled/not initialized", cache_key)
        return
    try:
        serialized = backend.serialize(executable)
    except NotSerializable as err:
        logger.log(priority, "Not writing persistent cache entry for '%s' because it cannot be "
                   "serialized: %s", module_name, err)
        return
    entry = combine_executable_and_time(serialized, compile_time)
    min_entry_size = config.persistent_cache_min_entry_size_bytes.value
    if len(entry) < min_entry_size:
        logger.log(priority, "Not writing persistent cache entry with key %r since its size "
                   "(%d bytes) is less than threshold (%d bytes)", cache_key, len(entry),
                   min_entry_size)
        return
    logger.log(priority, "Writing %s to persistent compilation cache with key %r",
               module_name, cache_key)
    monitoring.record_event("/jax/compilation_cache/cache_misses")
    cache.put(cache_key, entry)
