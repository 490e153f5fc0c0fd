"""Ops whose eager CPU kernels convert a number, refuse a dtype or compute in a wider type than
their meta kernels and decompositions say: the lazy device must give eager torch's value, dtype
and shape, or raise eager torch's error with its message."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from stages.s10_lazy_tensors import torch_xla
from tests.s10_lazy_tensors.eager_oracle import assert_same, outcome


@pytest.fixture
def dev():
    return torch_xla.device()


def _t(values, dtype, device):
    return torch.tensor(values, device=device).to(dtype)


ADDCMUL = {  # f(device): addcmul and addcdiv, whose value the kernel converts first
    "uint8, value 2.5": lambda d: torch.addcmul(
        _t([1, 2], torch.uint8, d),
        _t([1, 3], torch.uint8, d),
        _t([1, 1], torch.uint8, d),
        value=2.5,
    ),
    "int64, value 0.5": lambda d: torch.addcmul(
        _t([1, -2], torch.int64, d),
        _t([4, 3], torch.int64, d),
        _t([1, 2], torch.int64, d),
        value=0.5,
    ),
    "int32, value -1.5": lambda d: torch.addcmul(
        _t([1, -2], torch.int32, d),
        _t([4, 3], torch.int32, d),
        _t([1, 2], torch.int32, d),
        value=-1.5,
    ),
    "uint8, value -1": lambda d: torch.addcmul(
        _t([1, 2], torch.uint8, d), _t([1, 3], torch.uint8, d), _t([1, 1], torch.uint8, d), value=-1
    ),
    "in place, uint8, value 2.5": lambda d: _t([1, 2], torch.uint8, d).addcmul_(
        _t([1, 3], torch.uint8, d), _t([2, 1], torch.uint8, d), value=2.5
    ),
    "uint8 self, float tensors, value 300": lambda d: torch.addcmul(
        _t([1, 2], torch.uint8, d),
        _t([1.5, 1], torch.float32, d),
        _t([1, 2], torch.float32, d),
        value=300,
    ),
    "0-d int64 self, uint8 tensors": lambda d: torch.addcmul(
        _t(5, torch.int64, d), _t([1, 3], torch.uint8, d), _t([1, 1], torch.uint8, d), value=2.5
    ),
    "float16 in float32": lambda d: torch.addcmul(
        _t([0.0, 1.0], torch.float16, d),
        _t([1e-3, 1e-3], torch.float16, d),
        _t([1e-3, 3e-3], torch.float16, d),
        value=1e6,
    ),
    "bool": lambda d: torch.addcmul(
        _t([True, False], torch.bool, d),
        _t([True, True], torch.bool, d),
        _t([True, False], torch.bool, d),
        value=True,
    ),
    "bool, value 2.5": lambda d: torch.addcmul(
        _t([True], torch.bool, d), _t([True], torch.bool, d), _t([True], torch.bool, d), value=2.5
    ),
    "uint8, value -0.5": lambda d: torch.addcmul(
        _t([1], torch.uint8, d), _t([1], torch.uint8, d), _t([1], torch.uint8, d), value=-0.5
    ),
    "uint8 self, float tensors, value 1e39": lambda d: torch.addcmul(
        _t([1], torch.uint8, d),
        _t([1.0], torch.float32, d),
        _t([1.0], torch.float32, d),
        value=1e39,
    ),
    "addcdiv of ints": lambda d: torch.addcdiv(
        _t([1, 2], torch.int64, d), _t([4, 3], torch.int64, d), _t([2, 2], torch.int64, d)
    ),
    "addcdiv of bools": lambda d: torch.addcdiv(
        _t([1.0], torch.float32, d), _t([True], torch.bool, d), _t([True], torch.bool, d), value=2
    ),
    "addcdiv, int self, float tensors": lambda d: torch.addcdiv(
        _t([1, 2], torch.int64, d),
        _t([1.0, 3.0], torch.float32, d),
        _t([2.0, 4.0], torch.float32, d),
        value=2.5,
    ),
    "addcdiv, float16 in float32": lambda d: torch.addcdiv(
        _t([0.0, 1.0], torch.float16, d),
        _t([1e-3, 2e-3], torch.float16, d),
        _t([1e3, 1e3], torch.float16, d),
        value=1e6,
    ),
}


@pytest.mark.parametrize("name", list(ADDCMUL))
def test_addcmul_and_addcdiv_convert_their_value_as_the_kernel_does(dev, name):
    """An integer self takes a float value truncated (uint8 1 + 2.5 * 1 * 1 is 3); float16
    computes in float32; bools and integer divisions are refused with torch's messages."""
    assert_same(ADDCMUL[name], dev)


def test_addcmul_of_uint8_with_a_float_value_gives_eagers_numbers(dev):
    x, one = _t([1, 2], torch.uint8, dev), _t([1, 1], torch.uint8, dev)
    got = torch.addcmul(x, one, one, value=2.5).cpu()
    assert got.dtype == torch.uint8 and got.tolist() == [3, 4]


