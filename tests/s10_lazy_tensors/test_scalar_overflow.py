"""A number that a fill, clamp or pad writes into a tensor must fit its dtype: eager CPU torch
raises (c10::checked_convert), and so must the lazy device, with torch's message. Arithmetic
does not check: uint8 + 300 wraps, on both."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from stages.s10_lazy_tensors import torch_xla


@pytest.fixture
def dev():
    return torch_xla.device()


def _x(dtype, device):
    return torch.tensor([0, 1, 1], device=device).to(dtype)


def _mask(device):
    return torch.tensor([True, False, True], device=device)


OPS = {  # f(dtype, value, device)
    "fill_": lambda t, v, d: _x(t, d).fill_(v),
    "full": lambda t, v, d: torch.full((3,), v, dtype=t, device=d),
    "full_like": lambda t, v, d: torch.full_like(_x(t, d), v),
    "new_full": lambda t, v, d: _x(t, d).new_full((2,), v),
    "masked_fill": lambda t, v, d: _x(t, d).masked_fill(_mask(d), v),
    "masked_fill_": lambda t, v, d: _x(t, d).masked_fill_(_mask(d), v),
    "masked_fill, 0-d tensor": lambda t, v, d: _x(t, d).masked_fill(_mask(d), torch.tensor(v)),
    "index_fill_": lambda t, v, d: _x(t, d).index_fill_(0, torch.tensor([0, 2], device=d), v),
    "scatter_ value": lambda t, v, d: _x(t, d).scatter_(0, torch.tensor([1], device=d), v),
    "clamp max": lambda t, v, d: torch.clamp(_x(t, d), max=v),
    "clamp min": lambda t, v, d: torch.clamp(_x(t, d), min=v),
    "clamp_": lambda t, v, d: _x(t, d).clamp_(0, v),
    "clamp_min": lambda t, v, d: torch.clamp_min(_x(t, d), v),
    "clamp_max": lambda t, v, d: torch.clamp_max(_x(t, d), v),
    "where, other": lambda t, v, d: torch.where(_mask(d), _x(t, d), v),
    "where, self": lambda t, v, d: torch.where(_mask(d), v, _x(t, d)),
    "pad": lambda t, v, d: F.pad(_x(t, d), (1, 2), value=v),
    "threshold value": lambda t, v, d: F.threshold(_x(t, d), 0, v),
    "threshold": lambda t, v, d: F.threshold(_x(t, d), v, 0),  # float16: a float threshold
    "setitem": lambda t, v, d: _x(t, d).__setitem__(slice(None), v),
    "addcmul value": lambda t, v, d: torch.addcmul(_x(t, d), _x(t, d), _x(t, d), value=v),
}

CPP = {torch.uint8: "uint8_t", torch.int8: "int8_t", torch.int16: "int16_t", torch.int32: "int",
       torch.int64: "int64_t", torch.float16: "c10::Half", torch.float32: "float"}
TOO_BIG = [(torch.uint8, 300), (torch.uint8, -256), (torch.uint8, 300.0), (torch.int8, 200),
           (torch.int8, -129), (torch.int16, 40000), (torch.int32, 2**40), (torch.int32, 2**31),
           (torch.int64, 2**63), (torch.float16, 1e6), (torch.float16, 70000),
           (torch.float16, 1e39), (torch.float32, 1e39)]


def _outcome(f, *args):
    """f's result on the host, or the type and first line of what it raised."""
    try:
        out = f(*args)
    except Exception as e:  # noqa: BLE001 - the oracle's outcome, whatever it is
        return type(e), str(e).splitlines()[0]
    return out.cpu() if isinstance(out, torch.Tensor) else out


def _same(got, want):
    if isinstance(want, tuple):
        assert got == want
    elif isinstance(want, torch.Tensor):
        assert (got.dtype, got.shape) == (want.dtype, want.shape)
        torch.testing.assert_close(got, want, equal_nan=True)


