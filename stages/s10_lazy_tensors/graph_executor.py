"""The graph executor: from the pending IR of live tensors to device buffers.

torch_xla: torch_xla/csrc/xla_graph_executor.cpp (and PyTorch's lazy_graph_executor.cpp). `sync`
collects the tensors to compute, folds the graph hash from torch_xla's ingredients in its order,
looks it up in an LRU compile cache, compiles a miss through stage 9's client, executes, and
makes the results the tensors' device data. Reads (`.item()`, `.cpu()`, print) go through
`get_tensors`: a graph of the read tensors alone, never donating, its results fetched.
"""

from __future__ import annotations

import collections
import dataclasses
import os
from collections.abc import Sequence
from typing import Any

import torch

from stages.s09_pjrt.computation_client import Computation, ExecuteComputationOptions

from . import debug_util, device_data, metrics
from .device_data import client, device_string, from_device
from .hash import hash_value, merge_hash, mhash, string_hash
from .ir import DeviceData, Node, Value, compute_post_order
from .lowering_context import lower_graph
from .tensor import DeviceContextArena, XLATensorData, get_xla_tensor, is_lazy

COURSE_GITREV = "under-the-api stage 10"  # stands for torch_xla's XLA_GITREV


# ------------------------------------------------------------------ the compile cache


@dataclasses.dataclass
class CachedComputation:
    computation: Computation
    text: str
    is_sharded: bool = False  # compiled for every device (SPMD): run by ExecuteReplicated
    out_avals: list[Any] = dataclasses.field(default_factory=list)  # the global results


class ComputationCache:
    """An LRU cache of compiled graphs by graph hash (C++: runtime::util::Cache)."""

    def __init__(self, max_size: int):
        self.max_size, self._entries = max_size, collections.OrderedDict()

    def get(self, h: int) -> CachedComputation | None:
        entry = self._entries.get(h)
        if entry is not None:
            self._entries.move_to_end(h)
        return entry

    def add(self, h: int, entry: CachedComputation) -> None:
        self._entries[h] = entry
        self._entries.move_to_end(h)
        while len(self._entries) > self.max_size:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)

    def values(self) -> list[CachedComputation]:  # least recently used first
        return list(self._entries.values())


computation_cache = ComputationCache(int(os.environ.get("XLA_COMPILATION_CACHE_SIZE", "2048")))


def clear_computation_cache() -> None:
    """Forget every compiled graph (torch_xla has no binding for this; a test needs it)."""
    computation_cache._entries.clear()
    debug_util.forget()


# ------------------------------------------------------------------ collecting and hashing


@dataclasses.dataclass
class SyncTensorsConfig:
    force_ltc_data: bool = True  # replace the synced IR with its data (a step barrier)
    sync_ltc_data: bool = True


@dataclasses.dataclass
class SyncTensorCollection:
    config: SyncTensorsConfig
    indices: list[int] = dataclasses.field(default_factory=list)
    hash: int = 0
    ingredients: list[tuple[str, int]] = dataclasses.field(default_factory=list)

    def merge(self, label: str, *hashes: int) -> None:
        """MergeHash, remembering what went in (for the debug report of a new graph)."""
        self.hash = merge_hash(self.hash, *hashes)
        self.ingredients.append((label, self.hash))


def hash_compilation_env() -> int:
    """C++: PjRtComputationClient::HashCompilationEnv, the platform and its devices."""
    c = client()
    return mhash(c.get_platform_version(), *(f"{d}:{c.get_device_kind(d)}"
                                              for d in c.get_all_devices()))


