"""The printer against MLIR's: float digits, dense elements, SSA names in nested regions,
symbol names of private functions."""

from __future__ import annotations

import re

import jax
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import stages.s02_tracing as s02
import stages.s06_control_flow as s06
import stages.s08_lowering as s08
from shared.xla_runner import run_text
from stages.s08_lowering import ir
from stages.s08_lowering.asm_printer import _SSANames
from stages.s08_lowering.attributes import dense_elements, format_float

lax, jnp = s02.lax, s02.numpy


def _jax_dense(x: np.ndarray) -> str:
    """How JAX prints `x` as a closed-over constant: the `dense<...>` of its constant op."""
    text = jax.jit(lambda y: y + x).lower(np.zeros(x.shape, x.dtype)).as_text()
    return re.search(r"stablehlo\.constant (dense<.*>) : tensor", text).group(1)


SPECIAL_F32 = np.array([0.0, -0.0, 1.0, -2.5, 0.1, 1e-5, 1e20, 3.4028235e38, 1.4e-45, 1.5e-40,
                        1234567.0, 12345678.0, 123456789.0, 0.899999976, np.inf, -np.inf,
                        np.nan, 1e-7, 65504.0, 7.0e-3], np.float32)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16],
                         ids=["float32", "float16", "bfloat16"])
def test_special_floats_print_as_mlir_prints_them(dtype):
    with np.errstate(over="ignore"):  # 1e20 and 3.4e38 are inf in half precision
        x = SPECIAL_F32.astype(dtype)
    assert dense_elements(x) == _jax_dense(x)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(0, 2**32 - 1), min_size=2, max_size=60))
def test_random_float32_bit_patterns_print_as_mlir_prints_them(bits):
    x = np.array(bits, np.uint32).view(np.float32)
    assert dense_elements(x) == _jax_dense(x)


@settings(max_examples=10, deadline=None)
@given(st.lists(st.integers(0, 2**16 - 1), min_size=2, max_size=60))
def test_random_half_precision_bit_patterns_print_as_mlir_prints_them(bits):
    for dtype in (np.float16, ml_dtypes.bfloat16):
        x = np.array(bits, np.uint16).view(dtype)
        assert dense_elements(x) == _jax_dense(x)


def test_integers_bools_and_splats():
    assert dense_elements(np.array([1, 1, 1], np.int32)) == "dense<1>"
    assert dense_elements(np.array([[1, -2], [3, 4]], np.int8)) == "dense<[[1, -2], [3, 4]]>"
    assert dense_elements(np.array([4294967295], np.uint32)) == "dense<4294967295>"
    assert dense_elements(np.array([True, False])) == "dense<[true, false]>"
    assert format_float(0x7FC00000, "float32") == "0x7FC00000"


@pytest.mark.parametrize("shape", [(0,), (0, 4), (4, 0), (2, 0, 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_, np.complex64])
def test_a_zero_size_constant_prints_as_mlir_prints_it(shape, dtype):
    """`dense<>` whatever the shape: XLA rejects `dense<[]>` for a 0x4 tensor."""
    x = np.zeros(shape, dtype)
    assert dense_elements(x) == _jax_dense(x) == "dense<>"
    y = np.zeros(shape, dtype)
    text = s08.lower(lambda y: lax.eq(y, x), y).as_text()
    theirs = jax.jit(lambda y: y == x).lower(y).as_text()
    assert text.split("\n", 2)[2] == theirs.split("\n", 2)[2]  # past the @main line
    assert run_text(text, [y])[0].shape == shape


W = np.arange(400, dtype=np.float32)


@pytest.mark.parametrize("x", [W[:8:2], W[7::-1], np.ones(8, np.float32)[::2], W[::2],
                               (W[:8] + 1j * W[:8]).astype(np.complex64)[::3],
                               W[:64].reshape(8, 8)[:, ::3], W[:8].astype(np.int32)[::2]],
                         ids=["strided", "reversed", "splat", "hex", "complex", "columns",
                              "int32"])
def test_a_strided_constant_prints_as_its_contiguous_copy(x):
    assert dense_elements(x) == _jax_dense(x)
    y = np.zeros(x.shape, x.dtype)
    text = s08.lower(lambda y: lax.add(y, x), y).as_text()
    np.testing.assert_array_equal(run_text(text, [y])[0], x)


# --8<-- [start:nested]
def nested(lib, cf):
    """Constants and loops at three depths: every name the printer gives must be MLIR's."""
    def f(x, n):
        def outer_body(c):
            i, y = c
            y = cf.cond(lib.gt(lib.reduce_sum(y, (0,)), 0.0),
                        lambda y: cf.while_loop(lambda v: lib.lt(lib.reduce_max(v, (0,)), 4.0),
                                                lambda v: lib.mul(v, 2.0), y),
                        lambda y: lib.sub(y, 1.0), y)
            return lib.add(i, 1), lib.add(y, 0.5)
        _, y = cf.while_loop(lambda c: lib.lt(c[0], n), outer_body, (0, x))
        return y, lib.argmax(x, 0, np.int32), lib.cumsum(x, 0), lib.cumsum(x, 0, reverse=True)
    return f
# --8<-- [end:nested]


def test_names_in_nested_regions_and_private_functions_are_mlirs():
    x, n = np.array([0.5, -1.0, 2.0], np.float32), np.int32(3)
    ours = s08.lower(nested(lax, s06), x, n).as_text()
    theirs = jax.jit(nested(jax.lax, jax.lax)).lower(x, n).as_text()
    assert ours == theirs
    assert "@cumsum_0(" in ours and "%c_3" in ours
    expected = [np.asarray(v) for v in jax.jit(nested(jax.lax, jax.lax))(x, n)]
    for a, e in zip(run_text(ours, [x, n]), expected, strict=True):
        np.testing.assert_array_equal(a, e)


def test_a_renamed_name_that_is_itself_taken_is_renamed_again():
    """MLIR's SSANameState keeps trying `name_<k>` until one is free: a third `x`, after `x`
    and an `x_0` that was asked for by name, is `x_1`, never a second `x_0`. (JAX's name hints
    never end in `_<k>`, so the ops are built by hand.)"""
    f = ir.FuncOp("main", [], [])
    with ir.InsertionPoint(f.body.block):
        ops = [ir.Operation("test.op", [], ["tensor<f32>"], None, result_name=name)
               for name in ("x", "x_0", "x")]
    names = _SSANames(f).names
    assert [names[op.result] for op in ops] == ["%x", "%x_0", "%x_1"]
