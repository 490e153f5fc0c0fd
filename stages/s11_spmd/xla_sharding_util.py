"""SPMD under stage 10's lazy tensors: sharded device data and the one virtual device "SPMD:0".

torch_xla: torch_xla/csrc/xla_sharding_util.cpp (`ShardTensor`, `CreateShardedData`,
`GetShardReplicaAndIndicesForDevices`, `SetHloSharding`, `XlaMarkSharding`), the
`PjRtShardedData` of runtime/pjrt_computation_client.h, ir.cpp (`UpdateShardingHash`) and
ops/custom_sharding.cpp. With SPMD on, a lazy tensor's buffer is one shard per device behind a
single handle on "SPMD:0"; the graph is lowered once, as for one big device, with each
parameter's sharding written on it (here GSPMD `mhlo.sharding` strings in StableHLO; torch_xla
sets the same OpSharding on its HLO instructions, SetHloSharding), compiled once with
`num_partitions` = the device count, and run by stage 9's `execute_replicated`.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from stages.s02_tracing.core import ShapedArray
from stages.s09_pjrt import runtime
from stages.s09_pjrt.computation_client import CompileInstance, Computation, Data
from stages.s10_lazy_tensors import metrics
from stages.s10_lazy_tensors.hash import hash_block, hash_combine
from stages.s10_lazy_tensors.ir import Node, Value
from stages.s10_lazy_tensors.lowering import DIRECT, LOWERINGS

from . import mlir
from .hlo_sharding import HloSharding

SPMD_DEVICE = "SPMD:0"  # C++: ComputationClient::spmd_device_str
ExecuteReplicated = metrics.counter("ExecuteReplicated")
ReplicateShardedData = metrics.counter("ReplicateShardedData")


class ShardingType(enum.IntEnum):
    """torch_xla's sharding types; the first five are xla::OpSharding's proto types (TILED is
    the proto's OTHER), PARTIAL is OTHER with `replicate_on_last_tile_dim`."""

    REPLICATED = 0
    MAXIMAL = 1
    TUPLE = 2
    TILED = 3
    MANUAL = 4
    PARTIAL = 5
    UNKNOWN = 6


# --8<-- [start:op_sharding]
@dataclasses.dataclass(frozen=True)
class OpSharding:
    """The fields of xla::OpSharding torch_xla fills: a proto type, and for a tiled sharding
    the tile dimensions and the device *ids* in the tile assignment, explicitly listed."""

    type: int = ShardingType.REPLICATED
    tile_assignment_dimensions: tuple[int, ...] = ()
    tile_assignment_devices: tuple[int, ...] = ()
    replicate_on_last_tile_dim: bool = False

    @staticmethod
    def from_hlo(hlo: HloSharding, device_ids: np.ndarray) -> OpSharding:
        """Stage 11's tile assignment speaks of mesh positions; the torch side's of device ids
        (torch_xla compiles every graph for all devices in ordinal order)."""
        if hlo.kind != "tiled" or hlo.is_replicated():
            return OpSharding()
        ids = np.asarray(device_ids).ravel()[hlo.devices()]
        return OpSharding(ShardingType.TILED, tuple(hlo.tile_dims),
                          tuple(int(d) for d in ids.ravel()), hlo.replicate_on_last_tile_dim)

    def __str__(self) -> str:
        """XLA's text with the explicit device list, what `mhlo.sharding` carries."""
        if self.type == ShardingType.REPLICATED:
            return "{replicated}"
        dims = ",".join(map(str, self.tile_assignment_dimensions))
        last = " last_tile_dim_replicate" if self.replicate_on_last_tile_dim else ""
        return f"{{devices=[{dims}]{','.join(map(str, self.tile_assignment_devices))}{last}}}"

    def fold_hash(self, h: int) -> int:
        """This sharding's part of a node's sharding hash (C++: UpdateShardingHash): the tile
        dimensions, the device list as a block of int64s, the type, the replication flag,
        then an empty tile shape's element type (0); the layout is left out."""
        # EXERCISE 11.7 (sharding-hash): fold the fields that say where each block lives
        for d in self.tile_assignment_dimensions:
            h = hash_combine(h, d)
        devices = np.asarray(self.tile_assignment_devices, dtype=np.int64).tobytes()
        h = hash_block(devices, h)
        h = hash_combine(h, int(self.type))
        h = hash_combine(h, int(self.replicate_on_last_tile_dim))
        return hash_combine(h, 0)
        # END EXERCISE
# --8<-- [end:op_sharding]

    def attach(self, node: Node, index: int = 0) -> None:
        """Give output `index` of `node` this sharding (C++: XlaNode::SetSharding)."""
        set_sharding(node, self, index)

    def shard_indices(self, shape: Sequence[int]) -> dict[int, tuple[slice, ...]]:
        """Device id -> the slice of the global array it holds (C++:
        GetShardReplicaAndIndicesForDevices); a shard may be short at the end."""
        if self.type == ShardingType.REPLICATED:
            return {}
        dims = self.tile_assignment_dimensions
        assignment = np.asarray(self.tile_assignment_devices).reshape(dims)
        out = {}
        for coords in np.ndindex(*dims):
            index = []
            for d, size in enumerate(shape):
                block = -(-size // dims[d])
                index.append(slice(coords[d] * block, min((coords[d] + 1) * block, size)))
            out[int(assignment[coords])] = tuple(index)
        return out


def set_sharding(node: Node, sharding: OpSharding | None, index: int = 0) -> None:
    """Attach an output's sharding and recompute the node's sharding hash, which its hash()
    folds in (C++: SetSharding, then UpdateShardingHash: from the node hash, each output's
    index, then that output's sharding if it has one)."""
    if node.output_shardings is None:
        node.output_shardings = [None] * node.num_outputs
    node.output_shardings[index] = sharding
    h = node.node_hash
    for i, s in enumerate(node.output_shardings):
        h = hash_combine(h, i)
        if s is not None:
            h = s.fold_hash(h)
    node.sharding_hash = h


def get_sharding(node: Node, index: int = 0) -> OpSharding | None:
    return None if node.output_shardings is None else node.output_shardings[index]


def shard_tensor(array: np.ndarray, sharding: OpSharding, devices: Sequence[str]
                 ) -> list[np.ndarray]:
    """Each device's block of `array`, in `devices` order, the last ones padded with zeros
    to the block shape (C++: ShardingUtil::ShardTensor)."""
    client = runtime.get_computation_client()
    indices = sharding.shard_indices(array.shape)
    if not indices:
        return [array] * len(devices)
    dims = sharding.tile_assignment_dimensions
    block = [-(-size // dims[d]) for d, size in enumerate(array.shape)]
    out = []
    for device in devices:
        shard = array[indices[client.device_id(device)]]
        pad = [(0, b - s) for b, s in zip(block, shard.shape, strict=True)]
        out.append(np.asarray(np.pad(shard, pad) if any(p for _, p in pad) else shard,
                              order="C"))  # np.ascontiguousarray would make a 0-d block 1-d
    return out


class ShardedData(Data):
    """One global array as one buffer per device, behind a handle on "SPMD:0" (C++:
    PjRtShardedData: `shards`, the global shape, the OpSharding)."""

    def __init__(self, shards: Sequence[Data], aval: ShapedArray, sharding: OpSharding):
        super().__init__(SPMD_DEVICE)
        self.shards, self._aval, self.sharding = list(shards), aval, sharding

    @property
    def aval(self) -> ShapedArray:
        return self._aval

    def to_string(self) -> str:
        return (f"XLAShardedData: \n  Data Device: {self.device}\n  Data Shape: "
                f"{self._aval.str_short()}\n  OpSharding: {self.sharding}\n"
                f"  NumShards: {len(self.shards)}\n")

    def has_value(self) -> bool:
        return bool(self.shards) and all(s.has_value() for s in self.shards)

    def is_ready(self) -> bool:
        return all(s.is_ready() for s in self.shards)

    def block_until_ready(self) -> None:
        for s in self.shards:
            s.block_until_ready()

    def delete(self) -> None:
        for s in self.shards:
            s.delete()

    def dlpack(self, **kwargs: Any) -> Any:
        raise RuntimeError("a sharded tensor has no single buffer to lend through DLPack")

    def dlpack_device(self) -> tuple[Any, int]:
        raise RuntimeError("a sharded tensor has no single buffer to lend through DLPack")


# --8<-- [start:virtual_device]
class VirtualDevice:
    """The virtual device "SPMD:0": what stage 10 asks of a device, answered for every device
    at once (C++: the UseVirtualDevice() branches of tensor_util.cpp, xla_graph_executor.cpp)."""

    device = SPMD_DEVICE

    @property
    def client(self) -> Any:
        return runtime.get_computation_client()

    @property
    def devices(self) -> list[str]:
        return self.client.get_local_devices()

    @property
    def num_partitions(self) -> int:
        return len(self.client.get_all_devices())

    def create_sharded_data(self, array: np.ndarray, sharding: OpSharding) -> ShardedData:
        """One transfer per device, of its block (C++: CreateShardedData)."""
        shards = self.client.transfer_to_device(shard_tensor(array, sharding, self.devices),
                                                self.devices)
        return ShardedData(shards, ShapedArray(array.shape, array.dtype), sharding)

    def transfer_to_device(self, array: np.ndarray) -> ShardedData:
        """Data with no annotation is replicated: every device holds all of it."""
        return self.create_sharded_data(array, OpSharding())

    def transfer_from_device(self, handles: Sequence[Data]) -> list[np.ndarray]:
        return [self.gather(h) for h in handles]

    def gather(self, data: Data) -> np.ndarray:
        """The global value of sharded data: one replica, or each block fetched into place
        (C++ compiles an identity program to replicate it instead: ReplicateShardedData)."""
        if not isinstance(data, ShardedData):
            return self.client.transfer_from_device([data])[0]
        indices = data.sharding.shard_indices(data.aval.shape)
        if not indices:
            return self.client.transfer_from_device(data.shards[:1])[0]
        ReplicateShardedData.add_value(1)
        wanted: dict[tuple, tuple[tuple[slice, ...], Data]] = {}
        for device, shard in zip(self.devices, data.shards, strict=True):
            index = indices[self.client.device_id(device)]
            wanted.setdefault(tuple((s.start, s.stop) for s in index), (index, shard))
        blocks = self.client.transfer_from_device([s for _, s in wanted.values()])
        out = np.empty(data.aval.shape, data.aval.dtype)
        for (index, _), block in zip(wanted.values(), blocks, strict=True):
            out[index] = block[tuple(slice(0, s.stop - s.start) for s in index)]
        return out

    def shards_of(self, data: Data, wanted: OpSharding | None = None) -> list[Data]:
        """A parameter's shards, cut as the program expects. Data made before SPMD was on,
        or laid out otherwise, is cut again (C++: ShardingUtil::ReshardParameters): the
        partitioner may replicate a parameter, e.g. an uneven one the program passes through."""
        wanted = getattr(data, "sharding", OpSharding()) if wanted is None else wanted
        if isinstance(data, ShardedData) and _same_layout(data.sharding, wanted, data.aval):
            return data.shards
        return self.create_sharded_data(self.gather(data), wanted).shards

    def compile_instance(self, computation: Computation, eager: bool, wrap: bool
                         ) -> CompileInstance:
        """Compile for every device as SPMD partitions, the annotations GSPMD's."""
        devices = self.client.get_all_devices()
        # torch_xla's donors are buffer donors (SetBufferDonors: AddBufferDonor): the
        # partitioner picks the results' layouts, so XLA aliases only shards that agree
        program = _ALIAS.sub("jax.buffer_donor = true", computation.program)
        computation = Computation(computation.name, program, computation.devices)
        return CompileInstance(computation, self.device, devices, is_sharded=True,
                               eager_mode=eager, use_shardy_partitioner=False,
                               allow_spmd_sharding_propagation_to_output=True,
                               parameter_is_tupled_arguments=wrap)

    def execute_replicated(self, computation: Any, parameters: Sequence[Data],
                           out_avals: Sequence[ShapedArray]) -> list[ShardedData]:
        """Run on every device with its shards; each result keeps the sharding the
        partitioner gave it, read back from the executable (C++: ExecuteReplicated, then
        the output shardings of PrepareOutputShardingPropagation)."""
        wanted = [None if w is None else OpSharding(ShardingType.TILED, tuple(w[0]),
                                                    tuple(w[1]), w[2])
                  for w in computation.parameter_shardings()]
        if len(wanted) != len(parameters):  # tupled parameters: keep each one's own layout
            wanted = [getattr(p, "sharding", OpSharding()) for p in parameters]
        arguments = []
        for i, (p, w) in enumerate(zip(parameters, wanted, strict=True)):
            arguments.append(_checked(i, self.shards_of(p, w or OpSharding()), p.aval, w))
        outputs = self.client.execute_replicated(computation, arguments, self.devices)
        ExecuteReplicated.add_value(1)
        chosen = computation.output_shardings() or [None] * len(outputs)
        results = []
        for shards, aval, got in zip(outputs, out_avals, chosen, strict=True):
            sharding = OpSharding() if got is None else OpSharding(
                ShardingType.TILED, tuple(got[0]), tuple(got[1]), got[2])
            results.append(ShardedData(shards, aval, sharding))
        return results
# --8<-- [end:virtual_device]


_ALIAS = re.compile(r"tf\.aliasing_output = \d+ : i32")


def _block_shape(sharding: OpSharding | None, shape: Sequence[int]) -> tuple[int, ...]:
    """Each device's (padded) block of an array of `shape`."""
    if sharding is None or sharding.type == ShardingType.REPLICATED:
        return tuple(shape)
    dims = sharding.tile_assignment_dimensions
    return tuple(-(-size // dims[d]) for d, size in enumerate(shape))


def _same_layout(a: OpSharding, b: OpSharding, aval: ShapedArray) -> bool:
    return a == b or a.shard_indices(aval.shape) == b.shard_indices(aval.shape)


def _checked(i: int, shards: list[Data], aval: ShapedArray, wanted: OpSharding | None
             ) -> list[Data]:
    """The runtime is told not to check the shards (it would crash on a mismatch): check
    here that each is the block the program expects."""
    block = ShapedArray(_block_shape(wanted, aval.shape), aval.dtype)
    for shard in shards:
        got = shard.aval
        if (tuple(got.shape), np.dtype(got.dtype)) != (block.shape, np.dtype(block.dtype)):
            raise RuntimeError(f"Parameter {i} of the program is {block.str_short()} on each "
                               f"device, but its shard on {shard.device} is {got.str_short()}")
    return shards


# ------------------------------------------------------------------ a sharded IR value

CUSTOM_SHARDING = "xla::custom_sharding"  # C++: ops/custom_sharding.cpp


def custom_sharding(value: Value, sharding: OpSharding) -> Value:
    """A node that only says "this value has this sharding" (C++: CustomSharding, made by
    mark_sharding on a tensor that holds pending IR rather than data)."""
    node = Node(CUSTOM_SHARDING, [value], [value.aval], (("sharding", str(sharding)),))
    node.func, node.layout = CUSTOM_SHARDING, [("input", -1)]
    set_sharding(node, sharding)
    return Value(node)


def _custom_sharding_lowering(ctx: Any, *, input: Any, sharding: str, out: Any) -> list[Any]:
    return [mlir.custom_call("Sharding", input, input.type, {"mhlo.sharding": f'"{sharding}"'})]


LOWERINGS[CUSTOM_SHARDING] = _custom_sharding_lowering
DIRECT.add(CUSTOM_SHARDING)
