"""The process's one client, made on first use from PJRT_DEVICE, and what it says about devices.

torch_xla: torch_xla/csrc/runtime/runtime.cpp (`GetComputationClient`, which initializes once)
and torch_xla/runtime.py (`device_type`, which reads PJRT_DEVICE, and
`_maybe_select_default_device`, which importing torch_xla runs: when PJRT_DEVICE is unset it sets
TPU if libtpu and a chip are found, else NEURON, else CPU, with a warning). Ours, simpler, picks
CPU and says so once. The registry (pjrt_registry.py) turns the device type into a client.
`use_pjrt()` makes jit run on that client (backend.py's backend) and eager ops with it.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

from stages.s02_tracing import config
from stages.s07_caches import api, api_util, dispatch
from stages.s07_caches.xla_bridge import Device

from .computation_client import ComputationClient
from .pjrt_registry import initialize_pjrt

logger = logging.getLogger(__name__)

_client: ComputationClient | None = None
_lock = threading.Lock()
_said_default = False


def device_type() -> str:
    """$PJRT_DEVICE, or "CPU" when it is unset (said once, as torch_xla's warning does)."""
    global _said_default
    value = os.environ.get("PJRT_DEVICE")
    if value:
        return value
    if not _said_default:
        _said_default = True
        logger.warning("Defaulting to PJRT_DEVICE=CPU")
    return "CPU"


def get_computation_client() -> ComputationClient:
    """The client of this process, made from `device_type()` the first time it is asked for."""
    global _client
    if _client is None:
        with _lock:
            if _client is None:
                _client = initialize_pjrt(device_type())
    return _client


def set_computation_client(client: ComputationClient | None) -> ComputationClient | None:
    """Make `client` the process's client (None: made again on next use); return the old one.
    A run of several processes (stage 11) puts its distributed client here."""
    global _client
    with _lock:
        previous, _client = _client, client
    from stages.s07_caches import api, xla_bridge

    from .backend import PjRtBackend  # jit's backend and its executables held the old client
    xla_bridge.register_backend_factory("pjrt", PjRtBackend, priority=-1)
    api.clear_caches()
    return previous


def global_runtime_device_count() -> int:
    return len(get_computation_client().get_all_devices())


def device_object(client: ComputationClient, name: str) -> Device:
    """The device string "CPU:1" as the Device jit's backend lists (id, platform, kind)."""
    return Device(client.device_id(name), name.split(":")[0].lower(),
                  client.get_device_kind(name))


def device_name(client: ComputationClient, device: Device) -> str:
    for name in client.get_local_devices():
        if client.device_id(name) == device.id:
            return name
    raise ValueError(f"{device} is not a device of {client}")


# --8<-- [start:use_pjrt]
class use_pjrt:
    """From here on, jit compiles and runs through PJRT and this thread's eager primitives
    run as tiny jits (stage 7's op-by-op dispatch); used as a context manager, until the
    block ends. Switching backends empties jit's in-memory caches: their first layer's key
    does not name the backend."""

    def __init__(self, eager_ops: bool = True):
        from .fastpath import pjit_fastpath  # it imports the backend, which imports this module

        self._prev = config.platforms.value
        config.platforms.set_global("pjrt")
        self._prev_fastpath = api_util.set_fastpath(pjit_fastpath)  # a hit in one function
        api.clear_caches()
        self._op_by_op = dispatch.op_by_op() if eager_ops else None
        if self._op_by_op is not None:
            self._op_by_op.__enter__()

    def __enter__(self) -> use_pjrt:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        if self._op_by_op is not None:
            self._op_by_op.__exit__(*exc_info)
        config.platforms.set_global(self._prev)
        api_util.set_fastpath(self._prev_fastpath)
        api.clear_caches()
# --8<-- [end:use_pjrt]
