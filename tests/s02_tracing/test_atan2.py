"""atan2: lax.atan2, jnp.arctan2 and its alias jnp.atan2, against jax's.

atan2(x, y) is the angle of the point (y, x): x is the numerator, and both signs choose the
quadrant. jnp promotes ints and bools to float first; lax takes floats or complex numbers of
one dtype only.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import stages.s02_tracing as s02
from shared.testing import RTOL_ELEMENTWISE, assert_same_typed_values, canonical_error_text

snp = s02.numpy
inf = np.inf
# every quadrant, the axes, signed zeros, and infinities on either side
X = np.array([1.0, 1.0, -1.0, -1.0, 0.0, -0.0, 0.0, -0.0, 2.0, -2.0, 0.0, inf, -inf, inf,
              -inf, 1.0, -1.0, 3.5], np.float32)
Y = np.array([1.0, -1.0, -1.0, 1.0, 0.0, 0.0, -0.0, -0.0, 0.0, 0.0, -3.0, 1.0, 1.0, inf, -inf,
              inf, -inf, -0.25], np.float32)
I = np.array([[-3, 0, 2], [1, 4, -2]], np.int32)


@pytest.mark.parametrize("name", ["arctan2", "atan2"])
def test_values_in_every_quadrant_at_zeros_and_infinities_equal_jnps(name):
    ours, theirs = getattr(snp, name)(X, Y), np.asarray(getattr(jnp, name)(X, Y))
    np.testing.assert_allclose(ours, theirs, rtol=RTOL_ELEMENTWISE, atol=0)
    # the sign of a zero angle comes from the numerator's: atan2(-0., 1.) is -0.
    assert np.array_equal(np.signbit(ours), np.signbit(theirs))
    assert np.all((-np.pi <= ours) & (ours <= np.pi))


def test_lax_atan2_equals_jax_lax_atan2_in_float32_float16_and_float64_inputs():
    for dtype in (np.float32, np.float16):
        x, y = X.astype(dtype), Y.astype(dtype)
        assert_same_typed_values(s02.lax.atan2(x, y), jax.lax.atan2(x, y),
                                 rtol=RTOL_ELEMENTWISE if dtype == np.float32 else 1e-3)
    # a float64 numpy array is a float32 one with x64 disabled
    assert_same_typed_values(s02.lax.atan2(X.astype(np.float64), Y.astype(np.float64)),
                             jax.lax.atan2(X.astype(np.float64), Y.astype(np.float64)))


def test_complex_atan2_equals_jaxs():
    x = np.array([1 + 1j, 1 + 0j, 0.5j, 2 - 3j, -1 - 1j], np.complex64)
    y = np.array([2 + 0j, 1 + 0j, 1 + 0j, -1 + 0.5j, 0.5 + 2j], np.complex64)
    assert_same_typed_values(s02.lax.atan2(x, y), jax.lax.atan2(x, y), atol=1e-6)
    assert_same_typed_values(snp.arctan2(x, 2), jnp.arctan2(x, 2), atol=1e-6)


TYPED = {
    "python ints": (1, 2),
    "python int and float": (2, 1.5),
    "python int, f32 array": (2, X),
    "f32 array, python float": (X, 0.5),
    "f32 scalar and python int": (np.float32(2), 1),
    "int32 arrays": (I, I[::-1]),
    "int8 and int32": (I.astype(np.int8), I),
    "int32 and f16": (I, I.astype(np.float16)),
    "bool and python int": (I > 0, 1),
    "f16 array and python int": (X.astype(np.float16), 2),
    "uint8 array and python float": (np.arange(3, dtype=np.uint8), 0.5),
}


@pytest.mark.parametrize("name", ["arctan2", "atan2"])
@pytest.mark.parametrize("case", list(TYPED))
def test_dtypes_and_weak_types_equal_jnps(name, case):
    """Ints and bools become float32 (weak from weak Python scalars), as in jnp."""
    args = TYPED[case]
    assert_same_typed_values(getattr(snp, name)(*args), getattr(jnp, name)(*args),
                             rtol=RTOL_ELEMENTWISE if "f16" not in case else 1e-3)


def test_ints_promote_to_float32_and_a_float_array_keeps_its_dtype():
    assert snp.arctan2(1, 2).dtype == np.float32 and snp.arctan2(1, 2).weak_type
    assert not snp.arctan2(2, X).weak_type
    assert snp.arctan2(X.astype(np.float16), 2).dtype == np.float16
    np.testing.assert_allclose(snp.arctan2(1, 2), np.arctan2(1, 2), rtol=RTOL_ELEMENTWISE)


JAXPRS = {
    "f32 arrays": (lambda np_mod, x, y: np_mod.arctan2(x, y), (X, Y)),
    "int and f32 scalar": (lambda np_mod, i, y: np_mod.arctan2(i, y), (1, 2.0)),
    "python scalar numerator": (lambda np_mod, y: np_mod.arctan2(2, y), (Y,)),
    "int arrays": (lambda np_mod, a, b: np_mod.arctan2(a, b), (I, I)),
    "rank broadcast": (lambda np_mod, a, b: np_mod.arctan2(a, b), (I, Y[:3])),
    # atan2 promotes once (int8 to int32) before arctan2 promotes to float
    "atan2 of int8 and int32": (lambda np_mod, a, b: np_mod.atan2(a, b),
                                (I.astype(np.int8), I)),
    "arctan2 of int8 and int32": (lambda np_mod, a, b: np_mod.arctan2(a, b),
                                  (I.astype(np.int8), I)),
    "lax": (lambda np_mod, x, y: (jax.lax if np_mod is jnp else s02.lax).atan2(x, y), (X, Y)),
}


@pytest.mark.parametrize("case", list(JAXPRS))
def test_printed_jaxpr_equals_jaxs(case):
    fn, args = JAXPRS[case]
    ours = s02.make_jaxpr(lambda *a: fn(snp, *a))(*args)
    with jax.disable_jit():  # jnp.arctan2 is an inlined jit: the same equations either way
        theirs = jax.make_jaxpr(lambda *a: fn(jnp, *a))(*args)
    assert str(ours) == str(theirs)
    assert "atan2" in str(ours)


def _error(make_jaxpr, fn, args):
    with pytest.raises(Exception) as info:
        make_jaxpr(fn)(*args)
    return info.value


BAD = {
    "int operands": ("atan2", (I, I)),
    "float32 and float16": ("atan2", (X, X.astype(np.float16))),
    "float32 and complex64": ("atan2", (X, X.astype(np.complex64))),
    "bool operands": ("atan2", (I > 0, I > 0)),
    "a list": ("arctan2", ([1.0, 2.0], X[:2])),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_dtype_fails_with_jaxs_error(case):
    name, args = BAD[case]
    ours_mod, theirs_mod = (s02.lax, jax.lax) if name == "atan2" else (snp, jnp)
    ours = _error(s02.make_jaxpr, getattr(ours_mod, name), args)
    theirs = _error(jax.make_jaxpr, getattr(theirs_mod, name), args)
    assert type(ours).__name__ == type(theirs).__name__
    assert canonical_error_text(str(ours)) == canonical_error_text(str(theirs))


def test_the_error_messages_name_atan2_and_point_at_arctan2():
    with pytest.raises(TypeError) as info:
        s02.lax.atan2(I, I)
    assert canonical_error_text(str(info.value)) == (
        "atan2 does not accept dtype int32 at position 0. Accepted dtypes at position 0 are "
        "subtypes of complexfloating, floating.")
    with pytest.raises(TypeError) as info:
        s02.lax.atan2(X, X.astype(np.float16))
    assert str(info.value) == (
        "lax.atan2 requires arguments to have the same dtypes, got float32, float16. (Tip: "
        "jnp.arctan2 is a similar function that does automatic type promotion on inputs).")


def test_the_eager_impl_is_numpys_arctan2_with_the_numerator_first():
    np.testing.assert_array_equal(s02.lax.atan2_p.impl(X, Y), np.arctan2(X, Y))
    assert s02.lax.atan2_p.impl(X, Y).dtype == np.float32
