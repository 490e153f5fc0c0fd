"""The torch side of SPMD: a mesh of device ids, and `mark_sharding` on stage 10's lazy tensors.

torch_xla: torch_xla/distributed/spmd/xla_sharding.py (`Mesh`, `mark_sharding`,
`clear_sharding`, `_get_tile_assignment`) and the `_XLAC` calls behind them
(`_xla_mark_sharding`, `_get_xla_sharding_spec`, `_get_xla_tensor_debug_info`). A torch-side
mesh is a list of device ids in a shape, with optional axis names; a partition spec names, per
tensor dimension, the mesh axes (by name or index) that split it. The tile assignment is the one
JAX's NamedSharding gives (stage 11's `_to_xla_hlo_sharding`), written with device ids.
"""

from __future__ import annotations

import collections
import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from stages.s09_pjrt import runtime as s09_runtime
from stages.s10_lazy_tensors import device_data, graph_executor, metrics
from stages.s10_lazy_tensors.ir import DeviceData
from stages.s10_lazy_tensors.tensor import LazyTensor, get_xla_tensor, is_lazy

from . import mesh as mesh_lib
from .partition_spec import PartitionSpec
from .sharding_impls import NamedSharding
from .xla_sharding_util import OpSharding, ShardedData, custom_sharding, get_sharding


class Mesh:
    """Device ids laid out in `mesh_shape`, row-major, with optional axis names (torch_xla:
    xla_sharding.Mesh). Each id is a global device ordinal ("CPU:3" is id 3)."""

    def __init__(self, device_ids: Any, mesh_shape: tuple[int, ...],
                 axis_names: tuple[str, ...] | None = None):
        device_ids = np.asarray(device_ids)
        num_devices = s09_runtime.global_runtime_device_count()
        assert num_devices == len(device_ids), (
            f"Number of device IDs ({len(device_ids)}) must match the global number of "
            f"devices ({num_devices})")
        if axis_names is not None:
            assert len(mesh_shape) == len(axis_names), (
                f"Number of axis names ({len(axis_names)}) must match mesh dimensions "
                f"({len(mesh_shape)})")
            assert len(set(axis_names)) == len(axis_names), \
                f"Axis names must be unique, got: {axis_names}"
        expected = int(np.prod(mesh_shape))
        assert len(device_ids) == expected, \
            f"Number of device IDs ({len(device_ids)}) must match mesh size ({expected})"
        assert len(device_ids) == len(np.unique(device_ids)), \
            f"Device IDs must be unique, got: {device_ids}"
        self.device_ids, self.mesh_shape = device_ids, tuple(mesh_shape)
        self.axis_names = None if axis_names is None else tuple(axis_names)
        assert all(d < self.size() for d in device_ids), \
            f"Device IDs must be less than mesh size ({self.size()}), got: {device_ids}"

    def size(self) -> int:
        return int(np.prod(self.mesh_shape))

    def shape(self) -> collections.OrderedDict:
        names = self.axis_names or range(len(self.mesh_shape))
        return collections.OrderedDict(zip(names, self.mesh_shape, strict=True))

    def get_logical_mesh(self) -> np.ndarray:
        return self.device_ids.reshape(self.mesh_shape)

    def get_axis_name_idx(self, name: str) -> int | None:
        if self.axis_names is None or name not in self.axis_names:
            return None
        return self.axis_names.index(name)

    def get_jax_mesh(self) -> mesh_lib.Mesh:
        """The same mesh as JAX's kind (torch_xla: get_jax_mesh): the devices with these ids,
        the axes named, or "0", "1", ... when the torch-side mesh has no names."""
        by_id = {d.id: d for d in mesh_lib.devices()}
        grid = np.empty(self.size(), dtype=object)
        grid[:] = [by_id[int(i)] for i in self.device_ids]
        names = self.axis_names or tuple(str(i) for i in range(len(self.mesh_shape)))
        return mesh_lib.Mesh(grid.reshape(self.mesh_shape), names)

    # --8<-- [start:get_op_sharding]
    @functools.cache  # noqa: B019  (torch_xla's lru_cache: a mesh lives as long as the program)
    def get_op_sharding(self, partition_spec: tuple) -> OpSharding:
        """The OpSharding of a spec: stage 11's tile assignment (JAX's and torch_xla's agree),
        its mesh positions turned into this mesh's device ids."""
        if len(partition_spec) == 0:  # a scalar can only be replicated
            return OpSharding()
        indices = _translate_named_partition_spec(self, partition_spec)
        self._validate_translated_partition_spec(indices)
        names = self.get_jax_mesh().axis_names
        spec = PartitionSpec(*[None if p is None else tuple(names[i] for i in p)
                               if isinstance(p, tuple) else names[p] for p in indices])
        hlo = NamedSharding(self.get_jax_mesh(), spec)._to_xla_hlo_sharding(len(spec))
        return OpSharding.from_hlo(hlo, self.device_ids)
    # --8<-- [end:get_op_sharding]

    def _validate_translated_partition_spec(self, partition_spec: tuple) -> None:
        flat = [a for p in partition_spec if p is not None
                for a in (p if isinstance(p, tuple) else (p,))]
        assert all(0 <= d < len(self.mesh_shape) for d in flat), \
            f"partition_spec ({partition_spec}) contains out of bound index into mesh_shape."
        assert len(flat) == len(set(flat)), (
            "Each device mesh dimension should appear at most once in partition_spec "
            f"{partition_spec}.")

    def __repr__(self) -> str:
        return (f"{{'device_ids': {self.device_ids.tolist()}, 'mesh_shape': {self.mesh_shape}, "
                f"'axis_names': {self.axis_names}}}")


