"""The user's handles on the lazy device: `device()`, `sync()`, eager mode, graph dumps.

torch_xla: torch_xla/torch_xla.py (`device`, `sync`, `compile`), torch_xla/core/xla_model.py
(`xla_device`, `mark_step`, `wait_device_ops`), torch_xla/experimental/eager.py
(`eager_mode`, `eager_mode_context`) and the `_XLAC` debug calls (`_get_xla_tensors_text`,
`_get_graph_hash`). `sync()` is the step barrier: it computes every live tensor's pending IR
in one graph, which is the graph a training step compiles once and then replays.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import torch

from . import device_data, graph_executor, register_xla
from .graph_executor import SyncTensorsConfig, collect_sync_tensors, run_post_order
from .hash import hash_value, mhash, string_hash
from .ir import Value, compute_post_order, shape_string
from .tensor import DEVICE, DEVICE_TYPE, LazyTensor, get_xla_tensor, is_lazy


def device(index: int = 0) -> torch.device:
    """The lazy device (torch_xla: `torch_xla.device()`, an `xla:N` device)."""
    return torch.device(DEVICE_TYPE, index)


xla_device = device  # torch_xla.core.xla_model's older name


# --8<-- [start:sync]
def sync(wait: bool = False, reset_scope: bool = True) -> None:
    """Compute every live tensor's pending IR now, as one graph (torch_xla: `torch_xla.sync`,
    which calls `_xla_step_marker`: SyncLiveTensorsGraph, then MarkStep)."""
    graph_executor.sync_live_tensors_graph(wait)
    graph_executor.mark_step()
# --8<-- [end:sync]


def mark_step(wait: bool = False, reset_scope: bool = True) -> None:
    """torch_xla.core.xla_model.mark_step, which is `sync`."""
    sync(wait, reset_scope)


def wait_device_ops() -> None:
    device_data.client().wait_device_ops()


def eager_mode(enable: bool) -> None:
    """Sync after every op (torch_xla.experimental.eager_mode): each op its own graph."""
    graph_executor.set_eager_mode(enable)


def is_eager_mode() -> bool:
    return graph_executor.eager_mode_enabled()


@contextlib.contextmanager
def eager_mode_context(enable: bool) -> Iterator[None]:
    saved = is_eager_mode()
    eager_mode(enable)
    try:
        yield
    finally:
        eager_mode(saved)


def get_tensors_text(tensors: Sequence[LazyTensor]) -> str:
    """The pending IR of `tensors`, one node a line (torch_xla: `_get_xla_tensors_text`)."""
    return dump_text([get_xla_tensor(t).get_ir_value() for t in tensors])


def get_graph_hash(tensors: Sequence[LazyTensor]) -> int:
    """The hash a graph computing `tensors` would be cached under, without running anything
    (torch_xla: `_get_graph_hash`, which dynamo uses: force_ltc_data off). Takes tensors,
    or the XLATensorData behind them."""
    data = [get_xla_tensor(t) if is_lazy(t) else t for t in tensors]
    coll = collect_sync_tensors(data, SyncTensorsConfig(force_ltc_data=False))
    po = run_post_order([data[i].ir_value for i in coll.indices])
    coll.merge("parameter sequence", hash_value(po.parameter_sequence))
    coll.merge("sharding config", mhash(False), string_hash(""))
    return coll.hash


__all__ = ["DEVICE", "device", "eager_mode", "eager_mode_context", "get_graph_hash",
           "get_tensors_text", "is_eager_mode", "mark_step", "sync", "wait_device_ops",
           "xla_device"]

register_xla.register()  # the kernels, once the op table is complete


def _param_text(value: Any) -> str:
    return str(tuple(value)) if isinstance(value, list) else str(value)


def dump_text(roots: Sequence[Value]) -> str:
    """The graph as torch_xla's `_get_xla_tensors_text` prints it: one line per node."""
    order = compute_post_order(v.node for v in roots)
    ids = {id(n): i for i, n in enumerate(order)}
    root_of = {id(v.node): k for k, v in reversed(list(enumerate(roots)))}
    lines = ["IR {"]
    for i, node in enumerate(order):
        operands = ", ".join(f"%{ids[id(v.node)]}" + (f".{v.index}" if v.node.num_outputs > 1
                                                       else "") for v in node.operands if v)
        shapes = ", ".join(shape_string(a) for a in node.avals)
        extra = "".join(f", {k}={_param_text(v)}" for k, v in node.params)
        if id(node) in root_of:
            extra += f", ROOT={root_of[id(node)]}"
        lines.append(f"  %{i} = {shapes} {node.op}({operands}){extra}")
    return "\n".join([*lines, "}"]) + "\n"
