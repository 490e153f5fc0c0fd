"""square, JAX's primitive for x * x (jnp.square, var's deviations, the jvps of tan, erf and
atan2): a float or complex one lowers to `chlo.square`, an integer one to a multiply, as JAX's
do; our module text is jax.jit(f).lower(...)'s and the compiled module computes JAX's values,
an integer's wrap-around included."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import stages.s02_tracing as s02
import stages.s04_autodiff as s04
import stages.s05_vmap as s05

from .conftest import Program, jax_text, jax_values, lower_ours, run_ours

pytestmark = pytest.mark.oracle

X = np.array([-1.5, 0.0, 0.25, 3.0e19, -2.0], np.float32)  # 3e19 squared is inf in float32
C = np.array([1 + 1j, 2 - 3j, 0.5j, -1e-20 + 1e20j], np.complex64)


def _named(name, ours, theirs, *args):
    ours.__name__ = theirs.__name__ = name
    return Program(name, ours, theirs, args)


PROGRAMS = [
    Program("square_f32", s02.numpy.square, jjnp.square, (X,)),
    Program("square_f16", s02.numpy.square, jjnp.square, (X[:3].astype(np.float16),)),
    Program("square_c64", s02.numpy.square, jjnp.square, (C,)),
    Program("square_i32_wraps", s02.numpy.square, jjnp.square,
            (np.array([-3, 46341, 2**31 - 1], np.int32),)),
    Program("square_u8_wraps", s02.lax.square, jax.lax.square, (np.array([3, 16, 200], np.uint8),)),
    _named("grad_of_square", s04.grad(lambda x: s02.numpy.sum(s02.numpy.square(x))),
           jax.grad(lambda x: jjnp.sum(jjnp.square(x))), X[:3]),
    _named("vmap_square", s05.vmap(s02.lax.square), jax.vmap(jax.lax.square), X.reshape(5, 1)),
]


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_our_text_is_jaxs(program):
    assert lower_ours(program) == jax_text(program)


def test_a_float_square_is_chlo_and_an_integer_one_a_multiply():
    assert "chlo.square" in lower_ours(PROGRAMS[0])
    text = lower_ours(PROGRAMS[3])
    assert "stablehlo.multiply %arg0, %arg0" in text and "chlo" not in text


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_the_compiled_module_computes_jaxs_values(program):
    ours, theirs = run_ours(program), jax_values(program)
    for o, t in zip(ours, theirs, strict=True):
        assert o.dtype == t.dtype and o.shape == t.shape
        np.testing.assert_array_equal(o, t)


def test_eager_square_is_jax_s_for_every_numeric_dtype():
    for x in (X, C, np.array([200, 3], np.uint8), np.array([-3, 46341], np.int32)):
        ours, theirs = s02.numpy.square(x), jjnp.square(x)
        assert np.asarray(ours).dtype == np.asarray(theirs).dtype
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