# --8<-- [start:collect_sync_tensors]
def collect_sync_tensors(tensors: Sequence[XLATensorData], config: SyncTensorsConfig
                         ) -> SyncTensorCollection:
    """Which tensors need computing, and the graph hash so far (C++: CollectSyncTensors)."""
    coll = SyncTensorCollection(config)
    # EXERCISE 10.5 (collect): the first ingredients of the graph hash, in torch_xla's order
    coll.hash = mhash(config.force_ltc_data)  # a sync and a read of the same IR differ
    coll.ingredients.append(("force_ltc_data", coll.hash))
    coll.merge("compilation environment and revisions", hash_compilation_env(),
               string_hash(torch.version.git_version), string_hash(COURSE_GITREV))
    seen: set[int] = set()
    for i, t in enumerate(tensors):
        if t.unique_id in seen or t.handle is not None or t.ir_value is None:
            continue
        seen.add(t.unique_id)
        node = t.ir_value.node
        if isinstance(node, DeviceData):  # already data: take the buffer, nothing to run
            t.set_data_handle(node.data)
            continue
        coll.merge(f"tensor {i} IR", t.ir_value.hash())
        coll.indices.append(i)
    # END EXERCISE
    return coll
# --8<-- [end:collect_sync_tensors]


@dataclasses.dataclass
class PostOrderData:
    post_order: list[Node]
    parameters_data: list[Any]
    parameter_sequence: list[int]


def run_post_order(ir_values: Sequence[Value]) -> PostOrderData:
    """The nodes in post order, the graph's parameters (each distinct buffer once), and the
    parameter of each device data node, then (ours) of each operand (C++: RunPostOrder)."""
    post_order = compute_post_order(v.node for v in ir_values)
    index: dict[int, int] = {}
    parameters, sequence = [], []
    for node in (n for n in post_order if isinstance(n, DeviceData)):
        if index.setdefault(id(node.data), len(parameters)) == len(parameters):
            parameters.append(node.data)
        sequence.append(index[id(node.data)])
    # device data hashes its shape alone: the operands' parameters tell (x - y) from (y - x)
    sequence += [index[id(o.node.data)] for node in post_order for o in node.operands
                 if o is not None and isinstance(o.node, DeviceData)]
    return PostOrderData(post_order, parameters, sequence)


# --8<-- [start:buffer_donors]
def get_buffer_donors(tensors: Sequence[XLATensorData], coll: SyncTensorCollection,
                      parameters: Sequence[Any]) -> dict[int, int]:
    """Parameter index -> output index, for each buffer the graph may overwrite (C++:
    GetBufferDonors). Only at a step barrier: a read must leave every buffer as it was."""
    # EXERCISE 10.6 (donors): donate at a step barrier only, a buffer whose tensor is an output
    if os.environ.get("XLA_ENABLE_PARAM_ALIASING", "1") == "0":
        return {}
    if not (coll.config.sync_ltc_data and coll.config.force_ltc_data):
        return {}
    output_of = {tensors[i].unique_id: k for k, i in enumerate(coll.indices)}
    holders = collections.Counter(id(t.handle) for t in DeviceContextArena.get_live_tensors()
                                  if t.handle is not None)
    donors = {}
    for p, data in enumerate(parameters):
        k = output_of.get(getattr(data, "tensor_id", None))
        # the updated tensor holds IR now: any holder of the buffer is another live tensor
        if k is None or getattr(data, "read_only", False) or holders[id(data)] > 0:
            continue
        if tensors[coll.indices[k]].aval == data.aval:
            donors[p] = k
    return donors
    # END EXERCISE
# --8<-- [end:buffer_donors]


# ------------------------------------------------------------------ compile and execute


def compile_graph(coll: SyncTensorCollection, po: PostOrderData, ir_values: Sequence[Value],
                  donors: dict[int, int], eager: bool) -> CachedComputation:
    """Lower and compile (C++: XLAGraphExecutor::Compile); parameters are wrapped into one
    tuple above XLA_PARAMETER_WRAPPING_THREADSHOLD (sic) of them."""
    text, emitted = lower_graph(po.post_order, ir_values, po.parameters_data, donors)
    metrics.InputOutputAliasCount.add_sample(len(donors))
    threshold = int(os.environ.get("XLA_PARAMETER_WRAPPING_THREADSHOLD", "3200"))
    instance = device_data.compile_instance(text, eager, len(po.parameters_data) >= threshold)
    debug_util.explain_compile(coll)
    computation = client().compile([instance])[0]
    metrics.TensorsGraphSize.add_sample(emitted)
    return CachedComputation(computation, text, instance.is_sharded, [v.aval for v in ir_values])


