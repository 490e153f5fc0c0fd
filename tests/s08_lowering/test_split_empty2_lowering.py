"""split lowers to one `stablehlo.slice` per piece, and empty2 to a zero `stablehlo.constant`,
as JAX lowers them: our module text is jax.jit(f).lower(...)'s for split alone and for the
gradients that now hold split (concatenate's transpose), pad with np.int64 params (slice's
transpose) and empty2 (a split cond's residual slots); the compiled module computes JAX's
values."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import stages.s02_tracing as s02
import stages.s04_autodiff as s04
import stages.s05_vmap as s05
import stages.s06_control_flow as s06
from shared.testing import RTOL_ELEMENTWISE

from .conftest import Program, assert_jaxpr_text_and_values_are_jaxs, jax_text, lower_ours

pytestmark = pytest.mark.oracle

V3 = np.array([0.5, -1.0, 2.0], np.float32)
M34 = np.arange(12, dtype=np.float32).reshape(3, 4) / 6


def _named(f, name):
    f.__name__ = name
    return f


def _program(name, make, *args):
    ours = make(s02.numpy, s02.lax, s04.grad, s06.cond, s06.switch, s06.map)
    theirs = make(jnp, jax.lax, jax.grad, jax.lax.cond, jax.lax.switch, jax.lax.map)
    return Program(name, _named(ours, name), _named(theirs, name), args)


PROGRAMS = [
    _program("split_axis0", lambda np_, lax, grad, cond, switch, map_:
             lambda x: lax.split(x, (1, 2), 0), M34),
    _program("split_axis1_three", lambda np_, lax, grad, cond, switch, map_:
             lambda x: lax.split(x, (2, 1, 1), 1), M34),
    _program("grad_concatenate", lambda np_, lax, grad, cond, switch, map_:
             grad(lambda x: np_.sum(np_.concatenate([x, 2 * x]) ** 2)), V3),
    _program("grad_concatenate_and_index", lambda np_, lax, grad, cond, switch, map_:
             grad(lambda x: np_.sum(np_.concatenate([x, 2 * x, x[:1]], axis=0) ** 2)), M34),
    _program("grad_strided_slice", lambda np_, lax, grad, cond, switch, map_:
             grad(lambda x: np_.sum(x[1:3:2, 1:] ** 2)), M34),
    _program("grad_map_remainder", lambda np_, lax, grad, cond, switch, map_:
             grad(lambda xs: np_.sum(map_(np_.sin, xs, batch_size=3))),
             np.linspace(-1, 1, 7, dtype=np.float32)),
    _program("grad_cond_sin_cos", lambda np_, lax, grad, cond, switch, map_:
             grad(lambda x: cond(True, np_.sin, np_.cos, x)), np.float32(1.0)),
    _program("grad_cond_other_shapes", lambda np_, lax, grad, cond, switch, map_:
             grad(lambda x: np_.sum(cond(x[0] > 0, lambda x: np_.sin(x) * x[:2].sum(),
                                         lambda x: x * 2.0, x))), V3),
    _program("grad_switch_of_three", lambda np_, lax, grad, cond, switch, map_:
             grad(lambda x: switch(1, [np_.sin, lambda x: x * x * x, lambda x: x], x)),
             np.float32(2.0)),
]


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_the_jaxpr_and_our_text_are_jaxs_and_compute_jaxs_values(program):
    # the jaxpr first: split lowers to the slices concatenate's old transpose had, so the text
    # alone would not tell the two apart
    assert_jaxpr_text_and_values_are_jaxs(program, rtol=RTOL_ELEMENTWISE, atol=1e-6)


def test_vmap_of_split_lowers_as_jaxs():
    xs = np.stack([M34, M34 * 2])
    f = lambda lax: lambda x: lax.split(x, (3, 1), 1)
    program = Program("vmap_split", _named(s05.vmap(f(s02.lax)), "vmap_split"),
                      _named(jax.vmap(f(jax.lax)), "vmap_split"), (xs,))
    assert lower_ours(program) == jax_text(program)
