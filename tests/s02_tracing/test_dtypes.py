"""dtypes.py against jax's: canonical dtypes, short names, and the whole promotion grid."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src import dtypes as jax_dtypes

from stages.s02_tracing import dtypes

_NAMES = ["bool", "uint8", "uint16", "uint32", "int8", "int16", "int32", "float16", "bfloat16",
          "float32", "complex64"]
# Every dtype a stage-2 array has, plus the Python types standing for weak int/float/complex.
GRID = [np.dtype(n) for n in _NAMES] + [int, float, complex]


def _name(t) -> str:
    return t.__name__ if isinstance(t, type) else str(t)


@pytest.mark.parametrize("a", GRID, ids=_name)
def test_promote_types_equals_jnp_promote_types_on_the_whole_grid(a):
    for b in GRID:
        assert dtypes.promote_types(a, b) == jnp.promote_types(a, b), (a, b)


def test_promote_types_keeps_64_bit_inputs_as_jax_does():
    # promote_types does not canonicalize: float64 stays float64 even with x64 disabled
    for a, b in itertools.product(["float64", "int64", "uint64", "complex128"], GRID):
        assert dtypes.promote_types(a, b) == jnp.promote_types(a, b), (a, b)


@pytest.mark.parametrize("a", GRID, ids=_name)
def test_result_type_and_weak_flag_equal_jax_on_the_whole_grid(a):
    for b in GRID:
        ours = dtypes.result_type(a, b, return_weak_type_flag=True)
        theirs = jax_dtypes.result_type(a, b, return_weak_type_flag=True)
        assert ours == theirs, (a, b)


@pytest.mark.parametrize("a", GRID, ids=_name)
def test_result_type_of_three_arguments_equals_jax_on_the_whole_grid(a):
    # three nodes are joined at once: a third that is wider than the first two's join counts
    for b, c in itertools.product(GRID, repeat=2):
        ours = dtypes.result_type(a, b, c, return_weak_type_flag=True)
        theirs = jax_dtypes.result_type(a, b, c, return_weak_type_flag=True)
        assert ours == theirs, (a, b, c)
    assert dtypes.result_type(np.int8, np.int16, np.float32) == np.float32


def test_result_type_of_one_argument_equals_jax():
    for a in GRID:
        ours = dtypes.result_type(a, return_weak_type_flag=True)
        assert ours == jax_dtypes.result_type(a, return_weak_type_flag=True), a


def test_result_type_of_values_canonicalizes_and_treats_python_scalars_as_weak():
    values = [np.ones(2, np.float64), np.ones(2, np.int64), np.float16(1), np.int8(3), 2, 2.0,
              1j, True, np.ones((), np.uint8), np.ones(2, jnp.bfloat16), jnp.bfloat16(1)]
    for a, b in itertools.product(values, repeat=2):
        ours = dtypes.result_type(a, b, return_weak_type_flag=True)
        assert ours == jax_dtypes.result_type(a, b, return_weak_type_flag=True), (a, b)
    for a, b, c in [(2, 2.0, np.int8(1)), (np.float16(1), 2, 3.0), (True, 1, 1j),
                    (jnp.bfloat16(1), np.float16(1), 2.0), (jnp.bfloat16(1), np.int32(1), 2)]:
        assert dtypes.result_type(a, b, c) == jax_dtypes.result_type(a, b, c)


def test_a_weak_scalar_never_widens_a_typed_value():
    assert dtypes.result_type(np.float16(1), 2.0) == np.float16  # (jnp.float16(1) * 2.0).dtype
    assert dtypes.result_type(np.int8(1), 1000) == np.int8
    assert dtypes.result_type(np.uint8(1), 1) == np.uint8
    assert dtypes.result_type(np.int32(1), 2.0) == np.float32  # the kind still changes


def test_canonicalize_dtype_drops_64_bit_types_like_default_jax():
    for name in ["float64", "int64", "uint64", "complex128", "float16", "int8", "bool"]:
        expected = jax_dtypes.canonicalize_dtype(np.dtype(name))
        assert dtypes.canonicalize_dtype(name) == expected, name


def test_python_scalar_types_get_jax_default_dtypes():
    for pytype in (bool, int, float, complex):
        assert dtypes.python_scalar_dtype(pytype) == jax_dtypes.dtype(pytype(1))
    with pytest.raises(TypeError, match="is not a Python scalar type"):
        dtypes.python_scalar_dtype(str)


def test_short_dtype_names_match_how_jax_prints_avals():
    for name in _NAMES + ["float64", "int64", "uint64"]:
        assert dtypes.short_dtype_name(name) == jax_dtypes.short_dtype_name(np.dtype(name))
    assert dtypes.short_dtype_name(np.float32) == "f32"


def test_only_python_int_float_complex_are_weak():
    assert dtypes.is_weakly_typed(1) and dtypes.is_weakly_typed(1.0) and dtypes.is_weakly_typed(1j)
    assert not dtypes.is_weakly_typed(True)
    assert not dtypes.is_weakly_typed(np.float32(1))
    assert not dtypes.is_weakly_typed(np.ones(3))
    for x in (1, 1.0, True, np.float32(1)):
        assert dtypes.is_weakly_typed(x) == jax_dtypes.is_weakly_typed(x)


def test_dtype_of_a_value_is_canonical_and_strings_are_rejected():
    assert dtypes.dtype(np.ones(2)) == np.float32
    assert dtypes.dtype(3) == np.int32 and dtypes.dtype(float) == np.float32
    with pytest.raises(TypeError, match="is not a valid JAX array type"):
        dtypes.dtype(np.array(["a"]))


def test_promotion_error_type_is_a_value_error_like_jax():
    assert issubclass(dtypes.TypePromotionError, ValueError)
    assert jax.dtypes.TypePromotionError.__name__ == dtypes.TypePromotionError.__name__


def test_bfloat16_sits_beside_float16_above_the_weak_float_as_in_jax():
    bf16 = np.dtype(jnp.bfloat16)
    assert dtypes.bfloat16 == bf16 and bf16 in dtypes.jax_dtypes
    assert dtypes.promote_types(bf16, np.float16) == jnp.promote_types(bf16, np.float16)
    assert dtypes.promote_types(bf16, np.float16) == np.float32
    for other in ("bool", "uint8", "int8", "int32", "uint32", float, int):
        assert dtypes.promote_types(bf16, other) == bf16 == jnp.promote_types(bf16, other), other
    assert dtypes.result_type(np.ones(2, bf16), 2.0) == bf16  # a weak float keeps bfloat16
    assert dtypes.dtype(jnp.bfloat16) == dtypes.dtype("bfloat16") == bf16
    assert dtypes.short_dtype_name(bf16) == "bf16" == jax_dtypes.short_dtype_name(bf16)


def test_issubdtype_counts_bfloat16_as_a_float_as_jax_does():
    bf16 = np.dtype(jnp.bfloat16)
    for family in (np.floating, np.inexact, np.number, np.generic, np.integer,
                   np.complexfloating, np.signedinteger):
        assert dtypes.issubdtype(bf16, family) == jnp.issubdtype(bf16, family), family
    assert not np.issubdtype(bf16, np.floating)  # numpy alone does not know
    assert dtypes.issubdtype(np.float32, np.floating) and not dtypes.issubdtype(np.int8, np.inexact)
    assert dtypes.dtype_kind(bf16) == "f" and dtypes.dtype_kind(np.dtype("int8")) == "i"
