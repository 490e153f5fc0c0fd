"""Compile and run StableHLO text with jaxlib's CPU client: the oracle for stage 8's modules.

Test tooling, not course content: stage 8 writes text and never imports jaxlib (stage 9 builds
the course's own PJRT client). The calls are the ones stage 9's client makes
(pjrt_computation_client.py).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np


@functools.cache
def _client() -> Any:
    from jax._src.lib import xla_client as xc

    return xc.make_cpu_client()


def compile_text(text: str) -> Any:
    """Parse and compile a module's text; jaxlib raises if it does not verify."""
    from jax._src.lib import xla_client as xc

    client = _client()
    devices = xc.DeviceList((client.devices()[0],))
    return client.compile_and_load(text, devices, xc.CompileOptions())


def run_text(text: str, args: Sequence[Any]) -> list[np.ndarray]:
    """Compile `text` and call its @main on numpy `args` (one per parameter, in order)."""
    from jax._src import core as jax_core
    from jax._src.lib import xla_client as xc

    client = _client()
    device = client.devices()[0]
    executable = compile_text(text)
    buffers = []
    for arg in args:
        x = np.asarray(arg)
        aval = jax_core.ShapedArray(x.shape, x.dtype)
        buffers.append(xc.batched_device_put(aval, xc.SingleDeviceSharding(device), [x],
                                             [device], True))
    results = executable.execute_sharded(buffers).disassemble_into_single_device_arrays()
    return [np.asarray(out[0]) for out in results]