def _translate_named_partition_spec(mesh: Mesh, partition_spec: Sequence[Any]) -> tuple:
    """Axis names to axis indices, as torch_xla does, with its messages."""
    out: list[Any] = []
    for p in partition_spec:
        if type(p) is tuple:
            assert not any(type(x) is tuple for x in p), \
                "Partition spec cannot contain nested tuples"
            out.append(_translate_named_partition_spec(mesh, p))
        elif p is None or type(p) is int:
            out.append(p)
        elif type(p) is str:
            idx = mesh.get_axis_name_idx(p)
            if idx is None:
                raise ValueError(f"Axis name {p} is not defined in the given mesh")
            out.append(idx)
        else:
            raise ValueError(f"Spec type {type(p)} is not supported in partition spec")
    return tuple(out)


# --8<-- [start:mark_sharding]
def mark_sharding(t: torch.Tensor, mesh: Mesh, partition_spec: Sequence[Any]) -> torch.Tensor:
    """Annotate `t` with where each of its blocks lives (torch_xla: xs.mark_sharding, which
    returns an XLAShardedTensor wrapping `t`; ours returns `t` itself)."""
    assert len(t.shape) == len(partition_spec), (
        f"Partition spec length ({len(partition_spec)}) should be equal to the input rank "
        f"({len(t.shape)}).")
    xla_mark_sharding(t, mesh.get_op_sharding(tuple(partition_spec)))
    return t


def xla_mark_sharding(t: LazyTensor, sharding: OpSharding) -> None:
    """C++: ShardingUtil::XlaMarkSharding. Pending IR gets a sharding node; data (on the
    host or a device) is sent again, one block per device."""
    from .runtime import is_spmd

    if not is_spmd():
        raise RuntimeError("Please enable SPMD via `torch_xla.runtime.use_spmd()`")
    if not is_lazy(t):
        raise TypeError(f"mark_sharding needs a tensor on the lazy device, got {t.device}")
    metrics.counter("XlaMarkSharding").add_value(1)
    data = get_xla_tensor(t)
    if data.ir_value is not None and not isinstance(data.ir_value.node, DeviceData):
        data.set_ir_value(custom_sharding(data.ir_value, sharding))  # C++: custom_sharding_
        return
    if data.tensor_data is not None and data.handle is None and data.ir_value is None:
        host = data.tensor_data.detach().cpu().numpy()
    else:
        current = getattr(current_data(t), "sharding", None)
        if current == sharding:
            return
        if current is not None and current.type != 0:
            raise RuntimeError(f"Existing annotation must be cleared first: {current}")
        host = graph_executor.get_tensors([t])[0].numpy()
    array = np.array(host, dtype=data.aval.dtype, order="C")  # a copy; 0-d stays 0-d
    data.set_data_handle(device_data.virtual_device().create_sharded_data(array, sharding))
# --8<-- [end:mark_sharding]


def current_data(t: LazyTensor) -> Any:
    """The tensor's device data: its handle, or the buffer under its device data node."""
    data = get_xla_tensor(t)
    if data.handle is not None:
        return data.handle
    if data.ir_value is not None and isinstance(data.ir_value.node, DeviceData):
        return data.ir_value.node.data
    return None


def clear_sharding(t: LazyTensor) -> LazyTensor:
    """Forget `t`'s annotation: its value is replicated again (torch_xla: xs.clear_sharding)."""
    value = graph_executor.get_tensors([t])[0]
    data = get_xla_tensor(t)
    array = np.asarray(value.numpy().astype(data.aval.dtype, copy=False), order="C")
    data.set_data_handle(device_data.transfer_to_device(array))
    return t


def get_xla_sharding_spec(t: LazyTensor) -> str:
    """`{devices=[2,2]0,1,2,3}`, or "" for a tensor without one (torch_xla:
    `torch_xla._XLAC._get_xla_sharding_spec`)."""
    value = get_xla_tensor(t).ir_value
    sharding = get_sharding(value.node, value.index) if value is not None else None
    if sharding is None:
        sharding = getattr(current_data(t), "sharding", None)
    return "" if sharding is None else str(sharding)


def get_xla_tensor_debug_info(t: LazyTensor) -> str:
    """What torch_xla's `_get_xla_tensor_debug_info` prints: the tensor's device is the
    virtual one, and its data is sharded over the real ones."""
    data = get_xla_tensor(t)
    handle = current_data(t) if data.handle is not None else None
    lines = ["XLATensor {", f"TensorID: {data.unique_id}", f"Device: {device_data.device_string()}",
             f"XLA Shape: {data.aval.str_short()}",
             f"ShardingSpec: {get_xla_sharding_spec(t) or 'None'}",
             f"IR: {data.ir_value.node if data.ir_value is not None else 'None'}"]
    text = "\n".join(lines) + "\n"
    if isinstance(handle, ShardedData):
        text += handle.to_string()
    elif handle is not None:
        text += handle.to_string() + "\n"
    else:
        text += "XLAData: None\n"
    host = data.tensor_data
    text += f"Tensor on host: {'None' if host is None else f'with size {list(host.shape)}'}\n"
    return text + "}\n"
