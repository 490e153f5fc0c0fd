"""Rules at the values they single out, against JAX: complex comparisons (whose i1 result type
is built from a complex operand's), sorts that keep -0.0, NaN and -NaN bit for bit,
cumlogsumexp and its gradient over infinities, argmax of complex numbers refused as JAX
refuses it. Their texts are checked in test_fidelity (RULE_PROGRAMS)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import stages.s02_tracing as s02
import stages.s04_autodiff as s04
import stages.s08_lowering as s08
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
