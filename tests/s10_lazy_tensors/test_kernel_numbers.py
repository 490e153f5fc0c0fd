"""How eager CPU kernels read a number (or a 0-d tensor) beside a tensor: a float16 mul or div
reads it in float32, an integer pow wraps, a bool to a bool power stays bool, `//` wraps an
integer number into the tensor's dtype, and alpha and a float16 exponent must fit the dtype.
The lazy device must give eager torch's values and dtypes, or raise its error word for word.
bfloat16 is refused on the lazy device (tensor.to_numpy_dtype), so only float16 is compared."""

from __future__ import annotations

import pytest
import torch

from stages.s10_lazy_tensors import torch_xla
from tests.s10_lazy_tensors.eager_oracle import assert_same


@pytest.fixture
def dev():
    return torch_xla.device()


def _t(values, dtype, device):
    return torch.tensor(values, device=device).to(dtype)


def _f16(device):
    return _t([0.0, 1.0, -65504.0, 3.0, 0.1, 1e-3, 1e4, 60000.0], torch.float16, device)


FLOAT16 = {  # f(device): a float16 tensor and a number or a 0-d tensor
    "* 1e6": lambda d: _f16(d) * 1e6,  # 0 * 1e6 is 0, not 0 * inf
    "* 0.1": lambda d: _f16(d) * 0.1,  # 0.1 in float32, not float16's 0.0999755859375
    "* 100000, an int": lambda d: _f16(d) * 100000,
    "1e6 *": lambda d: 1e6 * _f16(d),
    "mul.Scalar by 1e6": lambda d: torch.ops.aten.mul.Scalar(_f16(d), 1e6),
    "/ 0.1": lambda d: _f16(d) / 0.1,
    "/ 1e-6": lambda d: _f16(d) / 1e-6,
    "/ 100000, an int": lambda d: _f16(d) / 100000,
    "div.Scalar by 0.1": lambda d: torch.ops.aten.div.Scalar(_f16(d), 0.1),
    "1e6 /": lambda d: 1e6 / _f16(d),  # reciprocal, then a mul by 1e6
    "a 0-d float16 * 1e6": lambda d: _t(0.0, torch.float16, d) * 1e6,
    "* a 0-d float32 0.1": lambda d: _f16(d) * torch.tensor(0.1),
    "* a 0-d float64 0.1": lambda d: _f16(d) * torch.tensor(0.1, dtype=torch.float64),
    "/ a 0-d float32 0.1": lambda d: _f16(d) / torch.tensor(0.1),
    "* a 0-d int64 100000": lambda d: _f16(d) * torch.tensor(100000),
    "/ a 0-d int64 100000": lambda d: _f16(d) / torch.tensor(100000),
    # add and sub take the number in float16 first: -65504 + 1e5 is inf
    "+ 1e5": lambda d: _f16(d) + 1e5,
    "+ 0.1": lambda d: _f16(d) + 0.1,
    "- 0.1": lambda d: _f16(d) - 0.1,
    "- 1e6": lambda d: _f16(d) - 1e6,
    "0.1 -": lambda d: 0.1 - _f16(d),
    "rsub 1e5": lambda d: torch.rsub(_f16(d), 1e5),
    "+ a 0-d float32 0.1": lambda d: _f16(d) + torch.tensor(0.1),
    "- a 0-d float32 1e5": lambda d: _f16(d) - torch.tensor(1e5),
    "a 0-d float32 0.1 -": lambda d: torch.tensor(0.1) - _f16(d),
    "rsub a 0-d float32 1e5": lambda d: torch.rsub(_f16(d), torch.tensor(1e5)),
    "+ 0.1 with alpha 0.1": lambda d: torch.add(_f16(d), 0.1, alpha=0.1),
    "< 0.1": lambda d: _f16(d) < 0.1,
}


@pytest.mark.parametrize("name", list(FLOAT16))
def test_float16_mul_and_div_read_a_number_in_float32_as_eager_torch(dev, name):
    """Eager mul and div compute float16 in float32 with the number as a float32, rounding
    once; add and sub convert the number to float16 first."""
    assert_same(FLOAT16[name], dev)


INTEGERS = [(torch.int8, -128, 128), (torch.uint8, 0, 256), (torch.int16, -2**15, 2**15),
            (torch.int32, -2**31, 2**31)]


