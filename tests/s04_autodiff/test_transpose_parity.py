"""The transposes of concatenate and slice print as JAX's: concatenate's is one `split`
equation (not a slice per operand), slice's a `pad` whose high (and interior) padding numpy
computed, printed as `np.int64(2)` as JAX prints it. Values too."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import stages.s02_tracing as s02
import stages.s04_autodiff as s04
from shared.testing import assert_same_typed_values

pytestmark = pytest.mark.oracle

V3 = np.array([0.5, -1.0, 2.0], np.float32)
M32 = np.arange(6, dtype=np.float32).reshape(3, 2) / 4
V7 = np.linspace(-1, 1, 7, dtype=np.float32)

# name -> (f(jnp, lax), args); each a scalar function of its first argument
CASES = {
    "concat_scaled": (lambda np_, lax: lambda x: np_.sum(np_.concatenate([x, 2 * x]) ** 2),
                      (V3,)),
    "concat_three_axis0": (
        lambda np_, lax: lambda x: np_.sum(np_.concatenate([x, 2 * x, x[:1]], axis=0) ** 2),
        (M32,)),
    "concat_axis1": (lambda np_, lax: lambda x: np_.sum(np_.sin(np_.concatenate([x, x], 1))),
                     (M32,)),
    "concat_with_constant": (
        lambda np_, lax: lambda x: np_.sum(np_.concatenate([np_.ones(2, np.float32), x]) ** 3),
        (V3,)),
    "lax_concatenate": (lambda np_, lax: lambda x: np_.sum(lax.concatenate([x, x * x], 0)),
                        (V3,)),
    "index_0": (lambda np_, lax: lambda x: x[0], (V3,)),
    # an int32 index: each case's cotangent is selected where the index equals its number
    "select_n_int_index": (lambda np_, lax: lambda x: np_.sum(lax.select_n(
        np.array([2, 0, 1], np.int32), x, x * 2.0, np_.sin(x))), (V3,)),
    "select_n_bool_index": (lambda np_, lax: lambda x: np_.sum(lax.select_n(
        np.array([True, False, True]), x, x * 3.0)), (V3,)),
    "index_last_row": (lambda np_, lax: lambda x: np_.sum(x[-1]), (M32,)),
    "slice_1_3": (lambda np_, lax: lambda x: np_.sum(x[1:3]), (V7,)),
    "slice_strided": (lambda np_, lax: lambda x: np_.sum(x[1:5:2]), (V7,)),
    "slice_2d": (lambda np_, lax: lambda x: np_.sum(x[1:, :1] * 3.0), (M32,)),
    "lax_slice_strided_2d": (
        lambda np_, lax: lambda x: np_.sum(lax.slice(x, (0, 0), (3, 2), (2, 1)) ** 2), (M32,)),
    "lax_slice_empty": (lambda np_, lax: lambda x: np_.sum(lax.slice(x, (2,), (2,))) + x[0],
                        (V3,)),
}


def _pair(name):
    make, args = CASES[name]
    return make(s02.numpy, s02.lax), make(jnp, jax.lax), args


@pytest.mark.parametrize("name", CASES)
def test_grad_jaxpr_prints_as_jaxs_and_values_agree(name):
    ours, theirs, args = _pair(name)
    assert str(s02.make_jaxpr(s04.grad(ours))(*args)) == \
        str(jax.make_jaxpr(jax.grad(theirs))(*args))
    assert_same_typed_values(s04.grad(ours)(*args), jax.grad(theirs)(*args))


@pytest.mark.parametrize("name", CASES)
def test_vjp_of_the_linearized_function_prints_as_jaxs(name):
    ours, theirs, args = _pair(name)

    def pullback(vjp, f):
        return lambda x: vjp(f, x)[1](np.float32(1.5))

    assert str(s02.make_jaxpr(pullback(s04.vjp, ours))(*args)) == \
        str(jax.make_jaxpr(pullback(jax.vjp, theirs))(*args))


def test_linear_transpose_of_concatenate_is_one_split():
    f = lambda np_: lambda x, y: np_.concatenate([x, y])
    primals = (V3, V7)
    ours = s04.linear_transpose(f(s02.numpy), *primals)
    theirs = jax.linear_transpose(f(jnp), *primals)
    ct = np.arange(10, dtype=np.float32)
    assert_same_typed_values(ours(ct), theirs(ct))
    assert str(s02.make_jaxpr(ours)(ct)) == str(jax.make_jaxpr(theirs)(ct))
    assert "split[axis=0 sizes=(3, 7)]" in str(s02.make_jaxpr(ours)(ct))


def test_split_is_linear_and_transposes_to_a_concatenate():
    f = lambda lax: lambda x: lax.split(x, (1, 2, 3), 0)
    x = np.arange(6, dtype=np.float32)
    t = np.ones(6, np.float32)
    assert_same_typed_values(s04.jvp(f(s02.lax), (x,), (t,)), jax.jvp(f(jax.lax), (x,), (t,)))
    g = lambda np_, lax: lambda x: np_.sum(lax.split(x, (2, 4), 0)[1] ** 2)
    assert_same_typed_values(s04.grad(g(s02.numpy, s02.lax))(x), jax.grad(g(jnp, jax.lax))(x))
    assert str(s02.make_jaxpr(s04.grad(g(s02.numpy, s02.lax)))(x)) == \
        str(jax.make_jaxpr(jax.grad(g(jnp, jax.lax)))(x))
