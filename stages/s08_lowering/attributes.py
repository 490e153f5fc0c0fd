"""How MLIR prints a constant: `dense<...>` elements and the digits of each float.

JAX: the text comes from MLIR's AsmPrinter (printFloatValue, printDenseElementsAttr) and LLVM's
APFloat::toString; nothing here is a lowering rule, only the printer's quirks, kept apart so the
mechanism stays readable. A float is written with 7 significant digits (`2.000000e+00`) when
that reads back to the same bits, else with the shortest digits that do (`0.899999976`,
`9.99999974E-6`), else in hex (`0x7F800000`: inf, nan, and integers like 1234567 whose exact
digits have no decimal point). More than 100 distinct elements are written as raw hex bytes.
"""

from __future__ import annotations

import functools
from fractions import Fraction

import numpy as np

# name -> (exponent bits, stored mantissa bits) of the IEEE formats
_FLOAT_FORMATS = {"float16": (5, 10), "bfloat16": (8, 7), "float32": (8, 23),
                  "float64": (11, 52)}
_HEX_ELEMENTS_LIMIT = 100  # MLIR: more elements than this print as a hex string


def _decompose(bits: int, exp_bits: int, mant_bits: int) -> tuple[bool, int, int, str]:
    """(negative, significand, binary exponent, category) of a float's bit pattern."""
    negative = bool(bits >> (exp_bits + mant_bits))
    biased = (bits >> mant_bits) & ((1 << exp_bits) - 1)
    mantissa = bits & ((1 << mant_bits) - 1)
    bias = (1 << (exp_bits - 1)) - 1
    if biased == (1 << exp_bits) - 1:
        return negative, mantissa, 0, "nan" if mantissa else "inf"
    if biased == 0:
        return negative, mantissa, 1 - bias - mant_bits, "zero" if mantissa == 0 else "normal"
    return negative, mantissa | (1 << mant_bits), biased - bias - mant_bits, "normal"


def _trim_to_precision(digits: str, exp: int, precision: int) -> tuple[str, int]:
    """Round a digit string (most significant first) to `precision` digits, half up."""
    # LLVM: AdjustToPrecision on the digit buffer
    n = len(digits)
    if n <= precision:
        return digits, exp
    first = n - precision  # digits are counted from the least significant end
    rev = digits[::-1]
    if rev[first - 1] < "5":
        while first < n and rev[first] == "0":
            first += 1
        return rev[first:][::-1], exp + first
    kept = list(rev)
    i = first
    while i < n and kept[i] == "9":
        i += 1
    if i == n:
        return "1", exp + n
    kept[i] = chr(ord(kept[i]) + 1)
    return "".join(kept[i:])[::-1], exp + i


def _to_string(negative: bool, significand: int, exp2: int, semantics_precision: int,
               precision: int, max_padding: int, truncate_zero: bool) -> str:
    """LLVM's APFloat::toString for a nonzero finite value significand * 2**exp2."""
    if not precision:
        precision = 2 + semantics_precision * 59 // 196
    while significand % 2 == 0:
        significand //= 2
        exp2 += 1
    exp10 = 0
    if exp2 >= 0:
        significand <<= exp2
    else:  # N * 2**-e == N * 5**e * 10**-e
        significand *= 5 ** -exp2
        exp10 = exp2
    # a first, truncating cut of whole tens before the digits are rounded
    bits_required = (precision * 196 + 58) // 59
    if significand.bit_length() > bits_required:
        removable = (significand.bit_length() - bits_required) * 59 // 196
        if removable:
            exp10 += removable
            significand //= 10 ** removable
    digits = str(significand).rstrip("0")
    exp10 += len(str(significand)) - len(digits)
    digits, exp10 = _trim_to_precision(digits, exp10, precision)
    n = len(digits)
    if not max_padding:
        scientific = True
    elif exp10 >= 0:
        scientific = exp10 > max_padding or n + exp10 > precision
    else:
        msd = exp10 + n - 1
        scientific = msd < 0 and -msd > max_padding
    sign = "-" if negative else ""
    if scientific:
        exp10 += n - 1
        mantissa = digits[0] + "." + (digits[1:] or ("0" if truncate_zero else ""))
        if not truncate_zero and precision > n - 1:
            mantissa += "0" * (precision - n + 1)
        exp_digits = str(abs(exp10)).rjust(1 if truncate_zero else 2, "0")
        return f"{sign}{mantissa}{'E' if truncate_zero else 'e'}{'-' if exp10 < 0 else '+'}" \
               f"{exp_digits}"
    if exp10 >= 0:
        return sign + digits + "0" * exp10
    whole = exp10 + n
    if whole > 0:
        return f"{sign}{digits[:whole]}.{digits[whole:]}"
    return f"{sign}0.{'0' * -whole}{digits}"


