"""Host data to device buffers and back; a number in a graph, and the cache that makes it an input.

torch_xla: tensor_util.cpp (`TensorToXlaData`, `MakeTensorFromXlaLiteral`) and PyTorch's
torch/csrc/lazy/core/lazy_graph_executor.cpp (`DataCacheArena`, `GetDeviceData`, counter
DeviceDataCacheMiss, at most FLAGS_torch_lazy_device_data_cache_size numbers, 128), which
xla_graph_executor.cpp's `GetDeviceDataIrValue` calls. Every transfer goes through stage 9's
client, or, once SPMD installs a virtual device (stage 11's `use_spmd()`; C++:
UseVirtualDevice()), through it: then every tensor lives on "SPMD:0" and a buffer is one shard
per device.
"""

from __future__ import annotations

import collections
import functools
from typing import Any

import numpy as np
import torch

from stages.s02_tracing.core import ShapedArray
from stages.s09_pjrt import runtime
from stages.s09_pjrt.computation_client import CompileInstance, Computation
from stages.s09_pjrt.pjrt_registry import env_bool

from . import metrics
from .ir import DeviceData, Scalar, Value
from .lowering import opmath
from .tensor import to_numpy_dtype
from .tensor_util import numpy_to_tensor, tensor_to_numpy


def client() -> Any:
    return runtime.get_computation_client()


_virtual_device: list[Any] = [None]


def virtual_device() -> Any:
    """The installed virtual device, or None (C++: UseVirtualDevice() and GetVirtualDevice()).
    It answers `device`, `transfer_to_device`, `transfer_from_device`, `compile_instance` and
    `execute_replicated` for the whole process."""
    return _virtual_device[0]


def set_virtual_device(device: Any) -> Any:
    """Install `device` (None: back to one real device); returns the one before."""
    previous, _virtual_device[0] = _virtual_device[0], device
    return previous


def device_string(device: torch.device | None = None) -> str:
    """The client's device for a `lazy:N` torch device (C++: bridge::AtenDeviceToXlaDevice);
    under SPMD the virtual device, whatever N is."""
    if _virtual_device[0] is not None:
        return _virtual_device[0].device
    return client().get_local_devices()[(device.index or 0) if device is not None else 0]


def transfer_to_device(array: np.ndarray) -> Any:
    """One host array as device data: a buffer, or under SPMD one replica per device."""
    if _virtual_device[0] is not None:
        return _virtual_device[0].transfer_to_device(array)
    return client().transfer_to_device([array], [device_string()])[0]


def transfer_from_device(handles: list[Any]) -> list[np.ndarray]:
    """Device data back to host arrays (under SPMD: each sharded value put back together)."""
    if _virtual_device[0] is not None:
        return _virtual_device[0].transfer_from_device(handles)
    return client().transfer_from_device(handles)


def compile_instance(text: str, eager: bool, wrap: bool) -> CompileInstance:
    """What to compile, and for where: this device, or under SPMD every device, each running
    one partition of the program (C++: Compile's `is_sharded`, from UseVirtualDevice())."""
    computation = Computation("SyncTensorsGraph", text)
    if _virtual_device[0] is not None:
        return _virtual_device[0].compile_instance(computation, eager, wrap)
    return CompileInstance(computation, device_string(), [device_string()], eager_mode=eager,
                           parameter_is_tupled_arguments=wrap)


# ------------------------------------------------------------------ host data to device data


def tensor_to_data(host: torch.Tensor, aval: ShapedArray) -> Any:
    """Upload a host tensor (C++: TensorToXlaData, through TransferToDevice)."""
    # a copy, in C order: the CPU client may alias a host array (as JAX's device_put does),
    # and torch's .to(device) never shares memory with the host tensor
    array = np.array(tensor_to_numpy(host.detach().cpu()), dtype=aval.dtype, order="C")
    return transfer_to_device(array)