@pytest.mark.parametrize("name", list(OPS))
@pytest.mark.parametrize("dtype, value", TOO_BIG, ids=lambda x: str(x).removeprefix("torch."))
def test_a_number_that_does_not_fit_raises_as_eager_torch_raises(dev, name, dtype, value):
    want = _outcome(OPS[name], dtype, value, "cpu")
    got = _outcome(OPS[name], dtype, value, dev)
    message = f"value cannot be converted to type {CPP[dtype]} without overflow"
    if want == (RuntimeError, message):
        assert got == want
    elif isinstance(want, tuple):  # another refusal (int64 clamp to 2**63: a promotion)
        assert isinstance(got, tuple), got
    else:  # torch wraps or saturates here (a float16 `where`, an int64 `pad`)
        assert not (isinstance(got, tuple) and got[1] == message), got


@pytest.mark.parametrize("dtype, value", [(torch.uint8, 300), (torch.int8, 200),
                                          (torch.int32, 2**31), (torch.float16, 1e6)],
                         ids=str)
def test_every_fill_like_op_refuses_the_number_with_torchs_message(dev, dtype, value):
    """The ops that check in torch, each asserted by name: none may wrap silently."""
    message = f"value cannot be converted to type {CPP[dtype]} without overflow"
    unchecked = ("where, other", "where, self", "setitem", "threshold",  # float16: inf, or
                 "addcmul value")  # a float32 compare or multiply
    checked = [n for n in OPS if dtype != torch.float16 or n not in unchecked]
    for name in checked:
        with pytest.raises(RuntimeError, match=f"^{message}$"):
            OPS[name](dtype, value, dev)


FITS = [(torch.uint8, -1), (torch.uint8, -255), (torch.uint8, 255), (torch.uint8, 255.0),
        (torch.uint8, 2.5), (torch.int8, -128), (torch.int32, -2**31), (torch.bool, 300),
        (torch.bool, -1), (torch.bool, 0.5), (torch.float16, 65504), (torch.float16, float("inf")),
        (torch.float32, float("nan")), (torch.float16, float("-inf"))]


@pytest.mark.parametrize("name", ["fill_", "full", "masked_fill", "index_fill_", "clamp max",
                                  "clamp min", "where, other", "pad", "scatter_ value"])
@pytest.mark.parametrize("dtype, value", FITS, ids=lambda x: str(x).removeprefix("torch."))
def test_a_number_that_fits_computes_as_in_eager_torch(dev, name, dtype, value):
    """uint8 takes -1 as 255 in a fill, -1.0 it refuses; clamp to 2.5 promotes to float32;
    bool takes anything; inf and NaN fit a float."""
    _same(_outcome(OPS[name], dtype, value, dev), _outcome(OPS[name], dtype, value, "cpu"))


def test_arithmetic_with_a_number_outside_the_dtype_still_wraps(dev):
    for f in (lambda x: x + 300, lambda x: x * 300, lambda x: x - 300, lambda x: x < 300):
        _same(f(_x(torch.uint8, dev)).cpu(), f(_x(torch.uint8, "cpu")))
    _same((_x(torch.float16, dev) + 1e6).cpu(), _x(torch.float16, "cpu") + 1e6)
    _same(_x(torch.uint8, dev).fill_(torch.tensor(300)).cpu(),
          _x(torch.uint8, "cpu").fill_(torch.tensor(300)))  # a tensor value: no check


def test_a_refused_in_place_fill_leaves_the_tensor_as_it_was(dev):
    x = _x(torch.uint8, dev)
    for f in (lambda: x.fill_(300), lambda: x.masked_fill_(_mask(dev), -1.0),
              lambda: x.clamp_(max=256), lambda: x.index_fill_(0, torch.tensor([0], device=dev),
                                                               1000)):
        with pytest.raises(RuntimeError, match="uint8_t without overflow"):
            f()
    assert x.cpu().tolist() == [0, 1, 1]


def test_addcmul_checks_its_value_in_the_ops_math_type(dev):
    """float16 computes in float32: 1e6 is inf there, 1e39 overflows float32."""
    for dtype, value in [(torch.float16, 1e6), (torch.float16, 1e39), (torch.uint8, 255.5),
                         (torch.uint8, -1), (torch.int8, 200)]:
        f = OPS["addcmul value"]
        _same(_outcome(f, dtype, value, dev), _outcome(f, dtype, value, "cpu"))

