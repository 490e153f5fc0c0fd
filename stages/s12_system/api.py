"""The few top-level functions the front door adds over earlier stages: devices and transfers.

JAX: jax/_src/xla_bridge.py (devices, device_count, default_backend) and api.py (device_get,
block_until_ready). Devices are the PJRT client's (stage 9), whichever backend jit uses.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from stages.s01_pytrees import tree_map
from stages.s07_caches.xla_bridge import Device
from stages.s09_pjrt import runtime


def devices() -> list[Device]:
    """The PJRT client's devices, e.g. [CpuDevice(id=0)]."""
    client = runtime.get_computation_client()
    return [runtime.device_object(client, name) for name in client.get_all_devices()]


def local_devices() -> list[Device]:
    client = runtime.get_computation_client()
    return [runtime.device_object(client, name) for name in client.get_local_devices()]


def device_count() -> int:
    return runtime.global_runtime_device_count()


def default_backend() -> str:
    """'cpu', 'gpu' or 'tpu': the platform of the client PJRT_DEVICE made."""
    return devices()[0].platform.replace("cuda", "gpu")


def device_get(x: Any) -> Any:
    """Every leaf fetched to a numpy array."""
    return tree_map(np.asarray, x)


def block_until_ready(x: Any) -> Any:
    """Wait for every leaf that is still being computed."""
    def wait(leaf: Any) -> Any:
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()
        return leaf
    return tree_map(wait, x)
