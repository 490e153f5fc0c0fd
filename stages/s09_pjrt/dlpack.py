"""from_dlpack: a device array from any DLPack producer (a torch tensor, a numpy array).

JAX: jax/_src/dlpack.py. Ours reads the producer's values through host memory and transfers
them (array.py's `transfer`); the other direction, `__dlpack__`, is the device array's own.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from stages.s02_tracing import core, dtypes
from stages.s02_tracing.core import ShapedArray

from .array import ArrayImpl, transfer


def from_dlpack(x: Any, device: Any = None, *, copy: bool | None = None) -> ArrayImpl:
    """A device array from anything with `__dlpack__` (a torch tensor, a numpy array).

    The values go through host memory (`np.from_dlpack`, then a transfer): JAX's from_dlpack
    instead wraps the producer's buffer without a copy when it is on the same device, so
    `copy=False` (never copy) is refused here where JAX takes it.
    """
    if not hasattr(x, "__dlpack__") or not hasattr(x, "__dlpack_device__"):
        raise TypeError("The array passed to from_dlpack must have __dlpack__ and "
                        "__dlpack_device__ methods.")
    if copy is False:
        raise ValueError("from_dlpack(copy=False): ours always copies, through host memory")
    if isinstance(x, ArrayImpl):  # ours already: its host values (bfloat16 included)
        return transfer(np.asarray(x), ShapedArray(x.shape, x.dtype), device, committed=True)
    try:
        host = np.from_dlpack(x)
    except RuntimeError:  # numpy reads no bfloat16 (DLPack's kDLBfloat): read the bits, view
        if str(getattr(x, "dtype", "")).rpartition(".")[2] != "bfloat16":
            raise
        host = np.from_dlpack(_as_int16(x)).view(dtypes.bfloat16)
    return transfer(host, core.get_aval(host), device, committed=True)  # committed, as JAX's


def _as_int16(x: Any) -> Any:
    """A bfloat16 tensor's bits as int16, viewed by the producer's own library."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return x.view(torch.int16)
    return x.view(np.int16)  # a JAX array or another numpy-like producer
