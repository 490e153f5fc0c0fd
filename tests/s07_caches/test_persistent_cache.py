"""The persistent cache: another process hits it, the key moves with each ingredient and not with
a dropped flag, and a corrupt, truncated or concurrently written entry never breaks a run."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from jax._src import lru_cache as jax_lru_cache

import stages.s02_tracing as s02
import stages.s04_autodiff as s04
import stages.s07_caches as s07
from stages.s02_tracing import config
from stages.s07_caches import cache_key, compilation_cache, compiler, xla_bridge

WORKER = Path(__file__).with_name("cache_worker.py")
X = np.linspace(-1.0, 1.0, 4, dtype=np.float32)
jnp = s02.numpy


def worker(*args: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return subprocess.Popen([sys.executable, str(WORKER), *args], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def result(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out.splitlines()[-1])


def entries(directory: Path) -> list[Path]:
    return sorted(directory.glob("*-cache"))


# ------------------------------------------------------------------ across processes


def test_a_second_process_reads_the_executable_instead_of_compiling(tmp_path):
    cache = str(tmp_path / "cache")
    first = result(worker("run", cache))
    second = result(worker("run", cache))
    assert first["compiles"] == 1 and first["persistent"] == [0, 1]
    assert second["compiles"] == 0 and second["persistent"] == [1, 0]  # no compile at all
    assert second["value"] == first["value"]
    np.testing.assert_allclose(first["value"], np.sin(X) * 3.0 + 1.0, rtol=1e-6)


def test_four_processes_writing_one_key_at_once_never_tear_an_entry(tmp_path):
    cache = str(tmp_path / "cache")
    procs = [worker("hammer", cache, "4", str(i)) for i in range(4)]
    results = [result(p) for p in procs]
    expected = (np.sin(X) * 3.0 + 1.0).tolist()
    assert all(np.allclose(r["value"], expected) for r in results)
    assert sum(r["whole"] for r in results) > 0  # readers saw whole entries, never a torn one
    (entry,) = entries(Path(cache))
    compilation_cache.extract_executable_and_time(entry.read_bytes())
    assert not list(Path(cache).glob(".*.tmp"))  # no temporary file left behind


# ------------------------------------------------------------------ the key


def _key(fun, *args, **jit_options) -> str:
    program = s07.jit(fun, **jit_options).lower(*args).compiler_ir()
    backend = xla_bridge.get_backend()
    options = compiler.get_compile_options(tuple(sorted(jit_options.get(
        "compiler_options", {}).items())))
    return cache_key.get(program, backend.devices(), options, backend)


def f(x):
    return jnp.sin(x) * 2.0


def test_a_key_is_the_module_name_and_64_hex_digits():
    key = _key(f, X)
    name, digest = key.rsplit("-", 1)
    assert name == "jit_f" and len(digest) == 64 and int(digest, 16) >= 0
    assert _key(lambda x: x, X).startswith("jit__lambda-")  # as JAX names a lambda's module
    assert _key(f, X) == key  # deterministic


def test_the_same_body_defined_elsewhere_has_the_same_key_unless_metadata_is_hashed():
    def f(x):  # same name and body as the module-level f, another line: other debug info
        return jnp.sin(x) * 2.0

    assert _key(f, X) == _key(globals()["f"], X)
    with config.compilation_cache_include_metadata_in_key(True):
        assert _key(f, X) != _key(globals()["f"], X)


INGREDIENT_CHANGES = {
    "computation": lambda mp: mp.setattr(sys.modules[__name__], "f",
                                         lambda x: jnp.cos(x) * 2.0),
    "jax_lib version": lambda mp: mp.setattr(cache_key, "library_version", lambda: "other"),
    "backend version": lambda mp: mp.setattr(type(xla_bridge.get_backend()), "platform_version",
                                             "numpy 0.0"),
    "XLA flags": lambda mp: mp.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=true"),
    "compile_options": None,  # below: jit(..., compiler_options=...)
    "accelerator_config": lambda mp: mp.setattr(
        type(xla_bridge.get_backend()), "devices",
        lambda self: [xla_bridge.Device(0, "interpreter", "numpy interpreter")] * 2),
    "compression": None,  # below: another compression algorithm
    "custom_hook": lambda mp: mp.setattr(cache_key, "custom_hook", lambda: "my-cluster"),
}


@pytest.mark.parametrize("name", list(INGREDIENT_CHANGES))
def test_changing_one_ingredient_changes_the_key(name, monkeypatch):
    assert [n for n, _ in cache_key.entries(None, [], None, None)] == list(INGREDIENT_CHANGES)
    before = _key(f, X)
    if name == "compile_options":
        after = _key(f, X, compiler_options={"xla_cpu_enable_fast_math": True})
    elif name == "compression":
        program = s07.jit(f).lower(X).compiler_ir()
        backend = xla_bridge.get_backend()
        after = cache_key.get(program, backend.devices(), compiler.get_compile_options(),
                              backend, compression_algorithm="zstandard")
    else:
        INGREDIENT_CHANGES[name](monkeypatch)
        after = _key(sys.modules[__name__].f, X)
    assert after != before


def test_each_ingredient_is_logged_alone_and_as_the_running_hash_after_it(caplog):
    # JAX's _log_cache_key_hash: at DEBUG, the ingredient's own digest, then the running one
    import hashlib
    import logging

    program = s07.jit(f).lower(X).compiler_ir()
    backend = xla_bridge.get_backend()
    options = compiler.get_compile_options()
    with caplog.at_level(logging.DEBUG, logger=cache_key.logger.name):
        key = cache_key.get(program, backend.devices(), options, backend)
    alone = cache_key.ingredient_digests(program, backend.devices(), options, backend)
    running, want = hashlib.sha256(), []
    for name, hashfn in cache_key.entries(program, backend.devices(), options, backend):
        hashfn(running)
        want += [f"get_cache_key hash of serialized {name}: {alone[name]}",
                 f"get_cache_key hash after serializing {name}: {running.hexdigest()}"]
    got = [r.getMessage() for r in caplog.records if r.getMessage().startswith("get_cache_key")]
    assert got == want
    assert key.endswith(running.hexdigest())


@pytest.mark.parametrize("flag", cache_key.xla_flags_to_exclude_from_cache_key)
def test_a_dropped_flag_leaves_the_key_alone(flag, monkeypatch):
    before = _key(f, X)
    monkeypatch.setenv("XLA_FLAGS", f"{flag}=1")
    assert _key(f, X) == before
    assert _key(f, X, compiler_options={flag.lstrip("-"): "1"}) == before


def test_the_dropped_flags_are_jaxs():
    from jax._src import cache_key as jax_cache_key

    assert cache_key.xla_flags_to_exclude_from_cache_key == \
        jax_cache_key.xla_flags_to_exclude_from_cache_key


# ------------------------------------------------------------------ writing and reading


def test_a_fast_compile_is_not_written_below_the_time_threshold(cache_dir, caplog):
    def g(x):
        return x * 7.0

    with config.persistent_cache_min_compile_time_secs(100.0), \
            config.explain_cache_misses(True), caplog.at_level("WARNING"):
        s07.jit(g)(X)
    assert entries(cache_dir) == []
    assert any("Not writing persistent cache entry for 'jit_g' because it took < 100.00 "
               "seconds to compile" in r.getMessage() for r in caplog.records)


def test_a_program_that_cannot_be_serialized_is_compiled_every_time(cache_dir):
    @s04.custom_jvp
    def h(x):
        return jnp.sin(x)

    h.defjvp(lambda p, t: (jnp.sin(p[0]), jnp.cos(p[0]) * t[0]))
    np.testing.assert_allclose(s07.jit(h)(X), np.sin(X), rtol=1e-6)
    assert entries(cache_dir) == []  # its jvp rule is a Python function: no file format for it


def _corrupt_then_rerun(cache_dir: Path, damage) -> list[str]:
    def g(x):
        return jnp.cos(x) + 0.5

    s07.jit(g)(X)
    (entry,) = entries(cache_dir)
    entry.write_bytes(damage(entry.read_bytes()))
    s07.clear_caches()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = s07.jit(g)(X)
    np.testing.assert_allclose(out, np.cos(X) + 0.5, rtol=1e-6)
    compilation_cache.extract_executable_and_time(entries(cache_dir)[0].read_bytes())  # rewritten
    return [str(w.message) for w in caught]


def _flip(data: bytes) -> bytes:
    return data[:60] + bytes([data[60] ^ 0xFF]) + data[61:]


@pytest.mark.parametrize("damage,why", [
    (_flip, "checksum mismatch"),
    (lambda data: data[:20], "not an entry of this format (truncated, or another writer's)"),
    (lambda data: data[: len(data) // 2], "checksum mismatch"),
])
def test_a_damaged_entry_is_warned_about_deleted_and_compiled_again(cache_dir, damage, why):
    (message,) = _corrupt_then_rerun(cache_dir, damage)
    assert message.startswith("Corrupt persistent compilation cache entry 'jit_g-")
    assert message.endswith(f"({why}); deleting it and compiling again.")


def test_the_same_damaged_key_is_warned_about_once(cache_dir):
    assert len(_corrupt_then_rerun(cache_dir, _flip)) == 1
    assert _corrupt_then_rerun(cache_dir, _flip) == []  # damaged again: repaired, quietly


def test_past_the_size_cap_the_least_recently_used_entry_goes(cache_dir):
    def make(k):
        return s07.jit(lambda x: x * float(k) + jnp.sin(x))

    make(1)(X)
    size = entries(cache_dir)[0].stat().st_size
    with config.compilation_cache_max_size(int(size * 2.5)):
        a, b, c = make(1), make(2), make(3)
        a(X)  # written before the cap: a hit now
        b(X)
        s07.clear_caches()
        a(X)  # a is used again: b is now the least recently used
        c(X)  # three do not fit: b goes
        kept = {p.name.split("-")[0] for p in entries(cache_dir)}
        assert len(entries(cache_dir)) == 2 and kept == {"jit__lambda"}
        s07.clear_caches()
        before = compiler.backend_compiles.misses
        a(X)
        c(X)
        assert compiler.backend_compiles.misses == before  # both still on disk
        b(X)
        assert compiler.backend_compiles.misses == before + 1  # b was evicted


def test_an_entry_is_refused_unless_its_header_and_checksum_are_this_formats():
    import hashlib

    extract, corrupt = compilation_cache.extract_executable_and_time, compilation_cache.CorruptEntry
    entry = compilation_cache.combine_executable_and_time(b"an executable", 1.5)
    assert extract(entry) == (b"an executable", 1.5)
    body = entry[len(compilation_cache.MAGIC) + 32:]
    foreign = b"OTHERFMT" + hashlib.sha256(body).digest() + body  # a checksum that holds
    damaged = entry[:-1] + bytes([entry[-1] ^ 1])
    for bad, message in [(foreign, "not an entry of this format"),
                         (entry[:20], "not an entry of this format"),
                         (damaged, "checksum mismatch")]:
        with pytest.raises(corrupt, match=message):
            extract(bad)


def test_an_entry_of_another_version_of_this_format_is_refused():
    import hashlib

    magic = compilation_cache.MAGIC
    body = compilation_cache.combine_executable_and_time(b"an executable", 1.5)[len(magic) + 32:]
    other = magic[:-1] + b"2"  # the same writer, a format version this reader does not know
    entry = other + hashlib.sha256(body).digest() + body  # a checksum that holds
    with pytest.raises(compilation_cache.CorruptEntry, match="not an entry of this format"):
        compilation_cache.extract_executable_and_time(entry)


def test_an_entry_whose_last_use_time_is_lost_is_evicted_first(tmp_path):
    # the -atime file is written after the entry: a writer that died between the two leaves an
    # entry without one, which counts as used at time 0
    lru = compilation_cache.LRUCache(str(tmp_path), max_size=250)
    lru.put("older", b"a" * 100)
    lru.put("newer", b"b" * 100)
    (tmp_path / "newer-atime").unlink()
    lru.put("third", b"c" * 100)  # 300 bytes do not fit: one entry goes
    assert sorted(p.name for p in tmp_path.glob("*-cache")) == ["older-cache", "third-cache"]


def test_last_use_times_are_read_back_as_written_little_endian(tmp_path):
    # times chosen so that reading them in the other byte order reverses their order: 1 and 256
    # read big-endian are 2**56 and 2**48 (real clock values would catch that only by chance)
    lru = compilation_cache.LRUCache(str(tmp_path), max_size=250)
    lru.put("older", b"a" * 100)
    lru.put("newer", b"b" * 100)
    (tmp_path / "older-atime").write_bytes((1).to_bytes(8, "little"))
    (tmp_path / "newer-atime").write_bytes((256).to_bytes(8, "little"))
    lru.put("third", b"c" * 100)  # one entry goes: the one used longest ago
    assert sorted(p.name for p in tmp_path.glob("*-cache")) == ["newer-cache", "third-cache"]


def test_a_miss_then_a_hit_are_counted_and_timed_like_jax(cache_dir, monkeypatch):
    # the clock is scripted: the miss reads 0..1 and compiles 10..17 (7 s); the hit reads
    # 100..102, so JAX's events say 2 s to retrieve and 7 - 2 = 5 s saved
    from types import SimpleNamespace

    from stages.s07_caches import monitoring
    ticks = iter([0.0, 1.0, 10.0, 17.0, 100.0, 102.0])
    monkeypatch.setattr(compiler, "time", SimpleNamespace(monotonic=lambda: next(ticks)))
    program = s07.jit(f).lower(X).compiler_ir()
    backend = xla_bridge.get_backend()
    events, durations = [], []
    on_event = lambda event, **kw: events.append(event)  # noqa: E731
    on_duration = lambda event, secs, **kw: durations.append((event, secs))  # noqa: E731
    monitoring.register_event_listener(on_event)
    monitoring.register_event_duration_secs_listener(on_duration)
    hits, misses = compiler.persistent_cache.hits, compiler.persistent_cache.misses
    try:
        compiler.compile_or_get_cached(backend, program, compiler.get_compile_options())
        assert (compiler.persistent_cache.hits - hits,
                compiler.persistent_cache.misses - misses) == (0, 1)
        compiler.compile_or_get_cached(backend, program, compiler.get_compile_options())
        assert (compiler.persistent_cache.hits - hits,
                compiler.persistent_cache.misses - misses) == (1, 1)
    finally:
        monitoring.unregister_event_listener(on_event)
        monitoring.unregister_event_duration_listener(on_duration)
    assert events.count("/jax/compilation_cache/compile_requests_use_cache") == 2
    assert events.count("/jax/compilation_cache/cache_hits") == 1
    assert [d for d in durations if d[0].startswith("/jax/compilation_cache/")] == [
        ("/jax/compilation_cache/compile_time_saved_sec", 5.0),
        ("/jax/compilation_cache/cache_retrieval_time_sec", 2.0)]


def test_an_entry_shorter_than_its_header_is_refused_even_with_a_valid_checksum():
    import hashlib

    body = b"abc"  # fewer than the 8 bytes of the compile time, yet its SHA-256 holds
    short = compilation_cache.MAGIC + hashlib.sha256(body).digest() + body
    with pytest.raises(compilation_cache.CorruptEntry, match="not an entry of this format"):
        compilation_cache.extract_executable_and_time(short)


def test_an_entry_that_exactly_fills_the_cap_evicts_nothing(tmp_path):
    lru = compilation_cache.LRUCache(str(tmp_path), max_size=200)
    lru.put("first", b"a" * 100)
    lru.put("second", b"b" * 100)  # 100 + 100 == 200: it fits
    assert sorted(p.name for p in tmp_path.glob("*-cache")) == ["first-cache", "second-cache"]


def test_a_large_entry_evicts_as_many_old_entries_as_it_needs(tmp_path):
    lru = compilation_cache.LRUCache(str(tmp_path), max_size=300)
    for key in ("first", "second", "third"):
        lru.put(key, key.encode()[:1] * 100)
    lru.put("large", b"l" * 250)  # 300 + 250 bytes: the three 100-byte entries must all go
    assert sorted(p.name for p in tmp_path.glob("*-cache")) == ["large-cache"]


def test_an_eviction_is_logged_as_jax_logs_it(tmp_path, caplog):
    """At DEBUG: the key, its size, and the size the cache must come down to for the new
    entry (the cap less the new entry's size), word for word as JAX's lru_cache.py."""
    logged = []
    for make, logger in ((compilation_cache.LRUCache, compilation_cache.logger),
                         (jax_lru_cache.LRUCache, jax_lru_cache.logger)):
        folder = tmp_path / logger.name
        folder.mkdir()
        cache = make(str(folder), max_size=100)
        cache.put("a", b"x" * 60)
        caplog.clear()
        with caplog.at_level(logging.DEBUG, logger=logger.name):
            cache.put("b", b"y" * 60)
        logged.append([(r.levelno, r.getMessage()) for r in caplog.records
                       if r.name == logger.name and "Evicting" in r.getMessage()])
    assert logged[0] == logged[1] == [
        (logging.DEBUG, "Evicting cache entry 'a': file size 60 bytes, target cache size 40 bytes")]


def test_without_a_cap_nothing_is_evicted(tmp_path):
    lru = compilation_cache.LRUCache(str(tmp_path), max_size=-1)  # -1: no cap, as in JAX
    for key in ("first", "second", "third"):
        lru.put(key, key.encode() * 50)
    assert sorted(p.name for p in tmp_path.glob("*-cache")) == [
        "first-cache", "second-cache", "third-cache"]
