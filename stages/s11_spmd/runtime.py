"""`use_spmd()`: from here on every lazy tensor lives on one virtual device, "SPMD:0".

torch_xla: torch_xla/runtime.py (`use_spmd`, `is_spmd`, `global_runtime_device_count`) and
csrc/device.cpp (`GetVirtualDevice`, `UseVirtualDevice`). The user still writes
`torch.device("ltc")`; underneath, each tensor's data is one shard per device behind one
handle, and each graph is compiled once for all the devices (xla_sharding_util.py).
"""

from __future__ import annotations

from stages.s09_pjrt.runtime import global_runtime_device_count
from stages.s10_lazy_tensors import device_data

from .xla_sharding_util import VirtualDevice


def use_spmd() -> None:
    """Turn SPMD on for the process (torch_xla: xr.use_spmd). Data made before stays where it
    is and is replicated the first time a graph uses it."""
    if not is_spmd():
        device_data.set_virtual_device(VirtualDevice())


def is_spmd() -> bool:
    return isinstance(device_data.virtual_device(), VirtualDevice)


__all__ = ["global_runtime_device_count", "is_spmd", "use_spmd"]
