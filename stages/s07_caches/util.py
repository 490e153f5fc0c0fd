"""Named caches with hit/miss counters, a lock each, and the key they compare.

JAX: `util.cache` and `util.weakref_lru_cache` in jax/_src/util.py (the weakref one is C++ in
jaxlib). Each of jit's cache layers is one of these objects, so a learner can ask any layer how
often it answered (`info()`), and `report()` prints them all. Two kinds:

- `Cache`: a dict from key to value with least-recently-used eviction (JAX: `util.cache`).
- `WeakrefCache`: one dict per *referent* (a function, a jaxpr), held weakly, so when the
  referent dies its entries go too (JAX: `weakref_lru_cache`, which keys on its first argument
  weakly). jit's trace cache is one: a function that is garbage collected frees its jaxprs.

A miss computes the value outside the lock; a second thread asking for the same key meanwhile
waits for the first one's value instead of computing it again ("single flight"), so a jitted
function called from many threads traces and compiles each signature once.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, NamedTuple


class CacheInfo(NamedTuple):
    hits: int
    misses: int
    currsize: int


class Stats:
    """Hit/miss counts per layer, kept by one jitted function (its `cache_info()`).

    A layer's pair is only written with that layer's lock held (Counter._count), so two layers
    counting for one function at once touch different pairs and need no lock of their own.
    """

    def __init__(self) -> None:
        self.counts: dict[str, list[int]] = {}

    def record(self, layer: str, hit: bool) -> None:
        hits_misses = self.counts.get(layer)
        if hits_misses is None:
            hits_misses = self.counts.setdefault(layer, [0, 0])  # atomic: one pair per layer
        hits_misses[0 if hit else 1] += 1


class _Attribution(threading.local):
    stats: Stats | None = None  # the jitted function whose call this thread is in


_attribution = _Attribution()


class attribute_to:
    """Context manager: lookups in this thread also count in `stats` (the jitted function's)."""

    def __init__(self, stats: Stats):
        self.stats = stats

    def __enter__(self) -> None:
        self.prev = _attribution.stats
        _attribution.stats = self.stats

    def __exit__(self, *exc_info: Any) -> None:
        _attribution.stats = self.prev


class Counter:
    """A layer's name, what its key compares, and its hit and miss counts."""

    def __init__(self, name: str, key_doc: str, layer: bool = True):
        self.name = name
        self.key_doc = key_doc  # what the key compares, for report() and the docs
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        if layer:  # one of jit's layers, listed by report(); memo caches are not
            registry[name] = self

    def record(self, hit: bool) -> None:
        with self._lock:
            self._count(hit)

    def _count(self, hit: bool) -> None:  # call with self._lock held
        if hit:
            self.hits += 1
        else:
            self.misses += 1
        stats = _attribution.stats
        if stats is not None:
            stats.record(self.name, hit)

    def size(self) -> int:
        return 0

    def info(self) -> CacheInfo:
        return CacheInfo(self.hits, self.misses, self.size())

    def reset_counters(self) -> None:
        with self._lock:
            self.hits = self.misses = 0


registry: dict[str, Counter] = {}  # name -> layer, in creation order
_all_caches: weakref.WeakSet = weakref.WeakSet()  # every Cache, layer or memo (JAX: _caches)


MISSING = object()  # what a lookup finds for a key not stored


class _Flight:
    """A value being computed by one thread; others asking for its key wait on `done`."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.owner = threading.get_ident()
        self.value: Any = None
        self.failed = False


class _Table:
    """Entries (least recently used first) and the misses being computed, for one key space."""

    def __init__(self) -> None:
        self.entries: OrderedDict[Hashable, Any] = OrderedDict()
        self.flights: dict[Hashable, _Flight] = {}
        self.failed: dict[Hashable, None] = {}  # keys whose computation raised (WeakrefCache)


class Cache(Counter):
    """key -> value, least recently used evicted past `maxsize` (None: unbounded)."""

    def __init__(self, name: str, key_doc: str, maxsize: int | None = 4096,
                 layer: bool = True):
        super().__init__(name, key_doc, layer)
        self.maxsize = maxsize
        self._table = _Table()
        _all_caches.add(self)

    def get_or_compute(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """The cached value of `key`, or `compute()` stored under it (once, across threads)."""
        return self._get(self._table, key, compute)

    def _lookup(self, table: _Table, key: Hashable) -> tuple[str, Any]:
        """With the lock held: ("hit", value), ("wait", another thread's flight) or
        ("fill", a new flight this thread must complete)."""
        # EXERCISE 7.1 (cache-lookup): hit refreshes; another's flight is a hit too; miss starts one
        value = table.entries.get(key, MISSING)
        if value is not MISSING:
            self._count(hit=True)
            table.entries.move_to_end(key)
            return "hit", value
        flight = table.flights.get(key)
        if flight is not None and flight.owner != threading.get_ident():
            self._count(hit=True)  # answered by the thread computing it
            return "wait", flight
        self._count(hit=False)
        table.flights[key] = _Flight()
        return "fill", table.flights[key]
        # END EXERCISE

    def _get(self, table: _Table | None, key: Hashable, compute: Callable[[], Any],
             on_miss: Callable[[list], None] | None = None) -> Any:
        with self._lock:
            if table is None:  # a key that cannot be stored: computed every time
                self._count(hit=False)
            else:
                state, found = self._lookup(table, key)
                seen = [*table.entries, *table.failed] if state == "fill" else []
        if table is None:
            return compute()
        if state == "hit":
            return found
        if state == "wait":
            return _wait(found, compute)
        if on_miss is not None and key not in seen:  # a key that failed before: explained once
            on_miss(seen)
        return self._fill(table, key, found, compute)

    def _fill(self, table: _Table, key: Hashable, flight: _Flight,
              compute: Callable[[], Any]) -> Any:
        """Compute outside the lock, store, and hand the value to the threads waiting for it."""
        try:
            value = compute()
        except BaseException:
            with self._lock:
                table.flights.pop(key, None)
            flight.failed = True
            flight.done.set()
            raise
        with self._lock:
            # a value stored meanwhile (the computation asked for its own key) is kept, as
            # functools.lru_cache keeps it; this call still returns its own
            table.entries.setdefault(key, value)
            table.flights.pop(key, None)
            while self.maxsize is not None and len(table.entries) > self.maxsize:
                table.entries.popitem(last=False)
        flight.value = value
        flight.done.set()
        return value

    def size(self) -> int:
        return len(self._table.entries)

    def keys(self) -> list[Hashable]:
        with self._lock:
            return list(self._table.entries)

    def clear(self) -> None:
        with self._lock:
            self._table.entries.clear()


def _wait(flight: _Flight, compute: Callable[[], Any]) -> Any:
    flight.done.wait()
    if flight.failed:  # the first thread's computation raised: try (and likely fail) here too
        return compute()
    return flight.value


class WeakrefCache(Cache):
    """(referent, key) -> value, the referent held weakly: its entries die with it."""

    def __init__(self, name: str, key_doc: str,
                 explain: Callable[[Any, Hashable, list[Hashable]], None] | None = None,
                 layer: bool = True, sizes_failed: bool = False):
        super().__init__(name, key_doc, maxsize=None, layer=layer)
        self._per_referent: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._explain = explain  # called on a miss with the referent, the key, the keys seen
        # a key whose computation raised counts in size_of, as the slot JAX's C++ cache makes
        # before the miss runs stays when the miss raises
        self._sizes_failed = sizes_failed

    def table(self, referent: Any) -> _Table | None:
        """`referent`'s entries (made empty the first time), or None if it cannot be a weak key.

        A caller may hold the table and ask `hit` on it, as JAX's C++ PjitFunction holds its
        function's cache instead of looking the function up on every call.
        """
        try:
            table = self._per_referent.get(referent)
            if table is None:
                with self._lock:
                    table = self._per_referent.setdefault(referent, _Table())
        except TypeError:  # not weakly referenceable, or unhashable
            return None
        return table

    def hit(self, table: _Table | None, key: Hashable, stats: Stats) -> Any:
        """The value stored under `key`, counted as a hit here and in `stats`; or MISSING,
        counted nowhere: the caller then asks `get_or_compute`, which counts the miss."""
        if table is None:  # a referent that cannot be a weak key: nothing is ever stored
            return MISSING
        with self._lock:
            value = table.entries.get(key, MISSING)
            if value is not MISSING:
                self.hits += 1
                stats.record(self.name, True)
        return value  # no LRU refresh: a WeakrefCache is unbounded, its entries die with the key

    def count_hit(self, stats: Stats) -> None:
        """Count a hit served without `hit` (a backend's fast path read the table itself).
        Every such call comes here: acquire and release cost half of what `with` costs."""
        self._lock.acquire()
        try:
            self.hits += 1
            stats.record(self.name, True)
        finally:
            self._lock.release()

    def get_or_compute(self, referent: Any, key: Hashable, compute: Callable[[], Any],
                       explain: bool = False) -> Any:
        """Like Cache.get_or_compute, the entries kept per referent; on a miss, with `explain`,
        first ask the explain hook why (it sees the keys this referent was seen with)."""
        table = self.table(referent)
        on_miss = None
        if explain and self._explain is not None:
            def on_miss(seen: list) -> None:
                self._explain(referent, key, seen)
        return self._get(table, key, compute, on_miss)

    def _fill(self, table: _Table, key: Hashable, flight: _Flight,
              compute: Callable[[], Any]) -> Any:
        """As Cache._fill; a key whose computation raises is remembered as seen, as JAX's
        explain remembers it: asked again, it is not explained again."""
        try:
            return super()._fill(table, key, flight, compute)
        except BaseException:
            with self._lock:
                table.failed[key] = None
            raise

    def _table_of(self, referent: Any) -> _Table:
        try:
            return self._per_referent.get(referent) or _Table()
        except TypeError:
            return _Table()

    def forget(self, referent: Any, key: Hashable) -> None:
        """Drop one entry (a value that must not be reused, e.g. it holds a tracer)."""
        with self._lock:
            self._table_of(referent).entries.pop(key, None)

    def evict(self, referent: Any, where: Callable[[Hashable], bool] | None = None) -> None:
        """Drop every entry of `referent` (JAX: `evict_weakref`), or those whose key is `where`;
        its table stays, for whoever holds it."""
        with self._lock:
            table = self._table_of(referent)
            for d in (table.entries, table.failed):
                for key in [k for k in d if where is None or where(k)]:
                    del d[key]

    def size(self) -> int:
        return sum(len(t.entries) for t in list(self._per_referent.values()))

    def size_of(self, referent: Any, where: Callable[[Hashable], bool] | None = None) -> int:
        table = self._table_of(referent)
        with self._lock:
            keys = {**table.entries, **table.failed} if self._sizes_failed else table.entries
            return sum(where is None or where(k) for k in list(keys))

    def keys_of(self, referent: Any) -> list[Hashable]:
        with self._lock:
            return list(self._table_of(referent).entries)

    def clear(self) -> None:
        with self._lock:
            for table in list(self._per_referent.values()):
                table.entries.clear()
                table.failed.clear()


LAYERS = ("signature", "trace", "lowering", "executable", "persistent", "primitive")


def report() -> str:
    """Every layer's counters, one line each: name, hits, misses, entries, what its key compares."""
    lines = [f"{'layer':<10} {'hits':>6} {'misses':>6} {'size':>6}  key"]
    for layer in sorted(registry.values(),
                        key=lambda c: LAYERS.index(c.name) if c.name in LAYERS else len(LAYERS)):
        info = layer.info()
        lines.append(f"{layer.name:<10} {info.hits:>6} {info.misses:>6} {info.currsize:>6}  "
                     f"{layer.key_doc}")
    return "\n".join(lines)


def clear_all_caches() -> None:
    """Empty every cache object's entries, layers and memo caches alike (JAX: same name)."""
    for cache in list(_all_caches):
        cache.clear()


def reset_counters() -> None:
    """Zero every layer's counters (the entries stay)."""
    for layer in registry.values():
        layer.reset_counters()
