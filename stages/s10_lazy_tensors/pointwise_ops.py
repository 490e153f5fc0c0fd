"""Pointwise ops whose CPU kernels convert a number otherwise than their meta kernels and
decompositions: addcmul and addcdiv, `pow` by a bool, `//` by an integer.

PyTorch: aten's CPU kernels (PointwiseOpsKernel.cpp) turn `value` into the three tensors'
result type first (`value.to<scalar_t>()`: 2.5 is 2 for an int) and never refuse it. Torch's
decomposition, which computes float16 in float32 as the kernel does, refuses a float `value` for
an integer `self`: ours gives it the number and the `self` the kernel would see, then runs it.
Pow.cpp copies the base for an exponent of True and fills ones for False (a bool stays bool,
where the meta kernel says int64); floor_divide casts a number to an integer result's dtype
unchecked (uint8 // 300 divides by 44), where torch's reference refuses it (scalar_tensor).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch._decomp import decomposition_table

from .aten_xla_type import SPECIAL, eager_sync, lower_op
from .device_data import wrap_integer
from .graph_executor import eager_mode_enabled
from .shape_inference import infer_outputs
from .tensor import to_numpy_dtype

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


def _pow_tensor_scalar(self: Any, exponent: Any) -> Any:
    """`self ** exponent`: a copy or ones for a bool exponent, else the op's node."""
    if isinstance(exponent, bool):
        return aten.clone.default(self) if exponent else aten.ones_like.default(self)
    out = lower_op(aten.pow.Tensor_Scalar, (self, exponent), {})
    return eager_sync(out) if eager_mode_enabled() else out


def _floor_divide(self: Any, other: Any) -> Any:
    """`self // other` as a division rounding down, an integer number wrapped into an integer
    result's dtype first (int32 and wider: the number as it is)."""
    dtype = torch.result_type(self, other)
    if type(other) is int and not (dtype.is_floating_point or dtype.is_complex):
        other = wrap_integer(other, to_numpy_dtype(dtype))
    return aten.div.Tensor_mode(self, other, rounding_mode="floor")


SPECIAL[aten.pow.Tensor_Scalar] = _pow_tensor_scalar
SPECIAL[aten.floor_divide.default] = _floor_divide
