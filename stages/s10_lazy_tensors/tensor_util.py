"""Host tensors as numpy arrays and back, bit for bit: bfloat16 by its bits.

torch_xla: torch_xla/csrc/tensor_util.cpp (`TensorToXlaData` copies a tensor into a literal,
`MakeTensorFromXlaLiteral` copies one back; both move c10::BFloat16 and XLA's bfloat16 as the
same 16 bits). torch has no numpy dtype for bfloat16 (`.numpy()` refuses it) and numpy has none
of its own: stage 2's `dtypes.bfloat16` is ml_dtypes'. Both are a float32's upper 16 bits, so a
tensor viewed as int16 and that array viewed as bfloat16 hold the same numbers, never rounded
through another float type on the way.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from stages.s02_tracing.dtypes import bfloat16


def tensor_to_numpy(t: torch.Tensor) -> np.ndarray:
    """A host tensor's values as a numpy array (sharing memory where `.numpy()` would)."""
    # force=True: a zero gradient may be autograd's ZeroTensor, which has no data of its own
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy(force=True).view(bfloat16)
    return t.numpy(force=True)


def numpy_to_tensor(array: Any) -> torch.Tensor:
    """A host array as a CPU tensor of the same dtype and values (a copy of `array`)."""
    array = np.array(array)  # a copy: torch.from_numpy shares memory, and wants it writable
    if array.dtype == bfloat16:
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)
