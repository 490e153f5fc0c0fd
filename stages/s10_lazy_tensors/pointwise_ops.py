"""addcmul and addcdiv, `self + value * tensor1 * tensor2` (or `/ tensor2`), as their kernels
compute them.

PyTorch: aten's CPU kernels (PointwiseOpsKernel.cpp) turn `value` into the three tensors'
result type first (`value.to<scalar_t>()`: 2.5 is 2 for an int) and never refuse it. Torch's
decomposition, which computes float16 in float32 as the kernel does, refuses a float `value` for
an integer `self`: ours gives it the number and the `self` the kernel would see, then runs it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch._decomp import decomposition_table

from .aten_xla_type import SPECIAL
from .shape_inference import infer_outputs

aten = torch.ops.aten


def _with_kernels_value(func: Any) -> Callable[..., Any]:
    def decomposed(self: Any, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Any:
        dtype = infer_outputs(func, (self, tensor1, tensor2), {})[0][1]
        if not dtype.is_floating_point:  # a bool result is refused earlier (kernel_checks.py)
            value = int(value)  # C++ truncates toward zero
        return decomposition_table[func](self.to(dtype), tensor1, tensor2, value=value)

    return decomposed


for _op in (aten.addcmul.default, aten.addcdiv.default):
    SPECIAL[_op] = _with_kernels_value(_op)
