"""The lazy tensor: a PyTorch tensor that holds a promise, and the arena of live ones.

torch_xla: torch_xla/csrc/tensor.{h,cpp} (`XLATensor` and its `Data`: a device buffer, or a
pending IR value, or host data not yet uploaded), tensor_impl.cpp (`XLATensorImpl`),
aten_xla_bridge.cpp (`GetXlaTensor`) and xla_graph_executor.cpp's `DeviceContextArena` (every
live tensor, for a sync to find). A tensor on our device (PyTorch's PrivateUse1, named `ltc`:
register_xla.py) is a plain torch.Tensor with an empty storage, and its XLATensorData hangs on
that storage: every alias PyTorch makes in C++ (`detach`, `.data`, a tensor saved for backward,
an `nn.Parameter`) shares it, as XLATensorImpl's shallow copies share one XLATensorPtr."""

from __future__ import annotations

import itertools
import weakref
from typing import Any

import numpy as np
import torch

from stages.s02_tracing.core import ShapedArray
from stages.s02_tracing.dtypes import canonicalize_dtype

from . import metrics
from .ir import DeviceData, Value
from .register_xla import DEVICE_TYPE  # made a device on import

DEVICE = torch.device(DEVICE_TYPE, 0)
LazyTensor = torch.Tensor  # a tensor whose device is DEVICE_TYPE (C++: an XLATensorImpl)
_ids = itertools.count(1)
_TO_NUMPY = {getattr(torch, name): np.dtype(name) for name in (  # the dtypes the device holds
    "bool uint8 int8 int16 int32 int64 float16 bfloat16 float32 float64".split())}


def to_numpy_dtype(dtype: torch.dtype) -> np.dtype:
    """The dtype a torch dtype has on the device: 64-bit types are 32-bit, as in JAX, x64 off."""
    if dtype not in _TO_NUMPY:  # complex, float8, uint16 (bfloat16: ml_dtypes')
        raise TypeError(f"{dtype} is not supported on the lazy device, only {[*_TO_NUMPY]}")
    return canonicalize_dtype(_TO_NUMPY[dtype])  # stage 2's; torch still sees its own dtype


# --8<-- [start:tensor_data]
class XLATensorData:
    """What a lazy tensor holds (C++: XLATensor and its Data): a device buffer (`handle`), a
    pending IR value (`ir_value`), or both once an op has read the buffer (its device_data
    node, kept). torch_xla's third state, host data not uploaded yet (`tensor_data`), stays
    empty here: ours uploads at once."""

    __slots__ = ("handle", "ir_value", "tensor_data", "unique_id", "aval", "dtype", "version",
                 "view_of", "__weakref__")

    def __init__(self, aval: ShapedArray, dtype: torch.dtype, handle: Any = None,
                 ir_value: Value | None = None, tensor_data: torch.Tensor | None = None):
        self.aval, self.dtype = aval, dtype  # the device's aval, and the dtype torch sees
        self.handle, self.ir_value, self.tensor_data = handle, ir_value, tensor_data
        self.unique_id = next(_ids)  # C++: GetNextTensorId(); orders the live tensors
        self.version = 0  # in-place writes so far
        self.view_of: tuple[weakref.ref, int] | None = None  # a view: (its base, base version)

    def get_ir_value(self) -> Value:
        """The tensor as an IR value: its pending IR, or a DeviceData node over its buffer
        (made and kept, C++: CreateTensorNode), uploading host data first."""
        if self.ir_value is not None:
            return self.ir_value
        if self.handle is None:  # host data only: upload it now (C++: TensorToXlaData)
            from .device_data import tensor_to_data
            self.set_data_handle(tensor_to_data(self.tensor_data, self.aval))
        self.handle.tensor_id = self.unique_id  # the buffer's owner, for donation (SetInfo)
        self.ir_value = Value(DeviceData(self.handle, self.aval))
        return self.ir_value

    def set_ir_value(self, value: Value) -> None:
        """An in-place op or a sync: the tensor now stands for `value` (C++: SetIrValue)."""
        self.ir_value, self.handle, self.tensor_data = value, None, None

    def set_data_handle(self, handle: Any) -> None:
        """The tensor now is `handle` (C++: SetXlaData)."""
        self.handle, self.ir_value, self.tensor_data = handle, None, None
# --8<-- [end:tensor_data]


def get_xla_tensor(t: torch.Tensor) -> XLATensorData:
    """The XLATensorData behind a lazy tensor (C++: bridge::GetXlaTensor)."""
    data = getattr(t.untyped_storage(), "_xla", None)
    if data is None:
        raise RuntimeError(f"not a tensor on the {DEVICE_TYPE} device: one on {t.device}")
    if data.view_of is not None:  # a view holds its own IR value: it misses later writes
        base, version = data.view_of[0](), data.view_of[1]
        if base is not None and base.version != version:
            raise NotImplementedError(f"a view {tuple(t.shape)} of a lazy tensor written in "
                                      f"place after the view was taken: it would not see the "
                                      f"write (no functionalization)")
    return data


def is_lazy(x: Any) -> bool:
    return isinstance(x, torch.Tensor) and x.device.type == DEVICE_TYPE


def _new_tensor(data: XLATensorData) -> torch.Tensor:
    """A torch.Tensor on the lazy device carrying `data` (C++: AtenFromXlaTensor)."""
    t = torch._C._acc.create_empty_tensor(data.aval.shape, data.dtype)
    t.untyped_storage()._xla = data
    DeviceContextArena.register(data)
    return t


def make_tensor(value: Value, dtype: torch.dtype) -> torch.Tensor:
    """A new lazy tensor standing for output `value.index` of a node (C++: XLATensor::Create)."""
    return _new_tensor(XLATensorData(value.aval, dtype, ir_value=value))


def make_tensor_from_data(handle: Any, aval: ShapedArray, dtype: torch.dtype) -> torch.Tensor:
    return _new_tensor(XLATensorData(aval, dtype, handle=handle))


class DeviceContextArena:
    """Every live lazy tensor, by id (C++: DeviceContextArena's `tensors_data` map, a
    weak_ptr per XLATensor). A sync sweeps them all up, in id order."""

    _live: weakref.WeakSet[XLATensorData] = weakref.WeakSet()

    @classmethod
    def register(cls, data: XLATensorData) -> None:
        cls._live.add(data)
        metrics.CreateXlaTensor.add_value(1)

    @classmethod
    def get_live_tensors(cls) -> list[XLATensorData]:
        return sorted(cls._live, key=lambda t: t.unique_id)
