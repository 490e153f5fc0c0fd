"""Tracers and arrays as JAX's: `.real`, `.imag`, `.conj()`; keyword arguments named as JAX names
them; the message of a leaked tracer."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from stages.s02_tracing import lax as olax
from stages.s02_tracing import make_jaxpr
from stages.s02_tracing import numpy as snp
from stages.s02_tracing.errors import UnexpectedTracerError

pytestmark = pytest.mark.oracle

PARTS = {
    "real": lambda x: x.real, "imag": lambda x: x.imag, "conj": lambda x: x.conj(),
    "conjugate": lambda x: x.conjugate(), "imag-of-conj": lambda x: x.conj().imag * 2,
}
DTYPES = [np.float32, np.int32, np.complex64, np.bool_]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("part", list(PARTS))
def test_complex_parts_of_a_tracer_stage_as_jax(part, dtype):
    x = (np.arange(3) * (1 + 2j)).astype(dtype) if dtype is np.complex64 else \
        np.arange(3).astype(dtype)
    assert str(make_jaxpr(PARTS[part])(x)) == str(jax.make_jaxpr(PARTS[part])(x))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("part", list(PARTS))
def test_complex_parts_of_an_array_equal_jax(part, dtype):
    x = (np.arange(3) * (1 - 2j)).astype(dtype) if dtype is np.complex64 else \
        np.arange(3).astype(dtype)
    ours, theirs = PARTS[part](snp.asarray(x)), PARTS[part](jnp.asarray(x))
    assert ours.dtype == theirs.dtype
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


def kw_sum(x, **kw):
    return x + kw["a"] + kw["b"]["c"]


def test_keywords_collected_by_var_keyword_are_named_like_jax():
    one = np.float32(1)
    ours = make_jaxpr(kw_sum)(one, a=one, b={"c": one}).jaxpr.debug_info.arg_names
    theirs = jax.make_jaxpr(kw_sum)(one, a=one, b={"c": one}).jaxpr.debug_info.arg_names
    assert ours == theirs == ("x", "kw['a']", "kw['b']['c']")


def _leak_and_use(make_jaxpr, lax):
    leaked = []

    def f(x):
        y = lax.sin(x)
        leaked.append(y)
        return x

    make_jaxpr(f)(np.float32(1))
    with pytest.raises(Exception) as info:
        lax.add(np.float32(1), leaked[0])
    return info.type.__name__, str(info.value)


def test_a_leaked_tracer_says_what_jax_says():
    ours = _leak_and_use(make_jaxpr, olax)
    theirs = _leak_and_use(jax.make_jaxpr, jax.lax)
    assert ours[0] == theirs[0] == UnexpectedTracerError.__name__
    # JAX also shows the line that created the value, between dividers; our tracers do not
    # record it. JAX's make_jaxpr traces for jit; ours says make_jaxpr.
    want = re.sub(r"\n-{30}\n.*\n-{30}\n(?=\nTo catch)", "", theirs[1], flags=re.S)
    assert ours[1].replace(" traced for make_jaxpr.", " traced for jit.") == want
    assert "JAX_CHECK_TRACER_LEAKS" in ours[1]
