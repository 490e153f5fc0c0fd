"""clz and bitcast_convert_type: lax.clz counts an integer's leading zero bits; a bitcast reads
the same bits as another dtype. Values, dtypes, weak types, jaxprs and errors against jax.lax's.

With x64 disabled (JAX's default, and ours), an int64 or uint64 input is its 32-bit counterpart:
its high bits are dropped before clz sees it, in JAX as here.
"""

from __future__ import annotations

import warnings

import jax
import numpy as np
import pytest

import stages.s02_tracing as s02
from shared.testing import assert_same_typed_values

pytestmark = pytest.mark.oracle


def _edges(dtype) -> np.ndarray:
    """0, 1, -1, the extremes, powers of two and their neighbours, in `dtype`."""
    info = np.iinfo(dtype)
    powers = [2**k for k in range(info.bits) if 2**k <= info.max]
    values = {0, 1, info.max, info.min, *powers, *(p - 1 for p in powers),
              *(p + 1 for p in powers if p + 1 <= info.max)}
    if info.min < 0:
        values |= {-1, -2, info.min + 1, *(-p for p in powers)}
    return np.array(sorted(values), dtype)


INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


@pytest.mark.parametrize("dtype", INTS, ids=lambda d: np.dtype(d).name)
def test_clz_of_every_integer_dtype_equals_jaxs(dtype):
    x = _edges(dtype)
    got, want = s02.lax.clz(x), jax.lax.clz(x)
    assert_same_typed_values(got, want)
    assert_same_typed_values(s02.lax.clz(x.reshape(-1, 1)[:4]), jax.lax.clz(x.reshape(-1, 1)[:4]))


def test_clz_counts_the_bits_above_the_leading_one():
    # the definition, independent of JAX: the width for 0, 0 for a set sign bit
    x = np.array([0, 1, 2, 3, 255, 256, -1, np.iinfo(np.int32).min, 2**30], np.int32)
    want = [32 - int(v).bit_length() if v >= 0 else 0 for v in x.tolist()]
    np.testing.assert_array_equal(s02.lax.clz(x), want)
    assert s02.lax.clz(np.uint8(0)) == 8 and s02.lax.clz(np.int16(-5)) == 0


def test_64_bit_inputs_lose_their_high_bits_as_in_jax():
    x = np.array([2**40 + 5, -(2**40), 2**33, 2**63 - 1], np.int64)
    assert_same_typed_values(s02.lax.clz(x), jax.lax.clz(x))
    u = np.array([2**40 + 5, 2**64 - 1, 2**32], np.uint64)
    assert_same_typed_values(s02.lax.clz(u), jax.lax.clz(u))


def test_a_python_int_stays_weakly_typed():
    for value in (0, 3, -7, 2**31 - 1):
        assert_same_typed_values(s02.lax.clz(value), jax.lax.clz(value))
    assert s02.lax.clz(3).weak_type


JAXPRS = {
    "int8 scalar": (lambda lax, x: lax.clz(x), (np.int8(3),)),
    "python int": (lambda lax, x: lax.clz(x), (3,)),
    "uint16 matrix": (lambda lax, x: lax.clz(x), (np.arange(6, dtype=np.uint16).reshape(2, 3),)),
    "clz of a shift": (lambda lax, x: lax.clz(lax.shift_left(x, np.uint32(3))),
                       (np.arange(4, dtype=np.uint32),)),
    "bitcast to float32": (lambda lax, x: lax.bitcast_convert_type(x, np.float32),
                           (np.arange(3, dtype=np.int32),)),
    "bitcast of a python int": (lambda lax, x: lax.bitcast_convert_type(x, np.float32), (3,)),
    "bitcast narrower": (lambda lax, x: lax.bitcast_convert_type(x, np.uint8),
                         (np.ones((2, 3), np.float32),)),
    "bitcast wider": (lambda lax, x: lax.bitcast_convert_type(x, np.int32),
                      (np.ones((3, 2), np.uint16),)),
    "float from clz and a bitcast": (
        lambda lax, x: lax.bitcast_convert_type(
            lax.shift_left(lax.clz(x), np.uint32(23)), np.float32),
        (np.arange(5, dtype=np.uint32),)),
}


@pytest.mark.parametrize("case", list(JAXPRS))
def test_printed_jaxprs_equal_jaxs(case):
    fn, args = JAXPRS[case]
    ours = s02.make_jaxpr(lambda *a: fn(s02.lax, *a))(*args)
    theirs = jax.make_jaxpr(lambda *a: fn(jax.lax, *a))(*args)
    assert str(ours) == str(theirs)


def _raised(fn, *args):
    with pytest.raises(Exception) as info:
        fn(*args)
    return info.value


@pytest.mark.parametrize("x", [np.float32(1.5), np.ones(3, np.float16), np.array([True]),
                               np.complex64(1j), 2.5],
                         ids=["float32", "float16", "bool", "complex64", "python float"])
def test_clz_refuses_a_non_integer_with_jaxs_message(x):
    ours, theirs = _raised(s02.lax.clz, x), _raised(jax.lax.clz, x)
    assert type(ours) is TypeError and type(theirs) is TypeError
    assert str(ours) == str(theirs)
    ours = _raised(s02.make_jaxpr(s02.lax.clz), x)
    assert str(ours) == str(theirs)


