"""A global array held as blocks on several devices, and `device_put` with a sharding.

JAX: jax/_src/array.py (`ArrayImpl` with `.sharding` and `.addressable_shards`, `Shard`) and
api.py (`device_put`). Stage 9's ArrayImpl holds one buffer; this one holds one buffer per
device of its sharding, each the block `sharding.devices_indices_map` gives that device, and
reads the global value by putting the blocks back in place. In a run of several processes a
process holds only the blocks of its own devices (`addressable_shards`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from stages.s01_pytrees import tree_flatten, tree_unflatten
from stages.s01_pytrees.tree_util import broadcast_prefix
from stages.s02_tracing import core
from stages.s07_caches.api_util import check_donate_alias
from stages.s07_caches.xla_bridge import Device
from stages.s09_pjrt import array as s09_array
from stages.s09_pjrt import runtime
from stages.s09_pjrt.computation_client import ComputationClient, Data

from .partition_spec import PartitionSpec
from .sharding_impls import Index, Sharding, SingleDeviceSharding
from .sharding_in_types import pjit_check_aval_sharding, pspec_to_sharding, with_sharding_type


def device_names(client: ComputationClient) -> dict[Device, str]:
    """Device -> the client's name for it ("CPU:3"), for every device of every process."""
    return {runtime.device_object(client, n): n for n in client.get_all_devices()}


def addressable(client: ComputationClient, devices: Sequence[Device]) -> list[Device]:
    """The devices of `devices` this process drives, in the same order."""
    local = set(client.get_local_devices())
    names = device_names(client)
    return [d for d in devices if names[d] in local]


@dataclasses.dataclass(frozen=True)
class Shard:
    """One device's block of a global array (JAX: array.Shard)."""

    device: Device
    index: Index
    replica_id: int
    data: s09_array.ArrayImpl | None  # None: a device of another process


class ArrayImpl(s09_array.ArrayImpl):
    """Stage 9's device array, with a sharding and one buffer per addressable device."""

    __slots__ = ("sharding", "_shards")

    def __init__(self, aval: core.ShapedArray, sharding: Sharding, shards: Sequence[Data],
                 client: ComputationClient):
        # shards: one per addressable device of the sharding, in its device order; on a mesh
        # with Explicit axes the layout is part of the type; committed, as JAX's sharded arrays
        super().__init__(with_sharding_type(aval, sharding), shards[0], client, committed=True)
        self.sharding, self._shards = sharding, list(shards)

    def _devices(self) -> list[Device]:
        return addressable(self._client, self.sharding._device_assignment)

    def _all_shards(self) -> list[Shard]:
        """Every device's block, its replica number counted over all devices (JAX:
        device_replica_id_map), and its buffer as an array (None: another process's device)."""
        self._check_if_deleted()
        buffers = dict(zip(self._devices(), self._shards, strict=True))
        block = self.aval.update(shape=self.sharding.shard_shape(self.shape))
        seen: dict[tuple, int] = {}
        out = []
        for device, index in self.sharding.devices_indices_map(self.shape).items():
            key = tuple((s.start, s.stop) for s in index)
            seen[key] = replica = seen.get(key, -1) + 1
            data = buffers.get(device)
            out.append(Shard(device, index, replica, None if data is None else
                             s09_array.ArrayImpl(block, data, self._client, True)))
        return out

    global_shards = property(_all_shards)
    addressable_shards = property(lambda self: [s for s in self._all_shards()
                                                if s.data is not None])

    def addressable_data(self, index: int) -> s09_array.ArrayImpl:
        """The index-th addressable block (a fully replicated array's first, as JAX's)."""
        return self.addressable_shards[0 if self.sharding.is_fully_replicated else index].data

    def is_deleted(self) -> bool:
        return any(not d.has_value() for d in self._shards)

    def delete(self) -> None:
        for d in self._shards:
            d.delete()
        self._npy_value = None

    def block_until_ready(self) -> ArrayImpl:
        for d in self._shards:  # a deleted one: PJRT's error, as in stage 9
            d.block_until_ready()
        return self

    def is_ready(self) -> bool:
        self._check_if_deleted()
        return all(d.is_ready() for d in self._shards)

    @property
    def _value(self) -> np.ndarray:
        """The global value: each distinct block fetched once and put in its place."""
        self._check_if_deleted()
        if self._npy_value is None:
            if self.sharding.is_fully_replicated:  # any one copy is the value
                (out,) = self._client.transfer_from_device(self._shards[:1])
            elif len(self._devices()) != self.sharding.num_devices:
                raise RuntimeError("Fetching value for `jax.Array` that spans non-addressable "
                                   "(non process local) devices is not possible.")
            else:
                index_map = self.sharding.devices_indices_map(self.shape)
                wanted: dict[tuple, tuple[Index, Data]] = {}
                for device, data in zip(self._devices(), self._shards, strict=True):
                    index = index_map[device]
                    wanted.setdefault(tuple((s.start, s.stop) for s in index), (index, data))
                blocks = self._client.transfer_from_device([d for _, d in wanted.values()])
                out = np.empty(self.shape, self.dtype)
                for (index, _), block in zip(wanted.values(), blocks, strict=True):
                    out[index] = block
            out.flags.writeable = False  # as stage 9's: np.asarray(x)[0] = 5 must not change x
            self._npy_value = out
        return self._npy_value

    def data_on(self, device: str) -> Data:
        """One device's buffer of the whole array: a replica if it has one, else gathered."""
        self._check_if_deleted()
        if self.sharding.is_fully_replicated:
            for d in self._shards:
                if d.device == device:
                    return d
        (data,) = self._client.transfer_to_device([self._value], [device])
        return data

    def devices(self) -> set[Device]:
        self._check_if_deleted()
        return set(self.sharding.device_set)

    def shards_for(self, sharding: Sharding) -> list[Data]:
        """The buffers a program expecting `sharding` takes: ours if it is ours, else the
        value laid out again (through the host)."""
        if sharding is self.sharding or sharding == self.sharding or \
                sharding.is_equivalent_to(self.sharding, self.ndim):
            return self._shards
        return put_shards(self._value, sharding, self._client)