HARDTANH = {  # f(device)
    "uint8, negative limits": lambda d: F.hardtanh(_t([0, 1, 3], torch.uint8, d), -1, 1),
    "uint8, negative float limit": lambda d: F.hardtanh(_t([0, 3], torch.uint8, d), -1.0, 2),
    "in place, uint8, negative limits": lambda d: F.hardtanh(
        _t([0, 3], torch.uint8, d), -1, 1, inplace=True
    ),
    "uint8, -0.5 is 0": lambda d: F.hardtanh(_t([0, 3], torch.uint8, d), -0.5, 2),
    "int64, float limits truncated": lambda d: F.hardtanh(
        _t([-3, 0, 3], torch.int64, d), -1.5, 2.5
    ),
    "int64, a limit beyond int64": lambda d: F.hardtanh(_t([1], torch.int64, d), 1e30, 2e30),
    "int64, a NaN limit": lambda d: F.hardtanh(_t([1], torch.int64, d), float("nan"), 2),
    "uint8, a limit beyond uint8": lambda d: F.hardtanh(_t([1], torch.uint8, d), 0, 300),
    "float16, a limit beyond float16": lambda d: F.hardtanh(
        _t([0.0, 1.0], torch.float16, d), 0, 1e6
    ),
    "bool": lambda d: F.hardtanh(_t([True], torch.bool, d), 0, 1),
}


@pytest.mark.parametrize("name", list(HARDTANH))
def test_hardtanh_checks_its_limits_as_eager_torch(dev, name):
    assert_same(HARDTANH[name], dev)


def test_hardtanh_of_uint8_with_negative_limits_says_what_torch_says(dev):
    with pytest.raises(
        RuntimeError, match="^cannot do hardtanh on an unsigned type with negative limits$"
    ):
        F.hardtanh(_t([0, 1], torch.uint8, dev), -1, 1)