@pytest.mark.parametrize("dtype, low, high", INTEGERS, ids=lambda x: str(x).removeprefix("torch."))
def test_an_integer_pow_wraps_as_eager_torch(dev, dtype, low, high):
    """The exact power modulo 2 ** bits, for any exponent the dtype holds (3 ** 300 in int32
    is -597940623); a negative one gives 1 for 1, -1 or 1 for -1, else 0."""
    g = torch.Generator().manual_seed(0)
    base = torch.cat([torch.arange(max(low, -9), 10), torch.randint(low, high, (500,),
                                                                     generator=g)]).to(dtype)
    exponent = torch.randint(max(low, -5), min(high, 2**31 - 1), base.shape, generator=g)
    exponent[::3] %= 130  # around 63 and 64, where a power by squaring must go on
    assert_same(lambda d: base.to(d) ** exponent.to(dtype).to(d), dev)
    for e in (2, 31, 63, 64, 65, 100, 127):
        assert_same(lambda d, e=e: base[:40].to(d) ** e, dev)


POW = {  # f(device)
    "int32 3 ** 300": lambda d: _t([3, -3, 2, 0, 1, -1], torch.int32, d) ** 300,
    "int16 ** 300": lambda d: _t([3, -3, 2, 7], torch.int16, d) ** 300,
    "uint8 ** 200": lambda d: _t([3, 5, 2, 255], torch.uint8, d) ** 200,
    "uint8 ** an int32 tensor": lambda d: _t([3], torch.uint8, d) ** _t([256], torch.int32, d),
    "int8 ** an int16 tensor": lambda d: _t([3], torch.int8, d) ** _t([300], torch.int16, d),
    "a number ** int32": lambda d: 3 ** _t([300, 31, 0], torch.int32, d),
    "int64 ** 301, 32-bit results": lambda d: _t([-1, 0, 1], torch.int64, d) ** 301,
    "int64 ** 19": lambda d: _t([-3, 2, 3], torch.int64, d) ** 19,
    "int64 to negative powers": lambda d: (
        _t([3, 2, 0, 1, -1, -2], torch.int64, d) ** _t([-1, -2, -3, -4, -3, -1], torch.int64, d)
    ),
    "uint8 ** 300 overflows": lambda d: _t([3], torch.uint8, d) ** 300,
    "int8 ** 128 overflows": lambda d: _t([3], torch.int8, d) ** 128,
    "int32 ** -1": lambda d: _t([3], torch.int32, d) ** -1,
}


@pytest.mark.parametrize("name", list(POW))
def test_integer_pow_by_a_number_or_a_tensor_as_eager_torch(dev, name):
    assert_same(POW[name], dev)


BOOL_POW = {  # f(device)
    "bool ** True": lambda d: _t([True, False], torch.bool, d) ** True,
    "bool ** False": lambda d: _t([True, False], torch.bool, d) ** False,
    "0-d bool ** True": lambda d: _t(True, torch.bool, d) ** True,
    "bool pow_(True)": lambda d: _t([True, False], torch.bool, d).pow_(True),
    "bool ** 2": lambda d: _t([True, False], torch.bool, d) ** 2,
    "bool ** 1": lambda d: _t([True, False], torch.bool, d) ** 1,
    "int32 ** True": lambda d: _t([3, 0], torch.int32, d) ** True,
    "float16 ** False": lambda d: _t([float("nan"), 0.0], torch.float16, d) ** False,
    "bool ** a bool tensor": lambda d: _t([True], torch.bool, d) ** _t([True], torch.bool, d),
}


@pytest.mark.parametrize("name", list(BOOL_POW))
def test_pow_by_a_bool_keeps_the_dtype_as_eager_torch(dev, name):
    """Eager pow copies the base for True and fills ones for False: a bool stays bool."""
    assert_same(BOOL_POW[name], dev)


def _u8(device):
    return _t([200, 44, 3, 255], torch.uint8, device)


def _i8(device):
    return _t([100, -44, 3, -128], torch.int8, device)


