"""A number that an op writes into a tensor must fit the tensor's dtype, or torch raises.

PyTorch: c10/util/TypeCast.h (`checked_convert`) and c10/util/overflows.h (`overflows`),
reached from each kernel that turns a Scalar into the tensor's element type: fill, masked_fill,
index_fill, scatter's value, full_like, pad, threshold, addcmul's and addcdiv's value,
clamp, hardtanh and scalar_tensor; add's and sub's alpha and a float16 pow's exponent are
checked the same way (kernel_checks.py). Arithmetic does not check its operands: `uint8 + 300`
wraps (device_data.py). Meta kernels do not check either, so the lazy device runs them first
(lowering.py's CHECKS, which aten_xla_type.dispatch runs).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from .shape_inference import infer_outputs

aten = torch.ops.aten
CPP_NAMES = {torch.uint8: "uint8_t", torch.int8: "int8_t", torch.int16: "int16_t",
             torch.int32: "int", torch.int64: "int64_t", torch.float16: "c10::Half",
             torch.bfloat16: "c10::BFloat16", torch.float32: "float", torch.float64: "double"}


def check_fits(value: Any, dtype: torch.dtype) -> None:
    """Raise as torch raises where `value` does not fit `dtype`: uint8 with 300 or -1.0, float16
    with 1e6. An int down to -255 fits uint8 (it wraps, as C++ lets `a - b` be `a + 255 * b`);
    inf and NaN fit a float only; anything fits a bool."""
    if isinstance(value, torch.Tensor):  # masked_fill's 0-d value: torch reads its item
        value = value.item() if value.is_cpu else False  # a lazy one would cut the graph
    if dtype not in CPP_NAMES or isinstance(value, bool):
        return
    fits = not (isinstance(value, complex) and value.imag)
    value = value.real if isinstance(value, complex) else value
    if dtype.is_floating_point:
        fits = fits and not (math.isfinite(value) and abs(value) > torch.finfo(dtype).max)
    elif isinstance(value, float):  # compared in double, as C++ compares
        info = torch.iinfo(dtype)
        fits = fits and float(info.min) <= value <= float(info.max)
    else:
        info = torch.iinfo(dtype)
        fits = fits and (-info.max if info.min == 0 else info.min) <= value <= info.max
    if not fits:
        raise RuntimeError(f"value cannot be converted to type {CPP_NAMES[dtype]} without "
                           f"overflow")


def _check_fits(*at: int, promote: bool = False) -> Callable[..., None]:
    """The numbers at these argument positions must fit the output's dtype: self's, or for
    clamp the result type of self and the numbers (uint8 clamped to 2.5 is float32)."""
    def check(self: Any, *args: Any, **kwargs: Any) -> None:
        numbers = [args[i - 1] for i in at if i <= len(args) and args[i - 1] is not None]
        dtype = kwargs.get("dtype") or self.dtype
        for number in numbers if promote else ():
            dtype = torch.result_type(torch.empty(0, dtype=dtype), number)
        for number in numbers:
            check_fits(number, dtype)
    return check


def _check_scalar_tensor(s: Any, dtype: Any = None, **_: Any) -> None:
    """A wrapped number (`where(c, x, 300)` makes one): torch checks it, but not for float16,
    where 1e6 becomes inf."""
    if dtype != torch.float16:
        check_fits(s, dtype or torch.get_default_dtype())


def _math_dtype(dtype: torch.dtype) -> torch.dtype:
    """The type a kernel computes in: float32 for float16 and bfloat16 (at::opmath_type)."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def _check_threshold(self: Any, threshold: Any, value: Any) -> None:
    """threshold compares in the op's math type, writes self's dtype."""
    check_fits(threshold, _math_dtype(self.dtype))
    check_fits(value, self.dtype)


def _check_addcmul(self: Any, tensor1: Any, tensor2: Any, value: Any = 1) -> None:
    """self + value * t1 * t2 (or / t2): value in the math type of the three tensors' result
    type (a uint8 self and float tensors take 300; float16 with 1e6 gives inf)."""
    dtype = infer_outputs(aten.addcmul.default, (self, tensor1, tensor2), {})[0][1]
    check_fits(value, _math_dtype(dtype))


def _check_hardtanh(self: Any, min_val: Any = -1, max_val: Any = 1) -> None:
    """hardtanh is a clamp whose limits an integer tensor takes as int64 (2.5 is 2, 1e30
    overflows), and which refuses negative ones for uint8."""
    if self.dtype.is_floating_point or self.dtype == torch.bool:  # a bool: its decomposition
        FITS[aten.clamp.default](self, min_val, max_val)  # refuses it as torch does
        return
    for limit in (min_val, max_val):
        check_fits(limit, torch.int64)
    min_val, max_val = int(min_val), int(max_val)
    if self.dtype == torch.uint8 and (min_val < 0 or max_val < 0):
        raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")
    FITS[aten.clamp.default](self, min_val, max_val)


# each op, by its functional form (fill_ reaches fill), and where its numbers are
FITS = {aten.fill.Scalar: _check_fits(1), aten.full_like.default: _check_fits(1),
        aten.masked_fill.Scalar: _check_fits(2), aten.masked_fill.Tensor: _check_fits(2),
        aten.index_fill.int_Scalar: _check_fits(3), aten.index_fill.int_Tensor: _check_fits(3),
        aten.scatter.value: _check_fits(3), aten.constant_pad_nd.default: _check_fits(2),
        aten.threshold.default: _check_threshold, aten.addcmul.default: _check_addcmul,
        aten.addcdiv.default: _check_addcmul, aten.hardtanh.default: _check_hardtanh,
        aten.clamp.default: _check_fits(1, 2, promote=True),
        aten.clamp_min.default: _check_fits(1, promote=True),
        aten.clamp_max.default: _check_fits(1, promote=True),
        aten.scalar_tensor.default: _check_scalar_tensor}