DEVICE_DATA_CACHE_SIZE = 128  # PyTorch's flag torch_lazy_device_data_cache_size
_device_data_cache: collections.OrderedDict[Any, Any] = collections.OrderedDict()


def get_device_data(value: Any, dtype: np.dtype) -> Any:
    """A number as a device buffer, cached by value (C++: LazyGraphExecutor::DataCacheArena, counter
    DeviceDataCacheMiss). It is read only: never donated."""
    key = (type(value), value, np.dtype(dtype), device_string())
    data = _device_data_cache.get(key)
    if data is None or not data.has_value():
        metrics.DeviceDataCacheMiss.add_value(1)
        data = transfer_to_device(np.asarray(wrap_integer(value, dtype), dtype))
        data.read_only = True
        _device_data_cache[key] = data
        if len(_device_data_cache) > DEVICE_DATA_CACHE_SIZE:
            _device_data_cache.popitem(last=False)
    _device_data_cache.move_to_end(key)
    return data


def wrap_integer(value: Any, dtype: np.dtype) -> Any:
    """A Python int outside a narrow integer dtype wraps around, as torch casts it to the
    tensor's dtype (uint8 + 300 adds 44, uint8 < 256 compares with 0; one that fits int32 is
    an int32 the rule casts: scalar_dtype). Not for int32, which may stand for a torch int64
    (64-bit types are 32-bit on the device): that one raises."""
    dtype = np.dtype(dtype)
    if type(value) is not int or dtype.kind not in "iu" or dtype.itemsize >= 4:
        return value
    info = np.iinfo(dtype)
    return (value - int(info.min)) % (1 << info.bits) + int(info.min)


def from_device(array: np.ndarray, dtype: torch.dtype) -> torch.Tensor:
    """A fetched array as a host tensor of the dtype torch sees (int32 back to int64)."""
    return numpy_to_tensor(array).to(dtype)


# ------------------------------------------------------------------ numbers in a graph


def is_special_scalar(value: Any) -> bool:
    """0, 1 and -1 are baked in as constants; any other number, and a bool, is a graph input
    (C++: IsSpecialScalar), so that a new learning rate does not make a new graph.
    XLA_NO_SPECIAL_SCALARS=1 makes every number a graph input (torch_xla reads it once, at
    start-up; ours at each number, so a test can flip it)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if env_bool("XLA_NO_SPECIAL_SCALARS", False):
        return False
    return value == 0 or abs(value) == 1


def scalar_value(value: Any, dtype: np.dtype) -> Value:
    """A number as an IR value (C++: XLAGraphExecutor::GetIrValueForScalar)."""
    aval = ShapedArray((), np.dtype(dtype))
    if is_special_scalar(value):
        return Value(Scalar(value, aval))
    return Value(DeviceData(get_device_data(value, aval.dtype), aval))


def scalar_dtype(value: Any, tensors: list[torch.Tensor]) -> np.dtype:
    """A number's dtype on the device: the math type of torch's result type of it and the op's
    first tensor, so bool + 2 computes in int64, int + 2.5 in float32, and a float16 op reads
    1e6 in float32 as its kernel does (a rule that wants it in float16, as add's does, casts
    it; C++: the promoted type DoBinaryOp gives GetIrValueForScalar)."""
    if not tensors:  # a number alone: torch's dtype for it
        return to_numpy_dtype(torch.tensor(value).dtype)
    dtype = _promoted(tensors[0].dtype, type(value))
    if type(value) is int and wrap_integer(value, dtype) != value and \
            -2**31 <= value < 2**31:  # outside uint8 (uint8 / -3): an int32 the rule casts,
        return np.dtype(np.int32)  # as torch casts to the op's dtype (a float for a division)
    return opmath(dtype)


@functools.cache  # it depends on the dtype and the number's type only
def _promoted(dtype: torch.dtype, number: type) -> np.dtype:
    return to_numpy_dtype(torch.result_type(torch.empty(1, dtype=dtype), number(1)))
