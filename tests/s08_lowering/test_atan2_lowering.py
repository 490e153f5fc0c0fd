"""atan2 lowers to `stablehlo.atan2`: our module text is jax.jit(f).lower(...)'s, and the
compiled module computes JAX's values on every quadrant, signed zeros and infinities."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import stages.s02_tracing as s02
import stages.s04_autodiff as s04
import stages.s05_vmap as s05
import stages.s08_lowering as s08
from shared.testing import RTOL_ELEMENTWISE

from .conftest import Program, jax_text, jax_values, lower_ours, op_names, run_ours

pytestmark = pytest.mark.oracle

inf = np.inf
X = np.array([1.0, -1.0, -1.0, 1.0, 0.0, -0.0, 0.0, -0.0, inf, -inf, inf, 2.0], np.float32)
Y = np.array([1.0, 1.0, -1.0, -1.0, 0.0, 0.0, -0.0, -1.0, 1.0, -inf, inf, -inf], np.float32)
C = np.array([1 + 1j, 2 - 3j, 0.5j], np.complex64)


def _program(name, ours, theirs, *args):
    ours.__name__ = theirs.__name__ = name
    return Program(name, ours, theirs, args)


PROGRAMS = [
    Program("lax_atan2", s02.lax.atan2, jax.lax.atan2, (X, Y)),
    Program("arctan2", s02.numpy.arctan2, jjnp.arctan2, (X, Y)),
    Program("arctan2_of_ints", s02.numpy.arctan2, jjnp.arctan2,
            (np.arange(-2, 3, dtype=np.int32), 2)),
    Program("atan2_f16_and_scalar", s02.numpy.atan2, jjnp.atan2, (X.astype(np.float16), 0.5)),
    Program("arctan2_rank_broadcast", s02.numpy.arctan2, jjnp.arctan2,
            (X.reshape(3, 4), Y[:4])),
    Program("atan2_complex", s02.lax.atan2, jax.lax.atan2, (C, C[::-1])),
    _program("vmap_atan2", s05.vmap(s02.lax.atan2, (1, None)),
             jax.vmap(jax.lax.atan2, (1, None)), X.reshape(4, 3), Y[:4]),
]


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_our_text_is_jaxs(program):
    assert lower_ours(program) == jax_text(program)
    assert "stablehlo.atan2" in lower_ours(program)


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_the_compiled_module_computes_jaxs_values(program):
    ours, theirs = run_ours(program), jax_values(program)
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs, strict=True):
        assert o.dtype == t.dtype and o.shape == t.shape
        rtol = 1e-3 if o.dtype == np.float16 else RTOL_ELEMENTWISE
        np.testing.assert_allclose(o, t, rtol=rtol, atol=1e-6)
        if not np.iscomplexobj(o):
            assert np.array_equal(np.signbit(o), np.signbit(t))


def test_the_lowering_is_one_op_of_the_result_type():
    text = lower_ours(PROGRAMS[0])
    assert "%0 = stablehlo.atan2 %arg0, %arg1 : tensor<12xf32>" in text
    assert s02.lax.atan2_p in s08.lowering_rules


def test_grads_text_counts_jax_s_ops_squares_included():
    """atan2's jvp rule squares with the `square` primitive, lowered to chlo.square as JAX's."""
    grad = _program("grad_atan2", s04.grad(lambda x, y: s02.numpy.sum(s02.numpy.arctan2(x, y)),
                                           (0, 1)),
                    jax.grad(lambda x, y: jjnp.sum(jjnp.arctan2(x, y)), (0, 1)), X[:4], Y[:4])
    ours, theirs = op_names(lower_ours(grad)), op_names(jax_text(grad))
    assert ours == theirs and ours["chlo.square"] == 4
    for o, t in zip(run_ours(grad), jax_values(grad), strict=True):
        np.testing.assert_allclose(o, t, rtol=RTOL_ELEMENTWISE)
