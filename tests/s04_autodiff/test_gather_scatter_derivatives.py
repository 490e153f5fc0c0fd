"""Derivatives through gather and the scatters, against jax.jvp/jax.grad: values and jaxprs."""

from __future__ import annotations

from types import SimpleNamespace

import jax
import numpy as np
import pytest

import stages.s02_tracing as s02
import stages.s04_autodiff as s04
from shared.testing import RTOL_REDUCTION, assert_same_typed_values

OURS = SimpleNamespace(lax=s02.lax, make_jaxpr=s02.make_jaxpr, jvp=s04.jvp, grad=s04.grad)
THEIRS = SimpleNamespace(lax=jax.lax, make_jaxpr=jax.make_jaxpr, jvp=jax.jvp, grad=jax.grad)

f32 = np.float32
_rng = np.random.default_rng(22)
X = _rng.standard_normal((5, 4)).astype(f32)
U = _rng.standard_normal((4, 4)).astype(f32)
TX, TU = _rng.standard_normal((5, 4)).astype(f32), _rng.standard_normal((4, 4)).astype(f32)
UNIQUE = np.array([[1], [4], [0], [3]], np.int32)
REPEATED = np.array([[1], [4], [1], [7]], np.int32)


def _dn(lax):
    return lax.ScatterDimensionNumbers((1,), (0,), (0,))


def _gather(lax, x, i, mode=None):
    return lax.gather(x, i, lax.GatherDimensionNumbers((1,), (0,), (0,)), (1, 4), mode=mode)


# id -> fn(lax, x, u) -> array, differentiated in x and u
FUNCTIONS = {
    "gather": lambda lax, x, u: _gather(lax, x, REPEATED, "clip") * u,
    "gather_fill": lambda lax, x, u: _gather(lax, x, REPEATED, "fill") * u,
    "scatter_add": lambda lax, x, u: lax.scatter_add(x, REPEATED, u, _dn(lax)),
    "scatter_mul_unique": lambda lax, x, u: lax.scatter_mul(x, UNIQUE, u, _dn(lax),
                                                            unique_indices=True),
    "scatter_unique": lambda lax, x, u: lax.scatter(x, UNIQUE, u, _dn(lax),
                                                    unique_indices=True),
    "scatter_repeated": lambda lax, x, u: lax.scatter(x, REPEATED[:3], u[:3], _dn(lax)),
    "scatter_max": lambda lax, x, u: lax.scatter_max(x, REPEATED, u, _dn(lax)),
    "scatter_min": lambda lax, x, u: lax.scatter_min(x, UNIQUE, u, _dn(lax)),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_jvp_matches_jax(name):
    def run(ns):
        return ns.jvp(lambda x, u: FUNCTIONS[name](ns.lax, x, u), (X, U), (TX, TU))
    assert_same_typed_values(run(OURS), run(THEIRS), rtol=RTOL_REDUCTION)


GRADS = ["gather", "gather_fill", "scatter_add", "scatter_mul_unique", "scatter_unique"]


@pytest.mark.parametrize("name", GRADS)
def test_grad_matches_jax(name):
    def run(ns):
        return ns.grad(lambda x, u: (FUNCTIONS[name](ns.lax, x, u) ** 2).sum(),
                       argnums=(0, 1))(X, U)
    assert_same_typed_values(run(OURS), run(THEIRS), rtol=RTOL_REDUCTION)


@pytest.mark.parametrize("name", ["gather", "scatter_add"])
def test_grad_jaxpr_prints_as_jax(name):
    def run(ns):
        return ns.make_jaxpr(ns.grad(lambda x, u: FUNCTIONS[name](ns.lax, x, u).sum()))(X, U)
    assert str(run(OURS)) == str(run(THEIRS))


def test_scatter_mul_with_repeated_indices_refuses_a_gradient_as_jax_does():
    def run(ns):
        try:
            ns.grad(lambda u: ns.lax.scatter_mul(X, REPEATED, u, _dn(ns.lax)).sum())(U)
        except NotImplementedError as err:
            return str(err)
    assert run(OURS) == run(THEIRS) is not None
