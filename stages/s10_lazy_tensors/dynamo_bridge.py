"""torch.compile meets the lazy tensor: trace an FX graph once on real tensors, replay by hash.

torch_xla: torch_xla/_dynamo/dynamo_bridge.py (`extract_compiled_graph`, `extract_graph_helper`,
`extract_internal`, `GraphInputMatcher`, `NoneRemover`, `UnsupportedNodesCollector`,
`partition_fx_graph_for_cpu_fallback`), behind the "openxla" backend (dynamo_backend.py). It
runs the graph once through the lazy runtime, hashes what it recorded, compiles without
running, undoes the run, and returns a closure that replays the executable by hash on each
call. Nodes that fall back to the CPU split the graph into parts.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupport
from torch.fx.passes.utils.fuser_utils import topo_sort

from . import graph_executor, metrics, torch_xla
from .graph_executor import SyncTensorsConfig, run_post_order
from .ir import DeviceData
from .tensor import DeviceContextArena, LazyTensor, get_xla_tensor, is_lazy, make_tensor_from_data


class NoneRemover:
    """Outputs that are None (a backward graph's) are taken out, then put back."""

    def remove_nones(self, values: Sequence[Any]) -> list[Any]:
        self.none_positions = [i for i, v in enumerate(values) if v is None]
        return [v for v in values if v is not None]

    def add_nones(self, values: list[Any]) -> list[Any]:
        for i in self.none_positions:
            values.insert(i, None)
        return values


class GraphInputMatcher:
    """The graph's parameters for a call: an argument of the call where the traced parameter
    was an argument's buffer, else the buffer seen at trace time (a weight, a cached scalar)."""

    def __init__(self, arg_index_of: dict[int, int], input_tensor_ids: Sequence[int | None],
                 input_data: Sequence[Any]):
        self.arg_idxs = [arg_index_of.get(t) for t in input_tensor_ids]
        self.traced = [None if i is not None else d for i, d in zip(self.arg_idxs, input_data,
                                                                    strict=True)]

    def __call__(self, args: Sequence[LazyTensor]) -> list[Any]:
        return [traced if i is None else _buffer(args[i])
                for i, traced in zip(self.arg_idxs, self.traced, strict=True)]


def _buffer(t: LazyTensor) -> Any:
    """A materialized tensor's buffer: its handle, or the data of its device data node."""
    data = get_xla_tensor(t)
    return data.handle if data.handle is not None else data.ir_value.node.data


def _needs_materialization(tensors: Sequence[LazyTensor]) -> list[bool]:
    """Which tensors hold pending IR (C++: _check_tensor_need_materialization)."""
    data = [get_xla_tensor(t) if is_lazy(t) else None for t in tensors]
    return [d is not None and d.ir_value is not None and not isinstance(d.ir_value.node, DeviceData)
            for d in data]


def clear_pending_irs() -> None:
    """Drop every live tensor's pending IR (C++: ClearPendingIrs): a tensor over a device
    data node gets its buffer back; any other is left a placeholder without data."""
    for t in DeviceContextArena.get_live_tensors():
        if t.ir_value is None or t.handle is not None:
            continue
        if isinstance(t.ir_value.node, DeviceData):
            t.set_data_handle(t.ir_value.node.data)
        else:
            t.ir_value = None


# --8<-- [start:extract_graph_helper]
def extract_graph_helper(model: torch.fx.GraphModule, args: Sequence[LazyTensor]
                         ) -> dict[str, Any]:
    """Trace once on the real tensors, hash, compile without running, undo the trace."""
    torch_xla.sync()  # the arguments become device data: graph inputs, not graph code
    arg_index_of = {get_xla_tensor(a).unique_id: i for i, a in enumerate(args) if is_lazy(a)}
    clones = [torch.clone(a) if is_lazy(a) else a for a in args]  # to undo the trace's updates
    outs = model(*args)
    outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
    none_remover = NoneRemover()
    outs = none_remover.remove_nones(outs)
    mutated = _needs_materialization(args)
    # an argument updated in place is an output too, first, unless the graph returns it
    returned = {id(o) for o in outs}
    updates = [i for i, m in enumerate(mutated) if m and id(args[i]) not in returned]
    args_and_out = [args[i] for i in updates] + outs
    # an output is an untouched input handed back, a buffer made during the trace (the same
    # each call), or a value the graph computes: each distinct one once
    where: list[tuple[str, Any]] = []
    computed: list[Any] = []
    for o, pending in zip(args_and_out, _needs_materialization(args_and_out), strict=True):
        d = get_xla_tensor(o) if is_lazy(o) else None
        if d is None:  # a number (a size the backward graph needs)
            where.append(("value", o))
        elif not pending:
            where.append(("arg", arg_index_of[d.unique_id]) if d.unique_id in arg_index_of
                         else ("data", (_buffer(o), d.aval, d.dtype)))
        else:
            if d not in computed:
                computed.append(d)
            where.append(("out", computed.index(d)))
    po = run_post_order([d.ir_value for d in computed])
    matcher = GraphInputMatcher(arg_index_of,
                                [getattr(d, "tensor_id", None) for d in po.parameters_data],
                                po.parameters_data)
    graph_hash = torch_xla.get_graph_hash(computed)
    graph_executor.sync_tensors_graph(computed, SyncTensorsConfig(force_ltc_data=False),
                                      warm_up_cache_only=True)
    for i in updates:  # undo the trace's in-place updates
        args[i].copy_(clones[i])
    clear_pending_irs()
    return dict(graph_hash=graph_hash, matcher=matcher, updates=updates, where=where,
                none_remover=none_remover, out_meta=[(d.aval, d.dtype) for d in computed])
# --8<-- [end:extract_graph_helper]


# --8<-- [start:extract_internal]
def extract_internal(model: torch.fx.GraphModule, args: Sequence[LazyTensor]
                     ) -> Callable[..., Any]:
    """The closure torch.compile calls: no tracing, no compiling, a run by hash."""
    traced = extract_graph_helper(model, args)

    def optimized_mod(*args: LazyTensor) -> Any:
        pending = [a for a, m in zip(args, _needs_materialization(args), strict=True) if m]
        if pending:  # inputs must be device data (C++: _xla_sync_multi)
            metrics.DynamoSyncInputExecuteTime.add_value(1)
            graph_executor.sync_tensors_graph([get_xla_tensor(a) for a in pending],
                                              SyncTensorsConfig(sync_ltc_data=False))
        cached = graph_executor.computation_cache.get(traced["graph_hash"])
        if cached is None:
            raise RuntimeError("the compiled graph was evicted from the compile cache")
        results = graph_executor.execute(cached, traced["matcher"](args), False)
        computed = [make_tensor_from_data(h, aval, dtype)
                    for h, (aval, dtype) in zip(results, traced["out_meta"], strict=True)]
        res = [args[i] if kind == "arg" else computed[i] if kind == "out"
               else make_tensor_from_data(*i) if kind == "data" else i
               for kind, i in traced["where"]]
        for k, i in enumerate(traced["updates"]):  # mutated inputs take their new values
            args[i].copy_(res[k])
        result = traced["none_remover"].add_nones(res[len(traced["updates"]):])
        return result[0] if len(result) == 1 else tuple(result)
    return optimized_mod
# --8<-- [end:extract_internal]


class UnsupportedNodesCollector(torch.fx.Interpreter):
    """Run the graph node by node; a node that made a CPU fallback is unsupported."""

    def __init__(self, module: torch.fx.GraphModule):
        super().__init__(module)
        self.unsupported: list[torch.fx.Node] = []

    def run_node(self, n: torch.fx.Node) -> Any:
        before = {k: metrics.counter_value(k) for k in metrics.executed_fallback_ops()}
        result = super().run_node(n)
        after = {k: metrics.counter_value(k) for k in metrics.executed_fallback_ops()}
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        if after != before or not all(map(_lazy_or_plain, [*args, *kwargs.values(), result])):
            self.unsupported.append(n)
        return result


def _lazy_or_plain(x: Any) -> bool:
    """A lazy tensor, a number, a dtype, or a plain list of those; not a CPU tensor, nor a
    structure (the named tuple an op returns) handed from node to node."""
    if isinstance(x, (list, tuple)) and not hasattr(x, "n_fields"):  # not a return type
        return all(map(_lazy_or_plain, x))
    return is_lazy(x) or not isinstance(x, (torch.Tensor, tuple, list, dict))


class _Supported(OperatorSupport):
    def __init__(self, unsupported: Sequence[torch.fx.Node]):
        super().__init__()
        self.unsupported = set(unsupported)

    def is_node_supported(self, submodules: Any, node: torch.fx.Node) -> bool:
        return node.op in ("call_function", "call_module", "call_method") and (
            node not in self.unsupported or node.target == operator.getitem)


# --8<-- [start:partition]
def partition_fx_graph_for_cpu_fallback(model: torch.fx.GraphModule,
                                        args: Sequence[LazyTensor]) -> torch.fx.GraphModule:
    """Unsupported nodes stay in the outer graph (run eagerly, on the CPU); each run of
    supported nodes becomes a `fused_N` part, compiled on its own."""
    clones = [torch.clone(a) if is_lazy(a) else a for a in args]
    collector = UnsupportedNodesCollector(model)
    collector.run(*args)
    for a, c, m in zip(args, clones, _needs_materialization(args), strict=True):
        if m:
            a.copy_(c)
    clear_pending_irs()
    partitioner = CapabilityBasedPartitioner(model, _Supported(collector.unsupported),
                                             allows_single_node_partition=True)
    partitions = partitioner.propose_partitions()
    for partition in partitions:
        partition.nodes = topo_sort(partition.nodes)
    fused = partitioner.fuse_partitions(partitions)
    inputs: dict[str, Any] = {}

    class InputCollector(torch.fx.Interpreter):  # each part's arguments, from one run
        def call_module(self, target: Any, a: Any, kw: Any) -> Any:
            inputs[target] = a
            return super().call_module(target, a, kw)
    InputCollector(fused).run(*args)
    for a, c, m in zip(args, clones, _needs_materialization(args), strict=True):
        if m:
            a.copy_(c)
    clear_pending_irs()
    for node in list(fused.graph.nodes):
        if node.op == "call_module" and node.target.startswith("fused_"):
            part = getattr(fused, node.target)
            with fused.graph.inserting_after(node):
                call = fused.graph.call_function(extract_internal(part, inputs[node.target]),
                                                 node.args)
            node.replace_all_uses_with(call)
            fused.graph.erase_node(node)
            fused.delete_submodule(node.target)
    fused.recompile()
    return fused
# --8<-- [end:partition]


def extract_compiled_graph(model: torch.fx.GraphModule, args: Sequence[LazyTensor]
                           ) -> Callable[..., Any]:
    """The entry point (counter DynamoExtractCompiledGraph), with eager mode off inside."""
    metrics.DynamoExtractCompiledGraph.add_value(1)
    with torch_xla.eager_mode_context(False):
        torch_xla.sync()
        return partition_fx_graph_for_cpu_fallback(model, args)