def test_the_float_message_word_for_word():
    with pytest.raises(TypeError) as info:
        s02.lax.clz(np.float32(1.0))
    assert str(info.value) == ("clz does not accept dtype float32. Accepted dtypes are subtypes "
                               "of integer.")


# ------------------------------------------------------------------ bitcast_convert_type

def _same_bits(ours, theirs):
    """Equal dtype, shape and weak type, and the same bytes (NaN payloads included)."""
    o, t = np.ascontiguousarray(ours), np.ascontiguousarray(theirs)
    assert (o.dtype, o.shape) == (t.dtype, t.shape)
    assert getattr(ours, "weak_type", False) == getattr(theirs, "weak_type", False)
    assert o.tobytes() == t.tobytes()


I32 = np.array([0, 1, -1, 0x3F800000, 0x7FC00001, -0x800000, 2**31 - 1], np.int32)
BITCASTS = {
    "int32 to float32 (a NaN payload too)": (I32, np.float32),
    "float32 to uint32": (np.array([1.0, -0.0, np.inf, 1e-40, np.nan], np.float32), np.uint32),
    "int32 to uint32": (I32, np.uint32),
    "int8 to uint8": (np.array([-128, -1, 0, 127], np.int8), np.uint8),
    "float16 to int16": (np.array([1.0, -2.5, np.inf], np.float16), np.int16),
    "uint32 to uint8 pieces": (np.array([0x01020304, 0xFFFFFFFF], np.uint32), np.uint8),
    "float32 matrix to uint16 pieces": (np.arange(6, dtype=np.float32).reshape(2, 3), np.uint16),
    "a scalar to pieces": (np.float32(1.0), np.int8),
    "uint8 pieces to uint32": (np.arange(8, dtype=np.uint8).reshape(2, 4), np.uint32),
    "int16 pairs to float32": (np.array([[0, 0x3F80], [1, 2]], np.int16), np.float32),
    "uint8 pieces of a single one": (np.array([0, 0, 0x80, 0x3F], np.uint8), np.float32),
    "bool to bool": (np.array([True, False]), np.bool_),
    "complex64 to complex64": (np.array([1 + 2j], np.complex64), np.complex64),
    "a python int": (3, np.float32),
    "a python float": (1.0, np.int32),
    "a non-contiguous view": (np.arange(12, dtype=np.int32).reshape(3, 4)[:, ::2], np.float32),
}


@pytest.mark.parametrize("case", list(BITCASTS))
def test_bitcast_gives_jaxs_bits(case):
    x, new_dtype = BITCASTS[case]
    _same_bits(s02.lax.bitcast_convert_type(x, new_dtype),
               jax.lax.bitcast_convert_type(x, new_dtype))


def test_a_64_bit_target_is_its_32_bit_counterpart_as_in_jax():
    x = np.array([1.0, 2.0], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # JAX warns that x64 is off
        want = jax.lax.bitcast_convert_type(x, np.int64)
        got = s02.lax.bitcast_convert_type(x, np.int64)  # with the same warning
    _same_bits(got, want)


def test_bitcasting_there_and_back_is_the_identity():
    x = np.array([1.5, -0.0, np.inf, np.nan, 3e-42], np.float32)
    back = s02.lax.bitcast_convert_type(s02.lax.bitcast_convert_type(x, np.uint8), np.float32)
    assert np.asarray(back).tobytes() == x.tobytes()


BAD_BITCASTS = {
    "float to bool": (np.float32(1.0), np.bool_),
    "bool to uint8": (np.array([True]), np.uint8),
    "complex to uint32": (np.complex64(1j), np.uint32),
    "int32 to complex64": (np.int32(1), np.complex64),
    "3 bytes to uint32": (np.arange(3, dtype=np.uint8), np.uint32),
    "a scalar byte to uint16": (np.uint8(1), np.uint16),
    "a matrix of 3-byte rows": (np.zeros((2, 3), np.uint8), np.float32),
}


@pytest.mark.parametrize("case", list(BAD_BITCASTS))
def test_a_bad_bitcast_fails_with_jaxs_error(case):
    x, new_dtype = BAD_BITCASTS[case]
    theirs = _raised(jax.lax.bitcast_convert_type, x, new_dtype)
    for ours in (_raised(s02.lax.bitcast_convert_type, x, new_dtype),
                 _raised(s02.make_jaxpr(lambda a: s02.lax.bitcast_convert_type(a, new_dtype)),
                         x)):
        assert type(ours) is type(theirs)
        assert str(ours) == str(theirs)


def test_the_bitcast_messages_word_for_word():
    with pytest.raises(TypeError) as info:
        s02.lax.bitcast_convert_type(np.float32(1.0), np.bool_)
    assert str(info.value) == (
        "lax.bitcast_convert_type does not support bool or complex values unless the operand "
        "and destination types match. Got operand dtype=float32, new_dtype=dtype('bool'). "
        "Consider using the arr.view() method instead.")
    with pytest.raises(ValueError) as info:
        s02.lax.bitcast_convert_type(np.arange(3, dtype=np.uint8), np.uint32)
    assert str(info.value) == (
        "Attempting to convert array of shape (3,) from uint8 of size 8 bits to uint32 of size "
        "32, bits but 3 * 8 != 32")

