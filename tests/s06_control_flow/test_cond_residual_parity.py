"""A split cond whose branches save different residuals, and a batched map with a remainder,
print as JAX's under grad and linearize.

Each known branch of a split cond returns every residual slot: `empty2` (broadcast to the
slot's shape) where it saves nothing, made for every slot and then replaced, as JAX does; the
staged branches share the binders of the slots they ignore. `lax.map(f, xs, batch_size=3)` over
7 rows concatenates the scanned rows and the remainder, whose transpose is one `split`.
"""

from __future__ import annotations

import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import stages.s02_tracing as s02
import stages.s04_autodiff as s04
import stages.s06_control_flow as s06
from shared.testing import assert_same_typed_values

pytestmark = pytest.mark.oracle

OURS = types.SimpleNamespace(np=s02.numpy, cond=s06.cond, switch=s06.switch, map=s06.map,
                             grad=s04.grad, linearize=s04.linearize, make_jaxpr=s02.make_jaxpr)
THEIRS = types.SimpleNamespace(np=jnp, cond=jax.lax.cond, switch=jax.lax.switch, map=jax.lax.map,
                               grad=jax.grad, linearize=jax.linearize,
                               make_jaxpr=jax.make_jaxpr)

V3 = np.array([0.5, -1.0, 2.0], np.float32)


def _sin_or_cos(ns):
    return lambda x: ns.cond(True, ns.np.sin, ns.np.cos, x)


def _different_shapes(ns):
    def f(x):
        return ns.np.sum(ns.cond(x[0] > 0, lambda x: ns.np.sin(x) * x[:2].sum(),
                                 lambda x: x * 2.0, x))
    return f


def _other_branch_saves_more(ns):
    def f(x):
        return ns.np.sum(ns.cond(True, lambda x: ns.np.sin(x),
                                 lambda x: ns.np.exp(x[:2]).sum() * x, x))
    return f


def _switch_of_three(ns):
    return lambda x: ns.switch(1, [ns.np.sin, lambda x: x * x * x, lambda x: x], x)


def _map_with_remainder(ns):
    return lambda xs: ns.np.sum(ns.map(ns.np.sin, xs, batch_size=3))


def _map_2d_remainder(ns):
    return lambda xs: ns.np.sum(ns.map(lambda r: ns.np.cos(r) * r, xs, batch_size=2) ** 2)


CASES = {
    "cond_sin_cos": (_sin_or_cos, (np.float32(1.0),)),
    "cond_sin_cos_python_float": (_sin_or_cos, (1.0,)),
    "cond_residuals_of_other_shapes": (_different_shapes, (V3,)),
    "cond_one_branch_saves_more": (_other_branch_saves_more, (V3,)),
    "cond_residuals_of_other_shapes_false": (_different_shapes, (-V3,)),
    "switch_of_three": (_switch_of_three, (np.float32(2.0),)),
    "map_with_remainder": (_map_with_remainder, (np.linspace(-1, 1, 7, dtype=np.float32),)),
    "map_2d_remainder": (_map_2d_remainder,
                         (np.arange(10, dtype=np.float32).reshape(5, 2) / 5,)),
}


@pytest.mark.parametrize("name", CASES)
def test_grad_jaxpr_prints_as_jaxs_and_values_agree(name):
    make, args = CASES[name]
    ours = OURS.make_jaxpr(OURS.grad(make(OURS)))(*args)
    theirs = THEIRS.make_jaxpr(THEIRS.grad(make(THEIRS)))(*args)
    assert str(ours) == str(theirs)
    assert_same_typed_values(OURS.grad(make(OURS))(*args), THEIRS.grad(make(THEIRS))(*args))


CONDS = [name for name in CASES if not name.startswith("map")]  # map's linearization: no split


@pytest.mark.parametrize("name", CONDS)
def test_linearized_jaxpr_prints_as_jaxs(name):
    make, args = CASES[name]

    def lin(ns):
        f = make(ns)
        return lambda *a: ns.linearize(f, *a)[1](*a)

    assert str(OURS.make_jaxpr(lin(OURS))(*args)) == str(THEIRS.make_jaxpr(lin(THEIRS))(*args))
