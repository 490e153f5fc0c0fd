"""Pointwise ops whose CPU kernels convert a number otherwise than their meta kernels and
decompositions: addcmul and addcdiv, `pow` by a bool, `//` and `div(rounding_mode=)` of integers,
fmod, remainder and `number ** tensor` (on the CPU, as a float16 kernel reads its operands).

PyTorch: aten's CPU kernels (PointwiseOpsKernel.cpp) turn `value` into the three tensors'
result type first (`value.to<scalar_t>()`: 2.5 is 2 for an int) and never refuse it. Torch's
decomposition, which computes float16 in float32 as the kernel does, refuses a float `value` for
an integer `self`: ours gives it the number and the `self` the kernel would see, then runs it.
Pow.cpp copies the base for an exponent of True and fills ones for False (a bool stays bool,
where the meta kernel says int64); an integer division that rounds casts a number to the result's
dtype unchecked (uint8 // 300 divides by 44), where torch's reference refuses it (scalar_tensor).
Beside them, two ops that are not pointwise: nll_loss, whose kernel reads a uint8 target that
its meta kernel (a gather) refuses, and index_fill, whose kernel casts a 0-d tensor value to the
tensor's dtype where torch's reference refuses another dtype.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch._decomp import decomposition_table

from .aten_cpu_fallback import cpu_fallback
from .aten_xla_type import SPECIAL, eager_sync, lower_op
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


def _pow_tensor_scalar(self: Any, exponent: Any) -> Any:
    """`self ** exponent`: a copy or ones for a bool exponent; for bfloat16, 3 and -2 as its
    kernel's steps, each rounded to bfloat16 (x * x * x, 1 / (x * x)); else the op's node."""
    if isinstance(exponent, bool):
        return aten.clone.default(self) if exponent else aten.ones_like.default(self)
    if self.dtype == torch.bfloat16 and exponent in (3, -2):
        square = aten.mul.Tensor(self, self)
        return aten.mul.Tensor(square, self) if exponent == 3 else aten.reciprocal(square)
    out = lower_op(aten.pow.Tensor_Scalar, (self, exponent), {})
    return eager_sync(out)


def _div_mode(self: Any, other: Any, *, rounding_mode: str | None = None) -> Any:
    """`div(self, other, rounding_mode=...)`: an integer result on the CPU, whose kernel casts a
    number to the result's dtype unchecked (uint8 // 300 divides by 44) and raises for a zero
    divisor; a float one by torch's decomposition."""
    dtype = torch.result_type(self, other)
    if rounding_mode is not None and not (dtype.is_floating_point or dtype.is_complex):
        return cpu_fallback(aten.div.Tensor_mode, (self, other), {"rounding_mode": rounding_mode})
    return decomposition_table[aten.div.Tensor_mode](self, other, rounding_mode=rounding_mode)


def _floor_divide(self: Any, other: Any) -> Any:
    """`self // other`: a division rounding down."""
    return _div_mode(self, other, rounding_mode="floor")


SPECIAL[aten.pow.Tensor_Scalar] = _pow_tensor_scalar
SPECIAL[aten.floor_divide.default] = _floor_divide
SPECIAL[aten.div.Tensor_mode] = _div_mode


def _on_cpu(func: Any) -> Callable[..., Any]:
    """fmod, remainder and `number ** tensor`: torch's decomposition computes a float16 result
    in float32 from operands not rounded to float16 (x % 0.1 divides by 0.1, not by
    0.0999755859375; 70000 ** x is not inf), and reaches the CPU for the op itself anyway: the
    whole op runs there, as eager torch runs it."""
    return lambda *args, **kwargs: cpu_fallback(func, args, kwargs)


for _op in (aten.fmod.Scalar, aten.fmod.Tensor, aten.remainder.Scalar, aten.remainder.Tensor,
            aten.remainder.Scalar_Tensor, aten.pow.Scalar):
    SPECIAL[_op] = _on_cpu(_op)


def _byte_target(func: Any, at: int) -> Callable[..., Any]:
    """nll_loss (forward: target is argument 1; backward: 2) with a uint8 target as int64."""
    def run(*args: Any, **kwargs: Any) -> Any:
        if args[at].dtype == torch.uint8:
            args = (*args[:at], args[at].long(), *args[at + 1:])
        return eager_sync(lower_op(func, args, kwargs))
    return run


SPECIAL[aten.nll_loss_forward.default] = _byte_target(aten.nll_loss_forward.default, 1)
SPECIAL[aten.nll_loss_backward.default] = _byte_target(aten.nll_loss_backward.default, 2)


def _index_fill_tensor(self: Any, dim: int, index: Any, value: Any) -> Any:
    """index_fill with a 0-d tensor value, cast first to self's dtype (as the kernel fills)."""
    return decomposition_table[aten.index_fill.int_Tensor](self, dim, index, value.to(self.dtype))


SPECIAL[aten.index_fill.int_Tensor] = _index_fill_tensor