core.pytype_aval_mappings[ArrayImpl] = lambda x: x.aval  # jit and grad see its aval


def put_shards(x: np.ndarray, sharding: Sharding, client: ComputationClient) -> list[Data]:
    """One transfer per addressable device, of its block (np.asarray: a 0-d block stays 0-d)."""
    names = device_names(client)
    devices = addressable(client, sharding._device_assignment)
    index_map = sharding.devices_indices_map(x.shape)
    return client.transfer_to_device([np.asarray(x[index_map[d]], order="C") for d in devices],
                                     [names[d] for d in devices])


# --8<-- [start:device_put]
def device_put(x: Any, device: Any = None, *, donate: Any = False, may_alias: Any = None) -> Any:
    """`x` on a device, or laid out by a sharding: one buffer per device, each holding the block
    the sharding gives it (JAX: jax.device_put); a pytree, `device` a prefix of it."""
    check_donate_alias(donate, may_alias)
    leaves, tree = tree_flatten(x)
    targets = broadcast_prefix(device, x, is_leaf=lambda d: d is None or
                               isinstance(d, (Sharding, Device, str, PartitionSpec)))
    targets = [pspec_to_sharding("device_put", d) for d in targets]  # of set_mesh's mesh
    return tree_unflatten(tree, [_put(leaf, d) for leaf, d in zip(leaves, targets,
                                                                   strict=True)])


def _put(x: Any, device: Any) -> Any:
    if not isinstance(device, Sharding) or isinstance(device, SingleDeviceSharding):
        if isinstance(device, SingleDeviceSharding):
            device = next(iter(device.device_set))
        return s09_array.device_put(np.asarray(x) if isinstance(x, ArrayImpl) else x, device)
    sharding, client = device, runtime.get_computation_client()
    if isinstance(x, ArrayImpl) and x.sharding == sharding:
        return x
    aval = core.get_aval(x)
    value = np.asarray(x, dtype=aval.dtype)
    pjit_check_aval_sharding([sharding], [aval], [""], "device_put args", False)
    return ArrayImpl(aval, sharding, put_shards(value, sharding, client), client)
# --8<-- [end:device_put]