DIVIDED = {  # f(device)
    "uint8 // 300": lambda d: _u8(d) // 300,
    "uint8 // -3": lambda d: _u8(d) // -3,
    "uint8 floor_divide_(300)": lambda d: _u8(d).floor_divide_(300),
    "torch.floor_divide(uint8, 300)": lambda d: torch.floor_divide(_u8(d), 300),
    "int8 // 200": lambda d: _i8(d) // 200,
    "int8 // -200": lambda d: _i8(d) // -200,
    "uint8 // 256, by zero": lambda d: _u8(d) // 256,
    "uint8 // a 0-d 300": lambda d: _u8(d) // torch.tensor(300),
    "uint8 % 300": lambda d: _u8(d) % 300,
    "int8 % -200": lambda d: _i8(d) % -200,
    "uint8 fmod 300": lambda d: torch.fmod(_u8(d), 300),
    "int8 fmod -200": lambda d: torch.fmod(_i8(d), -200),
    "uint8 trunc-divided by 300": lambda d: torch.div(_u8(d), 300, rounding_mode="trunc"),
    "uint8 // 2.5": lambda d: _u8(d) // 2.5,
}


@pytest.mark.parametrize("name", list(DIVIDED))
def test_a_division_by_a_number_outside_a_narrow_dtype_wraps_as_eager_torch(dev, name):
    """floor_divide, remainder and fmod cast an integer number to the tensor's dtype unchecked:
    uint8 // 300 divides by 44."""
    assert_same(DIVIDED[name], dev)


def _h(device):
    return _t([0.0, 1.0, 3.0], torch.float16, device)


FITS = {  # f(device)
    "float16 add, alpha 1e6": lambda d: torch.add(_h(d), _h(d), alpha=1e6),
    "float16 sub, alpha 1e6": lambda d: torch.sub(_h(d), _h(d), alpha=1e6),
    "float16 + a number, alpha 1e6": lambda d: torch.add(_h(d), 1.0, alpha=1e6),
    "float16 - a number, alpha 70000": lambda d: torch.sub(_h(d), 2.0, alpha=70000),
    "float16 rsub, alpha 1e6": lambda d: torch.rsub(_h(d), 2.0, alpha=1e6),
    "float16 add_, alpha 1e6": lambda d: _h(d).add_(_h(d), alpha=1e6),
    "float32 add, alpha 1e39": lambda d: torch.add(_h(d).float(), 1, alpha=1e39),
    "uint8 add, alpha 300": lambda d: torch.add(_u8(d), _u8(d), alpha=300),
    "uint8 add, alpha -256": lambda d: torch.add(_u8(d), _u8(d), alpha=-256),
    "uint8 sub, alpha 256": lambda d: torch.sub(_u8(d), _u8(d), alpha=256),
    "int8 add, alpha 128": lambda d: torch.add(_i8(d), _i8(d), alpha=128),
    "int8 sub, alpha -128": lambda d: torch.sub(_i8(d), _i8(d), alpha=-128),
    "int32 add, alpha 2 ** 31": lambda d: torch.add(_i8(d).int(), 1, alpha=2**31),
    "float16 ** 1e6": lambda d: _h(d) ** 1e6,
    "float16 ** 70000": lambda d: _h(d) ** 70000,
    "float16 pow_(1e6)": lambda d: _h(d).pow_(1e6),
    # these fit: -alpha for sub, -255 for uint8 (as C++ lets a - b be a + 255 * b)
    "uint8 add, alpha -255": lambda d: torch.add(_u8(d), _u8(d), alpha=-255),
    "uint8 sub, alpha 255": lambda d: torch.sub(_u8(d), _u8(d), alpha=255),
    "int8 sub, alpha 128": lambda d: torch.sub(_i8(d), _i8(d), alpha=128),
    "float16 add, alpha 65504": lambda d: torch.add(_h(d), _h(d), alpha=65504),
    "float16 ** a 0-d 1e6": lambda d: _h(d) ** torch.tensor(1e6),  # a tensor: unchecked
    "float16 ** 0.5": lambda d: _h(d) ** 0.5,
}


@pytest.mark.parametrize("name", list(FITS))
def test_alpha_and_a_float16_exponent_must_fit_the_dtype_as_in_eager_torch(dev, name):
    """The kernel converts alpha (sub's: -alpha) and a float16 exponent to the result's dtype,
    checked: "value cannot be converted to type c10::Half without overflow"."""
    assert_same(FITS[name], dev)


def test_the_overflow_message_names_torchs_cpp_type(dev):
    with pytest.raises(RuntimeError, match=r"^value cannot be converted to type c10::Half "
                                           r"without overflow$"):
        torch.add(_h(dev), _h(dev), alpha=1e6)
    with pytest.raises(RuntimeError, match=r"^value cannot be converted to type c10::Half "
                                           r"without overflow$"):
        _h(dev) ** 1e6