def _round_to_bits(text: str, exp_bits: int, mant_bits: int) -> int:
    """The bit pattern a decimal string reads back as (round to nearest even), finite only."""
    value = Fraction(text)
    negative = value < 0
    value = abs(value)
    bias = (1 << (exp_bits - 1)) - 1
    if value == 0:
        return int(negative) << (exp_bits + mant_bits)
    e = max(value.numerator.bit_length() - value.denominator.bit_length() - 1, 1 - bias)
    while Fraction(2) ** e > value and e > 1 - bias:
        e -= 1
    while Fraction(2) ** (e + 1) <= value:
        e += 1
    scaled = value / Fraction(2) ** (e - mant_bits)
    q, r = divmod(scaled.numerator, scaled.denominator)
    if 2 * r > scaled.denominator or (2 * r == scaled.denominator and q % 2):
        q += 1
    if q >> (mant_bits + 1):  # rounding carried into the next binade
        q >>= 1
        e += 1
    biased = e + bias if q >> mant_bits else 0
    if biased >= (1 << exp_bits) - 1:
        biased, q = (1 << exp_bits) - 1, 0  # overflow: inf
    return (int(negative) << (exp_bits + mant_bits)) | (biased << mant_bits) | \
        (q & ((1 << mant_bits) - 1))


def format_float(bits: int, dtype_name: str) -> str:
    """One float element as MLIR prints it, from its bit pattern."""
    exp_bits, mant_bits = _FLOAT_FORMATS[dtype_name]
    negative, significand, exp2, category = _decompose(bits, exp_bits, mant_bits)
    if category == "zero":
        return ("-" if negative else "") + "0.000000e+00"
    if category == "normal":
        args = (negative, significand, exp2, mant_bits + 1)
        text = _to_string(*args, precision=6, max_padding=0, truncate_zero=False)
        if _round_to_bits(text, exp_bits, mant_bits) == bits:
            return text
        text = _to_string(*args, precision=0, max_padding=3, truncate_zero=True)
        if "." in text:
            return text
    return f"0x{bits:X}"


def _element(x: np.ndarray) -> str:
    kind = x.dtype.kind
    if kind == "b":
        return "true" if x else "false"
    if kind in "iu":
        return str(int(x))
    if kind == "c":
        return f"({_element(x.real)},{_element(x.imag)})"
    unsigned = np.dtype(f"uint{8 * x.dtype.itemsize}")
    return format_float(int(x.reshape(1).view(unsigned)[0]), x.dtype.name)


def _nested(x: np.ndarray) -> str:
    if x.ndim == 0:
        return _element(x)
    return "[" + ", ".join(_nested(row) for row in x) + "]"


def dense_elements(x: np.ndarray) -> str:
    """`dense<...>` for an array: one element if all are equal, hex if many, nested lists."""
    if x.size == 1:  # the common case, a literal: cached, as the same few recur
        return _dense_scalar(x.dtype, x.tobytes())
    return _dense(x)


@functools.lru_cache(maxsize=4096)
def _dense_scalar(dtype: np.dtype, data: bytes) -> str:
    return _dense(np.frombuffer(data, dtype))


def _dense(x: np.ndarray) -> str:
    if x.size == 0:
        return "dense<>"  # MLIR's form for no elements, whatever the shape
    flat = np.ascontiguousarray(x).reshape(-1)  # a strided view cannot be viewed as bytes
    if (flat.view(np.uint8).reshape(flat.size, -1) == flat[:1].view(np.uint8)).all():
        return f"dense<{_element(flat[0])}>"  # MLIR stores such an array as a splat
    if flat.size > _HEX_ELEMENTS_LIMIT:
        return f'dense<"0x{flat.tobytes().hex().upper()}">'
    return f"dense<{_nested(x)}>"
