"""The lazy tensor core's counters and metrics, by torch_xla's names, in stage 9's report.

torch_xla: the TORCH_LAZY_COUNTER / TORCH_LAZY_VALUE_METRIC calls of xla_graph_executor.cpp,
tensor.cpp and aten_fallback.cpp, and torch_xla/debug/metrics.py. They live in stage 9's
arena, so `metrics_report()` prints them with the client's timers. torch_xla's report has two
sections (the lazy core's, then the client's); ours is one list, sorted by name.
"""

from __future__ import annotations

from stages.s09_pjrt import metrics as _m
from stages.s09_pjrt.metrics import (  # noqa: F401  (torch_xla.debug.metrics' API)
    clear_all,
    clear_counters,
    clear_metrics,
    counter_names,
    counter_value,
    metric_data,
    metric_names,
    metrics_report,
    short_metrics_report,
)

counter = _m.counter

# executor (xla_graph_executor.cpp)
UncachedCompile = _m.counter("UncachedCompile")
CachedCompile = _m.counter("CachedCompile")
MarkStep = _m.counter("MarkStep")
ExecuteComputation = _m.counter("ExecuteComputation")
SyncTensorsToData = _m.counter("SyncTensorsToData")
DeviceDataCacheMiss = _m.counter("DeviceDataCacheMiss")
TensorsGraphSize = _m.metric("TensorsGraphSize", _m.metric_fn_value)
InputOutputAliasCount = _m.metric("InputOutputAliasCount", _m.metric_fn_value)
# tensors (tensor.cpp)
CreateXlaTensor = _m.counter("CreateXlaTensor")
# torch.compile (dynamo_bridge.py)
DynamoExtractCompiledGraph = _m.counter("DynamoExtractCompiledGraph")
DynamoSyncInputExecuteTime = _m.counter("DynamoSyncInputExecuteTime")


def fallback_counter(op_name: str) -> _m.Counter:
    """`aten::<op>`: an op that ran on the CPU instead (C++: aten_fallback.cpp's
    `xla_fallback`, which makes one Counter per op name by hand)."""
    return _m.counter(f"aten::{op_name}")


def executed_fallback_ops() -> list[str]:
    """The ops that fell back to the CPU since the counters were cleared."""
    return [n for n in counter_names() if n.startswith("aten::")]
