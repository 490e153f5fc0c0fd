"""Stage 9: the PJRT client. One seam between the course and a device, and jit running on it.

torch_xla: torch_xla/csrc/runtime/computation_client.h, pjrt_registry.cpp,
pjrt_computation_client.cpp, runtime.cpp, torch_xla/debug/metrics.py. JAX: jax/_src/xla_bridge.py,
array.py. Only pjrt_computation_client.py imports jaxlib. Importing the stage registers a "pjrt"
backend for stage 7's jit without making it the default; `use_pjrt()` does that.

Reading path (the lesson, in order):
  1. computation_client.py      the seam: an abstract class whose methods are all a framework
                                may ask of a device (transfer, compile, execute, devices, metrics)
  2. pjrt_registry.py           PJRT_DEVICE -> client: plugins, CPU, TPU, CUDA, ..., in order
  3. pjrt_computation_client.py the implementation over jaxlib: each method, its PJRT call and
                                the timer it stamps
  4. backend.py                 stage 7's jit on PJRT: lower with stage 8, compile, run, cache
  5. array.py                   device arrays: stage 2's eager Array over a PJRT buffer,
                                asynchronous, deletable, donatable, DLPack

Beside it:
  dlpack.py         from_dlpack: a device array from a torch tensor, a numpy array, ...
  fastpath.py       jit's cache hit in one function, as JAX's C++ serves it; use_pjrt() installs it
  metrics.py        timers and counters, and metrics_report() in torch_xla's format
  runtime.py        the process's one client, PJRT_DEVICE's default, and use_pjrt(): jit on it
"""

from . import (
    array,
    backend,
    computation_client,
    dlpack,
    fastpath,
    metrics,
    pjrt_computation_client,
    pjrt_registry,
    runtime,
)
from .array import ArrayImpl, device_put
from .backend import PjRtBackend
from .computation_client import CompileInstance, Computation, ComputationClient, Data
from .dlpack import from_dlpack
from .metrics import metrics_report
from .pjrt_computation_client import PjRtComputationClient
from .pjrt_registry import initialize_pjrt, register_pjrt_plugin
from .runtime import device_type, get_computation_client, use_pjrt

__all__ = [
    "ArrayImpl",
    "CompileInstance",
    "Computation",
    "ComputationClient",
    "Data",
    "PjRtBackend",
    "PjRtComputationClient",
    "array",
    "backend",
    "computation_client",
    "device_put",
    "device_type",
    "dlpack",
    "fastpath",
    "from_dlpack",
    "get_computation_client",
    "initialize_pjrt",
    "metrics",
    "metrics_report",
    "pjrt_computation_client",
    "pjrt_registry",
    "register_pjrt_plugin",
    "runtime",
    "use_pjrt",
]