REFUSED = {  # f(device): ops whose CPU kernel has no code for a dtype its meta kernel takes
    "threshold of bool": lambda d: F.threshold(_t([True, False], torch.bool, d), 0, 1),
    "threshold_ of bool": lambda d: F.threshold(_t([True], torch.bool, d), 0.5, 2, inplace=True),
    "relu of bool": lambda d: torch.relu(_t([True, False], torch.bool, d)),
    "relu_ of bool": lambda d: _t([True, False], torch.bool, d).relu_(),
    "pow of bools": lambda d: _t([True, False], torch.bool, d) ** _t([True, True], torch.bool, d),
    "a bool to a bool power": lambda d: True ** _t([True, False], torch.bool, d),
    "trunc division of bools": lambda d: torch.div(
        _t([True], torch.bool, d), _t([True], torch.bool, d), rounding_mode="trunc"
    ),
    "floor division of bools": lambda d: _t([True], torch.bool, d) // _t([True], torch.bool, d),
    "clamp of bool": lambda d: _t([True, False], torch.bool, d).clamp(max=True),
    "clamp_min of bool": lambda d: torch.clamp_min(_t([True, False], torch.bool, d), True),
    "abs of bool": lambda d: torch.abs(_t([True], torch.bool, d)),
    "frac of int64": lambda d: torch.frac(_t([1, 2], torch.int64, d)),
    "silu of int32": lambda d: F.silu(_t([1, -2], torch.int32, d)),
    "softplus of uint8": lambda d: F.softplus(_t([1, 2], torch.uint8, d)),
    "leaky_relu of int64": lambda d: F.leaky_relu(_t([1, -2], torch.int64, d)),
    "elu of int64": lambda d: F.elu(_t([1, -2], torch.int64, d)),
    "gelu of int64": lambda d: F.gelu(_t([1, -2], torch.int64, d)),
    "softmax of int64": lambda d: torch.softmax(_t([1, 2], torch.int64, d), 0),
    "lerp of int64": lambda d: torch.lerp(
        _t([1, 2], torch.int64, d), _t([3, 4], torch.int64, d), 0.5
    ),
    "lerp of float32 and float16": lambda d: torch.lerp(
        _t([1.0], torch.float32, d), _t([3.0], torch.float16, d), 0.5
    ),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_a_dtype_the_cpu_kernel_refuses_is_refused_with_its_message(dev, name):
    want = outcome(REFUSED[name], "cpu")
    assert isinstance(want, tuple), want  # eager torch refuses each of these
    assert outcome(REFUSED[name], dev) == want


def test_threshold_of_bool_raises_torchs_not_implemented_error(dev):
    with pytest.raises(NotImplementedError, match="^\"threshold_cpu\" not implemented for 'Bool'$"):
        F.threshold(_t([True, False], torch.bool, dev), 0, 1)


COMPARED = {  # f(device): a 0-d tensor and a Python number, which only a higher category wins
    "uint8 0-d < -3": lambda d: _t(2, torch.uint8, d) < -3,
    "uint8 0-d >= -1": lambda d: _t(2, torch.uint8, d) >= -1,
    "uint8 0-d == 258": lambda d: _t(2, torch.uint8, d) == 258,
    "uint8 0-d clamp max -3": lambda d: _t(2, torch.uint8, d).clamp(max=-3),
    "uint8 0-d clamp min -3": lambda d: _t(2, torch.uint8, d).clamp(min=-3),
    "int8 0-d > 200": lambda d: _t(-3, torch.int8, d) > 200,
    "float16 0-d == 0.1": lambda d: _t(0.1, torch.float16, d) == 0.1,
    "float16 0-d < 70000": lambda d: _t(1.0, torch.float16, d) < 70000,
    "uint8 0-d < 2.5": lambda d: _t(2, torch.uint8, d) < 2.5,
    "bool 0-d < 2": lambda d: _t(True, torch.bool, d) < 2,
}


@pytest.mark.parametrize("name", list(COMPARED))
def test_a_0d_tensor_compared_with_a_number_compares_in_torchs_result_type(dev, name):
    """torch types a Python number below a 0-d tensor of its category: 0-d uint8 2 < -3 is
    2 < 253 (True), as for a tensor with dimensions."""
    assert_same(COMPARED[name], dev)


FLOAT16 = {  # f(device): a float16 tensor and a 0-d tensor, computed in float32, rounded once
    "* a 0-d float32 tensor": lambda d: _t([0.0, 2.0], torch.float16, d) * torch.tensor(1e6),
    "* a lazy 0-d float32 tensor": lambda d: (
        _t([0.0, 2.0], torch.float16, d) * torch.tensor(1e6, device=d)
    ),
    "/ a 0-d float32 tensor": lambda d: (
        _t([-65504.0, 1000.0], torch.float16, d) / torch.tensor(1e6, device=d)
    ),
    "* a 0-d int64 tensor": lambda d: _t([0.0, 2.0], torch.float16, d) * torch.tensor(100000),
    "+ a 0-d float32 tensor": lambda d: (
        _t([-65504.0, 0.0], torch.float16, d) + torch.tensor(1e5, device=d)
    ),
    "- 1e5 + 1e5": lambda d: _t([1.0, 2.0], torch.float16, d) - 100000 + 100000,  # NaN
    "+ 1e5": lambda d: _t([-65504.0, 0.0], torch.float16, d) + 1e5,
    "+ 1e-4": lambda d: _t([1.0, 2.0, 0.5], torch.float16, d) + 1e-4,
    "add with alpha 0.1": lambda d: torch.add(
        _t([1.0, 3.0], torch.float16, d), _t([3.0, 7.0], torch.float16, d), alpha=0.1
    ),
}


@pytest.mark.parametrize("name", list(FLOAT16))
def test_float16_times_a_0d_tensor_reads_it_in_float32_as_eager_torch(dev, name):
    """Eager torch's mul and div read a 0-d second operand in float32 (a float16 0 times a 0-d
    1e6 is 0, not 0 * inf = NaN); add and sub take it in float16 (-65504 + 1e5 is inf)."""
    assert_same(FLOAT16[name], dev)


FLOATS = [-2.5, -4.0, 300.0, -300.0, 70000.0, 0.75, -0.75, 255.9]


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16])
@pytest.mark.parametrize("source", [torch.float32, torch.float16, torch.float64])
def test_a_float_converted_to_a_narrow_integer_wraps_as_in_eager_torch(dev, dtype, source):
    """C++ converts a float to a narrow integer through a wider one: -2.5 as uint8 is 254,
    70000.0 as int16 is 4464 (float16's 70000 is inf: not compared)."""
    values = [v for v in FLOATS if source != torch.float16 or abs(v) < 65504]
    assert_same(lambda d: _t(values, source, d).to(dtype), dev)
    assert_same(
        lambda d: torch.zeros(len(values), dtype=dtype, device=d).copy_(_t(values, source, d)), dev
    )


EMPTY = {  # f(device): a kernel check on an empty tensor does what the kernel does with it
    "empty int64 // 0": lambda d: torch.ones(0, dtype=torch.int64, device=d) // 0,
    "empty int32 trunc-divided by 0": lambda d: torch.div(
        torch.ones(2, 0, dtype=torch.int32, device=d), 0, rounding_mode="trunc"
    ),
    "int64 // 0": lambda d: torch.ones(2, dtype=torch.int64, device=d) // 0,
    "threshold of empty bool": lambda d: F.threshold(
        torch.ones(0, dtype=torch.bool, device=d), 0, 1
    ),
    "relu of empty bool": lambda d: torch.relu(torch.ones(0, dtype=torch.bool, device=d)),
}


@pytest.mark.parametrize("name", list(EMPTY))
def test_an_empty_tensor_is_refused_or_computed_as_eager_torch_does(dev, name):
    assert_same(EMPTY[name], dev)


@pytest.mark.parametrize("dims", [(0, -1), (-1, 0), (0, 0)])
def test_transposing_a_0d_tensor_gives_the_tensor(dev, dims):
    """torch takes dims 0 and -1 of a 0-d tensor as the tensor itself."""
    assert_same(lambda d: torch.tensor(2.5, device=d).transpose(*dims) * 2, dev)
