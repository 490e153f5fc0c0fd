"""Complex numbers through the elementwise primitives and autodiff, as in JAX: values, printed
jaxprs, holomorphic=True, and JAX's refusals (linear_transpose's dtype and cotangent checks)."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import stages.s02_tracing as s02
import stages.s04_autodiff as s04
from shared.testing import assert_same_typed_values
from stages.s01_pytrees import tree_leaves, tree_structure
from stages.s02_tracing import lax as olax
from stages.s02_tracing import make_jaxpr
from stages.s02_tracing import numpy as jnp

Z = np.complex64(1 + 1j)
ZS = np.array([1 + 1j, 0.5 - 2j, -1 + 0.25j], np.complex64)


def _outcome(fn):
    try:
        return "ok", fn()
    except (TypeError, ValueError) as err:
        return type(err).__name__, str(err)


def same(ours_fn, theirs_fn, rtol=2e-5):
    ours, theirs = _outcome(ours_fn), _outcome(theirs_fn)
    assert ours[0] == theirs[0], (ours, theirs)
    if ours[0] == "ok":
        assert_same_typed_values(ours[1], theirs[1], rtol=rtol)
    else:
        assert ours[1] == theirs[1]


PRIMITIVES = {
    "real": lambda lax, z: lax.real(z),
    "imag": lambda lax, z: lax.imag(z),
    "conj": lambda lax, z: lax.conj(z),
    "conj_of_a_float": lambda lax, z: lax.conj(np.float32(2.0)),
    "complex": lambda lax, z: lax.complex(lax.real(z), np.float32(2.0)),
    "abs": lambda lax, z: lax.abs(z),
    "sign": lambda lax, z: lax.sign(z),
    "sqrt_exp_log": lambda lax, z: lax.log(lax.exp(lax.sqrt(z))),
    "tanh": lambda lax, z: lax.tanh(z),
}


@pytest.mark.parametrize("name", list(PRIMITIVES))
def test_complex_primitives_compute_and_print_as_jax(name):
    f = PRIMITIVES[name]
    same(lambda: f(olax, ZS), lambda: f(jax.lax, ZS))
    ours = make_jaxpr(lambda z: f(olax, z))(ZS)
    theirs = jax.make_jaxpr(lambda z: f(jax.lax, z))(ZS)
    assert str(ours) == str(theirs)


REAL_VALUED = {
    "abs": lambda np_: lambda z: np_.abs(z),
    "abs_of_a_square": lambda np_: lambda z: np_.abs(z * z),
    "abs_of_sin_and_exp": lambda np_: lambda z: np_.abs(np_.sin(z)) + np_.abs(np_.exp(z)),
    "real_and_imag": lambda np_: lambda z: np_.real(z) + 2 * np_.imag(z),
    "abs_of_a_conjugate_product": lambda np_: lambda z: np_.abs(np_.sqrt(z) * np_.conj(z)),
}


@pytest.mark.parametrize("name", list(REAL_VALUED))
def test_grad_of_a_real_function_of_a_complex_input_is_jaxs(name):
    f = REAL_VALUED[name]
    same(lambda: s04.grad(f(jnp))(Z), lambda: jax.grad(f(jjnp))(Z))
    assert str(make_jaxpr(s04.grad(f(jnp)))(Z)) == str(jax.make_jaxpr(jax.grad(f(jjnp)))(Z))


@pytest.mark.parametrize("name, z", [("complex_input", Z), ("float_input", np.float32(1.0))])
def test_grad_with_holomorphic_is_jaxs(name, z):
    same(lambda: s04.grad(lambda z: jnp.sin(z) * z, holomorphic=True)(z),
         lambda: jax.grad(lambda z: jjnp.sin(z) * z, holomorphic=True)(z))
    same(lambda: s04.grad(jnp.abs, holomorphic=True)(z),
         lambda: jax.grad(jjnp.abs, holomorphic=True)(z))  # a real output is refused
    same(lambda: s04.grad(lambda z: jnp.sin(z))(z),
         lambda: jax.grad(lambda z: jjnp.sin(z))(z))  # a complex output needs holomorphic


def test_jvp_and_vjp_of_complex_functions_are_jaxs():
    f = (lambda np_: lambda z: np_.log(np_.exp(z) * z) * np_.conj(z))
    same(lambda: s04.jvp(f(jnp), (ZS,), (ZS,)), lambda: jax.jvp(f(jjnp), (ZS,), (ZS,)))
    ct = ZS[::-1]
    same(lambda: s04.vjp(f(jnp), ZS)[1](ct), lambda: jax.vjp(f(jjnp), ZS)[1](ct))
    dot = (lambda np_: lambda z: np_.dot(z, z * (2 + 1j)))
    same(lambda: s04.vjp(dot(jnp), ZS)[1](np.complex64(1 - 1j)),
         lambda: jax.vjp(dot(jjnp), ZS)[1](np.complex64(1 - 1j)))


@pytest.mark.parametrize("fun, primal, ct", [
    (lambda x: x, 1.0, 1j),
    (lambda x: x, 1.0, np.float16(1.0)),
    (lambda x: x * 2.0, 1, 1.0),
    (lambda x: x, 1, 1),
    (lambda x: x * (1 + 2j), np.complex64(1), np.complex64(1 - 1j)),
    (lambda x: x * 2.0, np.ones(2, np.float32), np.ones(3, np.float32)),
], ids=["complex_ct_for_a_float", "float16_ct", "int_to_float", "int_to_int", "complex",
        "wrong_shape"])
def test_linear_transpose_checks_and_computes_as_jax(fun, primal, ct):
    same(lambda: s04.linear_transpose(fun, primal)(ct),
         lambda: jax.linear_transpose(fun, primal)(ct))


@pytest.mark.parametrize("shape, dtype, weak, ct", [
    ((2,), np.float32, False, np.ones(2, np.float32)),
    ((2,), np.float32, True, np.ones(2, np.float32)),
    ((2,), np.float64, False, np.ones(2, np.float32)),
    ((), np.float32, True, 1.0),
    ((), np.complex64, False, np.complex64(1 - 1j)),
], ids=["f32", "weak_f32", "f64_is_f32", "weak_scalar", "complex"])
def test_linear_transpose_takes_shape_dtype_structs_for_primals(shape, dtype, weak, ct):
    ours = s02.ShapeDtypeStruct(shape, dtype, weak_type=weak)
    theirs = jax.ShapeDtypeStruct(shape, dtype, weak_type=weak)
    same(lambda: s04.linear_transpose(lambda x: x * 2, ours)(ct),
         lambda: jax.linear_transpose(lambda x: x * 2, theirs)(ct))


def test_linear_transpose_is_a_pytree_of_its_constants():
    w = np.arange(3, dtype=np.float32)
    ours = s04.linear_transpose(lambda x: x * w, w)
    theirs = jax.linear_transpose(lambda x: x * w, w)
    assert_same_typed_values(tree_leaves(ours), jax.tree_util.tree_leaves(theirs))
    assert str(tree_structure(ours)).startswith("PyTreeDef(CustomNode(Partial[")