def execute(cached: CachedComputation, parameters: Sequence[Any], eager: bool) -> list[Any]:
    if cached.is_sharded:  # C++: ExecuteReplicated over the local devices
        spmd = device_data.virtual_device()
        return spmd.execute_replicated(cached.computation, parameters, cached.out_avals)
    outputs = client().execute_computation(cached.computation, list(parameters), device_string(),
                                           ExecuteComputationOptions(True, eager))
    metrics.ExecuteComputation.add_value(1)
    return outputs


# --8<-- [start:sync_tensors_graph]
def sync_tensors_graph(tensors: Sequence[XLATensorData], config: SyncTensorsConfig,
                       warm_up_cache_only: bool = False) -> tuple[SyncTensorCollection, list]:
    """Compute the pending IR of `tensors` (C++: SyncTensorsGraphInternal). Returns the
    collection and the output buffers, one per `coll.indices` entry ([] if nothing ran)."""
    coll = collect_sync_tensors(tensors, config)
    if not coll.indices:
        return coll, []
    ir_values = [tensors[i].ir_value for i in coll.indices]
    po = run_post_order(ir_values)
    coll.merge("parameter sequence", hash_value(po.parameter_sequence))
    donors = get_buffer_donors(tensors, coll, po.parameters_data)
    if donors:  # an empty list is not hashed
        coll.merge("buffer donors", hash_value(sorted(donors)))
    coll.merge("sharding config", mhash(False), string_hash(""))  # auto-SPMD: off, no mesh
    eager = eager_mode_enabled()
    cached = computation_cache.get(coll.hash)
    if cached is None:
        metrics.UncachedCompile.add_value(1)
        cached = compile_graph(coll, po, ir_values, donors, eager)
        computation_cache.add(coll.hash, cached)
    else:
        metrics.CachedCompile.add_value(1)
        metrics.TensorsGraphSize.add_sample(len(po.post_order))
    if warm_up_cache_only:
        return coll, []
    outputs = execute(cached, po.parameters_data, eager)
    if config.force_ltc_data:  # the tensors now are their results
        for i, data in zip(coll.indices, outputs, strict=True):
            tensors[i].set_data_handle(data)
    return coll, outputs
# --8<-- [end:sync_tensors_graph]


def sync_live_tensors_graph(wait: bool = False) -> None:
    """Every live tensor's pending IR, in one graph (C++: SyncLiveTensorsGraph)."""
    tensors = DeviceContextArena.get_live_tensors()
    _, outputs = sync_tensors_graph(tensors, SyncTensorsConfig())
    if wait:
        for data in outputs:
            data.block_until_ready()


def mark_step() -> None:
    """C++: XLAGraphExecutor::MarkStep, counted as MarkStep."""
    metrics.MarkStep.add_value(1)


def get_tensors(tensors: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """The values of `tensors` on the host: a graph of those alone, its results fetched and
    not kept (C++: GetTensors, with force_ltc_data off)."""
    lazy = [get_xla_tensor(t) for t in tensors if is_lazy(t)]
    coll, outputs = sync_tensors_graph(lazy, SyncTensorsConfig(force_ltc_data=False))
    computed = dict(zip(coll.indices, outputs, strict=True))
    handles = [computed.get(i, t.handle) for i, t in enumerate(lazy)]
    arrays = iter(device_data.transfer_from_device([h for h in handles if h is not None]))
    pairs, results = iter(zip(lazy, handles, strict=True)), []
    for t in tensors:
        data, handle = next(pairs) if is_lazy(t) else (None, None)
        if data is None:
            results.append(t)
        elif handle is None:  # host data not uploaded yet
            results.append(data.tensor_data)
        else:
            results.append(from_device(next(arrays), data.dtype))
    return results


# ------------------------------------------------------------------ eager mode


_eager = [os.environ.get("XLA_USE_EAGER_DEBUG_MODE", "0") == "1"]


def eager_mode_enabled() -> bool:
    return _eager[0]


def set_eager_mode(enabled: bool) -> None:
    _eager[0] = bool(enabled)
