"""Metrics as torch_xla prints them: its time and byte formats (including the rounding quirk of
the millisecond field), the report's blocks, and a jit's one compile for N executes."""

from __future__ import annotations

import re
import threading

import numpy as np
import pytest

import stages.s07_caches as s07
from stages.s02_tracing import numpy as jnp
from stages.s09_pjrt import metrics


@pytest.mark.parametrize("ns,printed", [
    (173884862, "174ms884.862us"),  # torch_xla's own report: the ms field is rounded, the
    (54704315, "055ms704.315us"),  # rest is what is left after the whole milliseconds
    (1330567762, "01s331ms567.762us"),
    (540998, "540.998us"),
    (12, "000.012us"),
    (3 * 3600e9 + 5e9, "03h00m05s000ms000.000us"),
])
def test_a_time_prints_as_torch_xla_prints_it(ns, printed):
    assert metrics.metric_fn_time(ns) == printed


@pytest.mark.parametrize("n,printed", [(4, "4.00B"), (3.84 * 1024 * 1024, "3.84MB"),
                                       (1536, "1.50KB"), (2.5 * 1024 ** 5, "2.50PB")])
def test_bytes_print_in_powers_of_1024(n, printed):
    assert metrics.metric_fn_bytes(n) == printed


def test_a_metric_block_has_torch_xla_lines_and_percentiles():
    m = metrics.Metric("ExampleTime", metrics.metric_fn_time)
    for k, value in enumerate([3e6, 1e6, 2e6]):
        m.add_sample(value, timestamp_ns=k * 1_000_000_000)
    assert metrics.emit_metric_info(m) == (
        "Metric: ExampleTime\n"
        "  TotalSamples: 3\n"
        "  Accumulator: 006ms000.000us\n"
        "  ValueRate: 003ms000.000us / second\n"
        "  Rate: 1.5 / second\n"
        "  Percentiles: 1%=001ms000.000us; 5%=001ms000.000us; 10%=001ms000.000us; "
        "20%=001ms000.000us; 50%=002ms000.000us; 80%=003ms000.000us; 90%=003ms000.000us; "
        "95%=003ms000.000us; 99%=003ms000.000us\n")


def test_samples_are_a_ring_but_the_count_and_sum_are_of_all():
    m = metrics.Metric("Ring", metrics.metric_fn_value, max_samples=2)
    for v in (1.0, 2.0, 3.0):
        m.add_sample(v)
    assert (m.count, m.accumulator) == (3, 6.0)
    assert [s.value for s in m.samples()] == [2.0, 3.0]


def test_writers_in_many_threads_lose_no_sample_and_unread_samples_stay_bounded():
    m = metrics.Metric("Threads", metrics.metric_fn_value, max_samples=64)
    c = metrics.Counter("Threads")
    start = threading.Barrier(4)

    def write(k: int) -> None:
        start.wait()
        for i in range(5000):
            m.add_sample(float(k), timestamp_ns=i)
            c.add_value(k)

    threads = [threading.Thread(target=write, args=(k,)) for k in (1, 2, 3, 4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(m._new) <= 64 + 4 and len(c._new) <= 1024 + 4  # folded as they went
    assert (m.count, m.accumulator, c.value) == (20000, 50000.0, 50000)
    assert len(m.samples()) == 64
    m.clear()
    c.clear()
    assert (m.count, m.accumulator, m.samples(), c.value) == (0, 0.0, [], 0)


def test_one_signature_called_n_times_is_one_compile_and_n_executes(delta):
    f = s07.jit(lambda x: jnp.tanh(x) * 3.0)
    x = np.linspace(-1, 1, 5, dtype=np.float32)
    d = delta()
    for _ in range(7):
        f(x)
    assert d.samples("CompileTime") == 1
    assert d.samples("ExecuteTime") == 7
    assert d.samples("TransferToDeviceTime") == 7  # a numpy argument goes down every call
    assert d.count("CreateCompileHandles") == 1
    report = metrics.metrics_report()
    assert re.search(r"^Metric: CompileTime\n  TotalSamples: \d+\n  Accumulator: ", report, re.M)
    assert "Counter: CreateCompileHandles\n  Value: " in report


def test_the_report_lists_metrics_then_counters_each_sorted_and_only_nonzero():
    s07.jit(lambda x: x * 2.0)(np.ones(3, np.float32))  # a compile, a transfer, an execute
    report = metrics.metrics_report()
    metric_names = re.findall(r"^Metric: (\w+)", report, re.M)
    counter_names = re.findall(r"^Counter: (\w+)", report, re.M)
    assert metric_names == sorted(metric_names) and counter_names == sorted(counter_names)
    assert report.index("Counter: ") > report.rindex("Metric: ")
    assert "EagerOpCompileTime" not in metric_names  # never sampled, so not printed
    assert metrics.metric_data("EagerOpCompileTime") is None
    total, accumulator, samples = metrics.metric_data("ExecuteTime")
    assert total >= len(samples) > 0 and accumulator > 0


def test_short_report_and_clearing():
    short = metrics.short_metrics_report()
    assert re.findall(r"^Metric: (\w+)", short, re.M) == [
        n for n in ["CompileTime", "ExecuteTime", "ExecuteReplicatedTime",
                    "TransferToDeviceTime", "TransferFromDeviceTime"]
        if metrics.metric_data(n) is not None]
    metrics.clear_counters()
    assert metrics.counter_names() == [] and metrics.counter_value("CreateDataHandles") is None
    metrics.clear_all()
    assert metrics.metrics_report() == ""


def test_short_report_always_ends_with_the_cpu_fallback_counters():
    """torch_xla's CreateMetricReport(counter_names, metric_names) appends every counter named
    `aten::*` whatever names were asked for."""
    metrics.counter("aten::sort.stable").add_value(2)
    short = metrics.short_metrics_report(["MarkStep"], ["CompileTime"])
    assert short.endswith("Counter: aten::sort.stable\n  Value: 2\n")
    asked = metrics.short_metrics_report(["aten::sort.stable"], [])  # listed once, not twice
    assert asked.count("aten::sort.stable") == 1
    metrics.clear_counters()


def test_metric_data_times_are_seconds_as_torch_xla_gives_them():
    """GetMetricData: sample[0] = 1.0e-9 * timestamp_ns, a float."""
    metrics.metric("ProbeValue", metrics.metric_fn_value).add_sample(3.0)
    _, _, samples = metrics.metric_data("ProbeValue")
    (when, value), = samples
    assert isinstance(samples, tuple) and isinstance(when, float) and value == 3.0
    assert abs(when - 1e-9 * metrics.now_ns()) < 60
    metrics.clear_metrics()
