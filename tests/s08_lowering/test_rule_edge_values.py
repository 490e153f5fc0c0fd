"""Rules at the values they single out, against JAX: complex comparisons (whose i1 result type
is built from a complex operand's), sorts that keep -0.0, NaN and -NaN bit for bit,
cumlogsumexp and its gradient over infinities, argmax of complex numbers refused as JAX
refuses it (their texts are checked in test_fidelity, RULE_PROGRAMS); complex of two parts
and the max and min identities of bfloat16, text and values here."""

from __future__ import annotations

import jax
import ml_dtypes
import numpy as np
import pytest

import stages.s02_tracing as s02
import stages.s04_autodiff as s04
import stages.s08_lowering as s08
from shared.xla_runner import run_text
from stages.s02_tracing import linear_util as lu
from stages.s02_tracing import partial_eval as pe
from stages.s08_lowering import mlir

from .conftest import RULE_PROGRAMS, Program, jax_text, jax_values, lower_ours, run_ours

C64 = np.array([1 + 2j, 0j, complex(np.nan, 1)], np.complex64)
INF = np.array([-np.inf, -np.inf, np.inf, np.inf, 1.0], np.float32)


@pytest.mark.parametrize(("ir_type", "dims"), [
    ("tensor<2x3xf32>", "2x3x"), ("tensor<f32>", ""), ("tensor<2xcomplex<f32>>", "2x"),
    ("tensor<complex<f64>>", ""), ("tensor<0x4xi1>", "0x4x"),
])
def test_the_dims_of_a_tensor_type_stop_at_its_element_type(ir_type, dims):
    assert mlir.tensor_dims(ir_type) == dims


def test_a_complex_comparison_yields_a_tensor_of_i1():
    (program,) = [p for p in RULE_PROGRAMS if p.name == "eq_ne_complex"]
    text = lower_ours(program)
    assert "complexi1" not in text and "-> tensor<6xi1>" in text
    assert text == jax_text(program)


@pytest.mark.parametrize("program", [p for p in RULE_PROGRAMS if p.name.startswith("sort")],
                         ids=lambda p: p.name)
def test_a_sort_is_jaxs_bit_for_bit(program):
    """The comparator canonicalizes only its keys: -0.0 and -NaN leave the sort unchanged."""
    ours, theirs = run_ours(program), jax_values(program)
    for a, e in zip(ours, theirs, strict=True):
        assert a.dtype == e.dtype and a.shape == e.shape
        assert a.tobytes() == e.tobytes(), (a, e)


def test_cumlogsumexp_of_infinities_is_jaxs():
    ours = s02.lax.cumlogsumexp
    program = Program("cumlogsumexp", lambda a: ours(a), lambda a: jax.lax.cumlogsumexp(a),
                      (INF,))
    (got,), (expected,) = run_ours(program), jax_values(program)
    np.testing.assert_array_equal(got, [-np.inf, -np.inf, np.inf, np.inf, np.inf])
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("last", [1, 3, 4])
def test_the_gradient_of_cumlogsumexp_over_infinities_is_jaxs(last):
    program = Program(f"grad_cumlogsumexp_{last}",
                      s04.grad(lambda a: s02.lax.cumlogsumexp(a)[last]),
                      jax.grad(lambda a: jax.lax.cumlogsumexp(a)[last]), (INF,))
    (got,), (expected,) = run_ours(program), jax_values(program)
    np.testing.assert_allclose(got, expected, rtol=1e-6)  # NaN where JAX has NaN


@pytest.mark.parametrize(("ours", "theirs"), [(s02.lax.argmax, jax.lax.argmax),
                                              (s02.lax.argmin, jax.lax.argmin)])
def test_argmax_of_complex_numbers_fails_when_lowered_as_in_jax(ours, theirs):
    closed = s02.make_jaxpr(lambda a: ours(a, 0, np.int32))(C64)  # traced: it is lowering
    with pytest.raises(TypeError) as mine:
        s08.lower_jaxpr(closed, "f")
    with pytest.raises(TypeError) as jaxs:
        jax.jit(lambda a: theirs(a, 0, np.int32)).lower(C64)
    assert str(mine.value) == str(jaxs.value)


F32 = np.array([1.0, -2.5, 3.0], np.float32)
COMPLEX_PROGRAMS = {
    "complex": lambda lax, grad: lambda a: lax.complex(a, a),
    "complex_of_a_scalar": lambda lax, grad: lambda a: lax.complex(a, np.float32(2.0)),
    "complex_of_scalars": lambda lax, grad: lambda a: lax.complex(a[0], a[1]),
    "grad_through_complex": lambda lax, grad: grad(lambda a: lax.reduce_sum(
        lax.real(lax.mul(lax.complex(a, a), lax.complex(a, -a))), (0,))),
}


@pytest.mark.parametrize("name", sorted(COMPLEX_PROGRAMS))
def test_complex_of_two_parts_prints_only_its_result_type(name):
    """`stablehlo.complex %a, %b : tensor<3xcomplex<f32>>`, as MLIR prints the op."""
    build = COMPLEX_PROGRAMS[name]
    program = Program(name, build(s02.lax, s04.grad), build(jax.lax, jax.grad), (F32,))
    text = lower_ours(program)
    assert "stablehlo.complex" in text and "-> tensor<3xcomplex" not in text
    assert text == jax_text(program)
    for a, e in zip(run_ours(program), jax_values(program), strict=True):
        np.testing.assert_array_equal(a, e)


@pytest.mark.parametrize(("ours", "theirs"), [(s02.lax.reduce_max, jax.lax.reduce_max),
                                              (s02.lax.reduce_min, jax.lax.reduce_min)])
def test_max_and_min_of_bfloat16_start_from_an_infinity_as_in_jax(ours, theirs):
    """bfloat16's numpy kind is "V": its identity is still -inf (max) or inf (min). The jaxpr
    is traced on an aval here, as it would be from a bfloat16 array."""
    aval = s02.core.ShapedArray((3,), np.dtype(ml_dtypes.bfloat16))
    closed = pe.trace_to_closed_jaxpr(lu.wrap_init(lambda a: [ours(a, (0,))]), [aval])
    x = np.array([1.5, -3.0, 2.0], ml_dtypes.bfloat16)
    text = s08.lower_jaxpr(closed, "f").as_text()
    jitted = jax.jit(lambda a: theirs(a, (0,)))
    assert text.split("\n", 2)[2] == jitted.lower(x).as_text().split("\n", 2)[2]  # past @main
    (got,) = run_text(text, [x])
    assert got.tobytes() == np.asarray(jitted(x)).tobytes()
