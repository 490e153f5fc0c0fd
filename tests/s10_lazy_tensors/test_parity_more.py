"""Pointwise ops on narrow and mixed dtypes, against eager torch: integer divisions that round by
a number outside the dtype, bools turned into floats next to inf and NaN, float16 operands read
in float16, and threshold's gradient for float16 and NaN."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from stages.s10_lazy_tensors import torch_xla
from tests.s10_lazy_tensors.eager_oracle import assert_same

INF, NAN = float("inf"), float("nan")


@pytest.fixture
def dev():
    return torch_xla.device()


def _t(values, dtype, device):
    return torch.tensor(values, device=device).to(dtype)


def _u8(d):
    return _t([0, 5, 200, 255], torch.uint8, d)


def _i8(d):
    return _t([5, -100, 127, -128, 0], torch.int8, d)


def _b(d):
    return torch.tensor([False, True], device=d)


def _f16(d):
    return _t([0.0, 1.0, 0.7, 3.3, -2.5, 65504.0, INF, NAN], torch.float16, d)


ROUNDING_DIVISION = {  # the number cast to the dtype unchecked: uint8's 300 is 44
    "uint8 / 300, floor": lambda d: torch.div(_u8(d), 300, rounding_mode="floor"),
    "int8 / 200, floor": lambda d: torch.div(_i8(d), 200, rounding_mode="floor"),
    "int8 / -129, floor": lambda d: torch.div(_i8(d), -129, rounding_mode="floor"),
    "uint8 div_ 300, floor": lambda d: _u8(d).div_(300, rounding_mode="floor"),
}


@pytest.mark.parametrize("name", list(ROUNDING_DIVISION))
def test_integer_division_that_rounds_casts_the_number_as_eager_torch(name, dev):
    assert_same(ROUNDING_DIVISION[name], dev)


BOOL_TO_FLOAT = {  # False is 0.0, and 0.0 * inf is NaN
    "bool * inf": lambda d: _b(d) * INF,
    "bool * -inf": lambda d: _b(d) * -INF,
    "inf * bool": lambda d: INF * _b(d),
    "bool * nan": lambda d: _b(d) * NAN,
    "bool / 0.0": lambda d: _b(d) / 0.0,
    "bool * 0-d inf": lambda d: _b(d) * torch.tensor(INF, device=d),
    "bool * float tensor": lambda d: _b(d) * torch.tensor([NAN, INF], device=d),
    "bool.float() * inf": lambda d: _b(d).float() * INF,
}


@pytest.mark.parametrize("name", list(BOOL_TO_FLOAT))
def test_a_bool_becomes_a_float_before_it_meets_inf_or_nan(name, dev):
    assert_same(BOOL_TO_FLOAT[name], dev)


FLOAT16_OPERANDS = {  # eager reads each operand in float16 first: 0.1 is 0.0999755859375
    "float16 % 0.1": lambda d: _f16(d) % 0.1,
    "float16 % -0.3": lambda d: _f16(d) % -0.3,
    "float16 % 1e-8 (0 in float16)": lambda d: _f16(d) % 1e-8,
    "fmod(float16, 0.1)": lambda d: torch.fmod(_f16(d), 0.1),
    "fmod(float16, 0-d 0.1)": lambda d: torch.fmod(_f16(d), torch.tensor(0.1, device=d)),
    "float16 % 0-d -0.3": lambda d: _f16(d) % torch.tensor(-0.3, device=d),
    "int16 % 0-d float16": lambda d: _t([32767, 7, -5], torch.int16, d)
    % torch.tensor(1e-3, dtype=torch.float16, device=d),
    "fmod(int32, 0-d float16)": lambda d: torch.fmod(
        _t([2**31 - 1, 7, -5], torch.int32, d), torch.tensor(1e-3, dtype=torch.float16, device=d)
    ),
    "70000 ** float16": lambda d: 70000 ** _f16(d),
    "0.1 ** float16": lambda d: 0.1 ** _f16(d),
    "1e-8 ** float16": lambda d: 1e-8 ** _f16(d),
}


@pytest.mark.parametrize("name", list(FLOAT16_OPERANDS))
def test_float16_operands_are_read_in_float16(name, dev):
    assert_same(FLOAT16_OPERANDS[name], dev)


def _grad_of(fn, values, dtype):
    def f(d):
        x = _t(values, dtype, d).requires_grad_()
        fn(x).backward(torch.ones(len(values), dtype=dtype, device=d))
        return x.grad

    return f


_NEAR = [0.1, 0.3, 0.29998, -0.3, 0.7, NAN, INF, -INF]  # float16's 0.3 is above 0.3
THRESHOLD_BACKWARD = {
    "aten, float16, 0.3": lambda d: torch.ops.aten.threshold_backward(
        _t([1.5, 2.0, -1.0, 0.5, 3.0, 1.0, 1.0, 1.0], torch.float16, d),
        _t(_NEAR, torch.float16, d),
        0.3,
    ),
    "F.threshold, float16": _grad_of(lambda x: F.threshold(x, 0.3, 5.0), _NEAR, torch.float16),
    "relu, float16, NaN": _grad_of(F.relu, _NEAR, torch.float16),
    "relu, float32, NaN": _grad_of(F.relu, _NEAR, torch.float32),
}


@pytest.mark.parametrize("name", list(THRESHOLD_BACKWARD))
def test_threshold_backward_compares_as_eager_torch(name, dev):
    assert_same(THRESHOLD_BACKWARD[name], dev)
