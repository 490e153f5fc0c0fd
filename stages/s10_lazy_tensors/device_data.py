"""Host data to device buffers and back, and the cache that makes a number a graph input.

torch_xla: tensor_util.cpp (`TensorToXlaData`, `MakeTensorFromXlaLiteral`) and
xla_graph_executor.cpp's `DataCacheArena` (`GetDeviceData`, counter DeviceDataCacheMiss, at most
XLA_DEVICE_DATA_CACHE_SIZE numbers). Every transfer goes through stage 9's client.
"""

from __future__ import annotations

import collections
import os
from typing import Any

import numpy as np
import torch

from stages.s02_tracing.core import ShapedArray
from stages.s09_pjrt import runtime

from . import metrics


def client() -> Any:
    return runtime.get_computation_client()


def device_string(device: torch.device | None = None) -> str:
    """The client's device for a `lazy:N` torch device (C++: bridge::AtenDeviceToXlaDevice)."""
    return client().get_local_devices()[(device.index or 0) if device is not None else 0]


# ------------------------------------------------------------------ host data to device data


def tensor_to_data(host: torch.Tensor, aval: ShapedArray) -> Any:
    """Upload a host tensor (C++: TensorToXlaData, through TransferToDevice)."""
    array = np.ascontiguousarray(host.detach().cpu().numpy().astype(aval.dtype, copy=False))
    return client().transfer_to_device([array], [device_string()])[0]


_device_data_cache: collections.OrderedDict[Any, Any] = collections.OrderedDict()


def get_device_data(value: Any, dtype: np.dtype) -> Any:
    """A number as a device buffer, cached by value (C++: DataCacheArena, counter
    DeviceDataCacheMiss). It is read only: never donated."""
    key = (type(value), value, np.dtype(dtype))
    data = _device_data_cache.get(key)
    if data is None or not data.has_value():
        metrics.DeviceDataCacheMiss.add_value(1)
        data = client().transfer_to_device([np.asarray(value, dtype)], [device_string()])[0]
        data.read_only = True
        _device_data_cache[key] = data
        if len(_device_data_cache) > int(os.environ.get("XLA_DEVICE_DATA_CACHE_SIZE", "128")):
            _device_data_cache.popitem(last=False)
    _device_data_cache.move_to_end(key)
    return data


def from_device(array: np.ndarray, dtype: torch.dtype) -> torch.Tensor:
    return torch.from_numpy(np.array(array)).to(dtype)


