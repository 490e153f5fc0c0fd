"""Metrics and counters as torch_xla keeps them, and `metrics_report()` in its exact format.

torch_xla: torch_xla/csrc/runtime/metrics.{h,cpp} (the arena, `MetricFnTime`, `MetricFnBytes`,
`EmitMetricInfo`, `CreateMetricReport`) and torch_xla/debug/metrics.py (the Python API). A
*metric* keeps every sample (a timestamp and a value) in a ring of `XLA_METRICS_SAMPLES`
(1024) and their running sum, the *accumulator*; a *counter* is one integer. The client stamps
its timers (`CompileTime`, `ExecuteTime`, ...) and bumps its counters (`CreateDataHandles`,
...) here; `metrics_report()` prints whatever has a sample or a non-zero value, sorted by name
(the arena is a `std::map`), metrics first.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

now_ns = time.perf_counter_ns  # the clock of every timer: monotonic, as torch_xla's NowNs


class Sample(NamedTuple):
    timestamp_ns: int
    value: float


class Metric:
    """A named series of samples and their sum; `repr_fn` prints a value (time, bytes).

    torch_xla's writers take no lock (atomics and a lock-free ring). Ours append to `_new`, a
    deque, whose append CPython documents as thread-safe; a reader folds what has arrived into
    the ring and the totals under the lock (so does a writer, once `_new` holds a ring's worth).
    """

    def __init__(self, name: str, repr_fn: Callable[[float], str], max_samples: int = 0):
        self.name, self.repr_fn = name, repr_fn
        self.max_samples = max_samples or int(os.environ.get("XLA_METRICS_SAMPLES", "1024"))
        self._lock = threading.Lock()
        self._new: deque[tuple[int, float]] = deque()  # added, not yet folded in
        self.clear()

    def clear(self) -> None:
        with self._lock:
            self._new.clear()
            self._count, self._accumulator = 0, 0.0
            # (timestamp_ns, value) pairs; once full, each new one pushes the oldest out
            self._ring: deque[tuple[int, float]] = deque(maxlen=self.max_samples)

    def add_sample(self, value: float, timestamp_ns: int | None = None) -> None:
        if timestamp_ns is None:
            timestamp_ns = now_ns()
        self._new.append((timestamp_ns, value))
        if len(self._new) > self.max_samples:  # nobody is reading: keep the memory bounded
            with self._lock:
                self._fold()

    def add_elapsed(self, start_ns: int) -> None:
        """A timer's sample: the nanoseconds since `start_ns`, stamped now (what `timed` adds;
        called directly where a block is on every jit call's path, to spare an object)."""
        end = now_ns()
        self._new.append((end, end - start_ns))  # add_sample's body: one call fewer per execute
        if len(self._new) > self.max_samples:
            with self._lock:
                self._fold()

    def _fold(self) -> None:  # with self._lock held: only folders pop, so `while` is safe
        new = self._new
        while new:
            sample = new.popleft()
            self._ring.append(sample)
            self._count += 1
            self._accumulator += sample[1]

    @property
    def count(self) -> int:
        """Samples ever added (TotalSamples), not only those the ring keeps."""
        with self._lock:
            self._fold()
            return self._count

    @property
    def accumulator(self) -> float:
        """The sum of every sample ever added."""
        with self._lock:
            self._fold()
            return self._accumulator

    def samples(self) -> list[Sample]:
        """The kept samples, oldest first."""
        with self._lock:
            self._fold()
            return [Sample(t, float(v)) for t, v in self._ring]


class Counter:
    """A named integer (torch_xla: XLA_COUNTER, an atomic CounterData in the arena); added to
    without a lock, as a Metric is."""

    def __init__(self, name: str):
        self.name = name
        self._lock = threading.Lock()
        self._new: deque[int] = deque()
        self._value = 0

    def add_value(self, n: int = 1) -> None:
        self._new.append(n)
        if len(self._new) > 1024:  # nobody is reading: keep the memory bounded
            with self._lock:
                self._fold()

    def _fold(self) -> None:  # with self._lock held
        new = self._new
        while new:
            self._value += new.popleft()

    @property
    def value(self) -> int:
        with self._lock:
            self._fold()
            return self._value

    def clear(self) -> None:
        with self._lock:
            self._new.clear()
            self._value = 0


_metrics: dict[str, Metric] = {}
_counters: dict[str, Counter] = {}


def metric(name: str, repr_fn: Callable[[float], str]) -> Metric:
    """The metric called `name`, made on first use (torch_xla: MetricsArena::RegisterMetric)."""
    return _metrics.setdefault(name, Metric(name, repr_fn))


def counter(name: str) -> Counter:
    return _counters.setdefault(name, Counter(name))


def all_metrics() -> dict[str, Metric]:
    return dict(_metrics)


def all_counters() -> dict[str, Counter]:
    return dict(_counters)


class timed:
    """Context manager: add the body's wall time, in nanoseconds, to `metric`.

    torch_xla: TimedSection. Its ExecuteTime ends when the device is done (the timer is released
    by the output future's OnReady); ours ends when the execution has been handed to PJRT.
    """

    __slots__ = ("metric", "start")

    def __init__(self, m: Metric):
        self.metric = m

    def __enter__(self) -> None:
        self.start = now_ns()

    def __exit__(self, *exc_info: Any) -> None:
        self.metric.add_elapsed(self.start)


# ------------------------------------------------------------------ how values print

# --8<-- [start:metric_fn_time]
_TIME_PARTS = (("d", 86400e9, 2, 0), ("h", 3600e9, 2, 0), ("m", 60e9, 2, 0),
               ("s", 1e9, 2, 0), ("ms", 1e6, 3, 0), ("us", 1e3, 7, 3))  # suffix, ns, width, digits


def metric_fn_time(value: float) -> str:
    """Nanoseconds as torch_xla prints them: `01s331ms567.762us`, `055ms704.315us`."""
    # EXERCISE 9.1 (metric-time): torch_xla's MetricFnTime, part by part
    out, count = [], 0
    for i, (suffix, scale, width, digits) in enumerate(_TIME_PARTS):
        part = value / scale
        if part >= 1.0 or count > 0 or i + 1 == len(_TIME_PARTS):
            # printed rounded, then only the whole units are taken off: 54.7ms prints as 055ms
            out.append(f"{part:0{width}.{digits}f}{suffix}")
            value -= math.floor(part) * scale
            count += 1
    return "".join(out)
    # END EXERCISE
# --8<-- [end:metric_fn_time]


def metric_fn_bytes(value: float) -> str:
    """Bytes as torch_xla prints them: `4.00B`, `3.84MB` (powers of 1024)."""
    suffixes = ("B", "KB", "MB", "GB", "TB", "PB")
    k = 0
    while k + 1 < len(suffixes) and value >= 1024.0:
        value /= 1024.0
        k += 1
    return f"{value:.2f}{suffixes[k]}"


def metric_fn_value(value: float) -> str:
    return f"{value:.2f}"


def _percentiles() -> list[float]:
    spec = os.environ.get("XLA_METRICS_PERCENTILES", "0.01:0.05:0.1:0.2:0.5:0.8:0.9:0.95:0.99")
    return sorted(float(p) for p in spec.split(":"))


def _g(x: float) -> str:
    return f"{x:g}"  # a C++ stream's default: six significant digits


def emit_metric_info(m: Metric) -> str:
    """One metric's block of the report (torch_xla: EmitMetricInfo)."""
    samples = m.samples()
    lines = [f"Metric: {m.name}", f"  TotalSamples: {m.count}",
             f"  Accumulator: {m.repr_fn(m.accumulator)}"]
    if samples:
        delta_ns = samples[-1].timestamp_ns - samples[0].timestamp_ns
        if delta_ns > 0:
            total = sum(s.value for s in samples)
            lines.append(f"  ValueRate: {m.repr_fn(1e9 * total / delta_ns)} / second")
            lines.append(f"  Rate: {_g(1e9 * len(samples) / delta_ns)} / second")
    ordered = sorted(s.value for s in samples)
    parts = [f"{_g(p * 100.0)}%={m.repr_fn(ordered[int(p * len(ordered))])}"
             for p in _percentiles()] if ordered else []
    lines.append("  Percentiles: " + "; ".join(parts))
    return "\n".join(lines) + "\n"


def create_metric_report(counter_names: Sequence[str] | None = None,
                         metric_names: Sequence[str] | None = None) -> str:
    """Every metric with a sample, then every counter above zero, each sorted by name."""
    names = sorted(_metrics) if metric_names is None else list(metric_names)
    report = [emit_metric_info(_metrics[n]) for n in names if n in _metrics and _metrics[n].count]
    names = sorted(_counters) if counter_names is None else list(counter_names)
    report += [f"Counter: {n}\n  Value: {_counters[n].value}\n"
               for n in names if n in _counters and _counters[n].value > 0]
    if counter_names is not None:  # the short report: every CPU fallback too, always
        report += [f"Counter: {n}\n  Value: {_counters[n].value}\n" for n in sorted(_counters)
                   if n.startswith("aten::") and n not in names and _counters[n].value > 0]
    return "".join(report)


# ------------------------------------------------------------------ torch_xla/debug/metrics.py

def metrics_report() -> str:
    """The report `torch_xla.debug.metrics.metrics_report()` prints (the client's section)."""
    return create_metric_report()


def short_metrics_report(counter_names: Sequence[str] | None = None,
                         metric_names: Sequence[str] | None = None) -> str:
    counter_names = counter_names or ["CachedCompile", "MarkStep", "DynamoSyncInputExecuteTime"]
    metric_names = metric_names or ["CompileTime", "ExecuteTime", "ExecuteReplicatedTime",
                                    "TransferToDeviceTime", "TransferFromDeviceTime"]
    return create_metric_report(counter_names, metric_names)


def metric_names() -> list[str]:
    return sorted(n for n, m in _metrics.items() if m.count)


def metric_data(name: str) -> tuple[int, float, tuple[tuple[float, float], ...]] | None:
    """(TotalSamples, Accumulator, ((time_s, value), ...)), or None if never sampled; the
    times in seconds, as torch_xla's GetMetricData gives them (1e-9 * timestamp_ns)."""
    m = _metrics.get(name)
    if m is None or not m.count:
        return None
    return m.count, m.accumulator, tuple((1.0e-9 * s.timestamp_ns, s.value)
                                         for s in m.samples())


def counter_names() -> list[str]:
    return sorted(n for n, c in _counters.items() if c.value > 0)


def counter_value(name: str) -> int | None:
    c = _counters.get(name)
    return c.value if c is not None and c.value > 0 else None


def clear_counters() -> None:
    for c in _counters.values():
        c.clear()


def clear_metrics() -> None:
    for m in _metrics.values():
        m.clear()


def clear_all() -> None:
    clear_counters()
    clear_metrics()
