"""clz lowers to `stablehlo.count_leading_zeros`, bitcast_convert_type to
`stablehlo.bitcast_convert`: our module text is jax.jit(f).lower(...)'s, and the compiled module
computes JAX's values bit for bit, on every integer width and each way a bitcast reshapes."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import stages.s02_tracing as s02
import stages.s04_autodiff as s04
import stages.s05_vmap as s05
import stages.s08_lowering as s08

from .conftest import Program, jax_text, jax_values, lower_ours, run_ours

pytestmark = pytest.mark.oracle

I32 = np.array([0, 1, -1, 7, 2**20, -(2**31), 2**31 - 1], np.int32)


def _program(name, make, *args):
    ours, theirs = make(s02.lax), make(jax.lax)
    ours.__name__ = theirs.__name__ = name
    return Program(name, ours, theirs, args)


def _clz(lax):
    return lambda x: lax.clz(x)


def _bitcast(new_dtype):
    return lambda lax: lambda x: lax.bitcast_convert_type(x, new_dtype)


def _float_from_clz(lax):
    # a float's bits built from a count and a shift, the way gumbel's "highest" mode builds them
    def f(x):
        exponent = lax.shift_left(np.uint32(126) - lax.clz(x), np.uint32(23))
        return lax.bitcast_convert_type(exponent, np.float32)
    return f


PROGRAMS = [
    _program("clz_int32", _clz, I32),
    _program("clz_int8", _clz, I32.astype(np.int8)),
    _program("clz_int16", _clz, I32.astype(np.int16)),
    _program("clz_uint8", _clz, I32.astype(np.uint8)),
    _program("clz_uint16", _clz, I32.astype(np.uint16)),
    _program("clz_uint32", _clz, I32.astype(np.uint32)),
    _program("clz_scalar", _clz, np.int32(5)),
    _program("clz_python_int", _clz, 5),
    _program("bitcast_same_width", _bitcast(np.float32), I32),
    _program("bitcast_narrower", _bitcast(np.uint8), I32.reshape(7, 1)),
    _program("bitcast_wider", _bitcast(np.uint32), I32.view(np.uint8).reshape(7, 4)),
    _program("bitcast_float16_to_int16", _bitcast(np.int16),
             np.array([1.0, -2.5, np.inf], np.float16)),
    _program("float_from_clz", _float_from_clz, np.arange(1, 9, dtype=np.uint32)),
]


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_our_text_is_jaxs(program):
    assert lower_ours(program) == jax_text(program)


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_the_compiled_module_computes_jaxs_bits(program):
    ours, theirs = run_ours(program), jax_values(program)
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs, strict=True):
        assert (o.dtype, o.shape) == (t.dtype, t.shape)
        assert np.ascontiguousarray(o).tobytes() == np.ascontiguousarray(t).tobytes()


def test_the_lowerings_are_one_op_each():
    assert "%0 = stablehlo.count_leading_zeros %arg0 : tensor<7xi32>" in lower_ours(PROGRAMS[0])
    assert ("%0 = stablehlo.bitcast_convert %arg0 : (tensor<7x4xui8>) -> tensor<7xui32>"
            in lower_ours(PROGRAMS[10]))
    assert {s02.lax.clz_p, s02.lax.bitcast_convert_type_p} <= set(s08.lowering_rules)


COMPOSED = [
    Program("vmap_clz", s05.vmap(s02.lax.clz, 1), jax.vmap(jax.lax.clz, 1),
            (I32[:6].reshape(2, 3),)),
    Program("vmap_bitcast_narrower", s05.vmap(_bitcast(np.uint16)(s02.lax), 1),
            jax.vmap(_bitcast(np.uint16)(jax.lax), 1), (I32[:6].reshape(2, 3),)),
    Program("grad_through_a_bitcast",
            s04.grad(lambda x: x * s02.lax.bitcast_convert_type(
                s02.lax.bitcast_convert_type(x, np.int32) + np.int32(1), np.float32)),
            jax.grad(lambda x: x * jax.lax.bitcast_convert_type(
                jax.lax.bitcast_convert_type(x, np.int32) + np.int32(1), np.float32)),
            (np.float32(1.5),)),
]
for _p in COMPOSED:
    _p.ours.__name__ = _p.theirs.__name__ = _p.name


@pytest.mark.parametrize("program", COMPOSED, ids=[p.name for p in COMPOSED])
def test_under_vmap_and_grad_the_text_and_values_are_jaxs(program):
    assert lower_ours(program) == jax_text(program)
    for o, t in zip(run_ours(program), jax_values(program), strict=True):
        assert np.ascontiguousarray(o).tobytes() == np.ascontiguousarray(t).tobytes()
