"""The lazy tensor: a PyTorch tensor that holds a promise, and the arena of live ones.

torch_xla: torch_xla/csrc/tensor.{h,cpp} (`XLATensor` and its `Data`: a device buffer handle,
or a pending IR value, or host data not yet uploaded), aten_xla_bridge.cpp, and
xla_graph_executor.cpp's `DeviceContextArena` (every live tensor, so that a sync can find
them). Ours is a `__torch_dispatch__` wrapper subclass on torch's own `lazy` device: a tensor
with a shape, strides and a dtype but no storage, below autograd, so PyTorch's autograd and
optimizers run unchanged on top and every aten op they call lands in aten_xla_type.py.
"""

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

DEVICE = torch.device("lazy", 0)  # torch_xla's is torch.device("xla", 0)
_ids = itertools.count(1)
_TO_NUMPY = {torch.bool: np.bool_, torch.int32: np.int32, torch.int64: np.int64,
             torch.uint8: np.uint8, torch.int8: np.int8, torch.float16: np.float16,
             torch.float32: np.float32, torch.float64: np.float64}


def to_numpy_dtype(dtype: torch.dtype) -> np.dtype:
    """The dtype a torch dtype has on the device: 64-bit types are 32-bit there, as in JAX with
    x64 disabled (stage 2's canonical dtypes); torch still sees the tensor's own dtype."""
    return canonicalize_dtype(_TO_NUMPY[dtype])


# --8<-- [start:tensor_data]
class XLATensorData:
    """What a lazy tensor holds (C++: XLATensor::Data): exactly one of a device buffer
    (`handle`), a pending IR value (`ir_value`), or host data waiting to be uploaded."""

    __slots__ = ("handle", "ir_value", "tensor_data", "unique_id", "aval", "dtype")

    def __init__(self, aval: ShapedArray, dtype: torch.dtype, handle: Any = None,
                 ir_value: Value | None = None, tensor_data: torch.Tensor | None = None):
        self.aval, self.dtype = aval, dtype  # the device's aval, and the dtype torch sees
        self.handle, self.ir_value, self.tensor_data = handle, ir_value, tensor_data
        self.unique_id = next(_ids)  # C++: GetNextTensorId(); orders the live tensors
# --8<-- [end:tensor_data]


class LazyTensor(torch.Tensor):
    """A tensor on the lazy device. Its `_xla` is the XLATensorData behind it."""

    _xla: XLATensorData

    @staticmethod
    def __new__(cls, data: XLATensorData, strides: tuple[int, ...] | None = None):
        aval = data.aval
        r = torch.Tensor._make_wrapper_subclass(
            cls, aval.shape, strides=strides, dtype=data.dtype, device=DEVICE)
        r._xla = data
        DeviceContextArena.register(r)
        return r

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        from .aten_xla_type import dispatch  # the op table lives there

        return dispatch(func, args, kwargs or {})

    # ------------------------------------------------------------------ C++ XLATensor's API
    def current_ir_value(self) -> Value | None:
        return self._xla.ir_value

    def current_data_handle(self) -> Any:
        return self._xla.handle

    def get_ir_value(self) -> Value:
        """The tensor as an IR value: its pending IR, or a DeviceData node over its buffer
        (made and kept, C++: CreateTensorNode), uploading host data first."""
        data = self._xla
        if data.ir_value is not None:
            return data.ir_value
        if data.handle is None:  # host data only: upload it now (C++: TensorToXlaData)
            from .device_data import tensor_to_data
            self.set_data_handle(tensor_to_data(data.tensor_data, data.aval))
        handle = data.handle
        handle.tensor_id = data.unique_id  # the buffer's owner, for donation (C++: SetInfo)
        data.ir_value = Value(DeviceData(handle, data.aval))
        return data.ir_value

    def set_ir_value(self, value: Value) -> None:
        """An in-place op or a sync: the tensor now stands for `value` (C++: SetIrValue)."""
        data = self._xla
        data.ir_value, data.handle, data.tensor_data = value, None, None

    def set_data_handle(self, handle: Any) -> None:
        """The tensor now is `handle` (C++: SetXlaData)."""
        data = self._xla
        data.handle, data.ir_value, data.tensor_data = handle, None, None


def make_tensor(value: Value, dtype: torch.dtype, strides: tuple[int, ...] | None = None
                ) -> LazyTensor:
    """A new lazy tensor standing for output `value.index` of a node (C++: XLATensor::Create)."""
    return LazyTensor(XLATensorData(value.aval, dtype, ir_value=value), strides)


def make_tensor_from_data(handle: Any, aval: ShapedArray, dtype: torch.dtype) -> LazyTensor:
    t = LazyTensor(XLATensorData(aval, dtype))
    t.set_data_handle(handle)
    return t


class DeviceContextArena:
    """Every live lazy tensor, by id (C++: DeviceContextArena's `tensors_data` map, a
    weak_ptr per XLATensor). A sync sweeps them all up, in id order."""

    _live: weakref.WeakValueDictionary[int, LazyTensor] = weakref.WeakValueDictionary()

    @classmethod
    def register(cls, tensor: LazyTensor) -> None:
        cls._live[tensor._xla.unique_id] = tensor
        metrics.CreateXlaTensor.add_value(1)

    @classmethod
    def get_live_tensors(cls) -> list[LazyTensor]:
        return [t for _, t in sorted(cls._live.items())]


def is_lazy(x: Any) -> bool:
    return isinstance(x, LazyTensor)
