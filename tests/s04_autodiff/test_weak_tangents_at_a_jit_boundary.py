"""A known difference, pinned: the weak type of a cotangent when a weak input's tangent meets a
strong value through a jnp ufunc at the top level.

JAX's ufuncs run inside `jit(inline=True)`; a jit's jvp types each tangent as its primal, so
`a`'s weak tangent (a = 2 + s, s a Python float) enters `a * a` strong, and its transpose hands
a strong cotangent back. Ours has no jit in stage 2: `a * a` converts the operand that knows its
value, as `lax.convert_element_type` does at the top level, and that conversion's transpose
makes the cotangent weak again. Values agree; page 4 lists the difference. When ours mirrors the
jit boundary, the weak-type assertion below flips and this file should become an equality test.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import stages.s02_tracing as s02
from shared.testing import weak_type_of
from stages.s04_autodiff import jvp, vjp

pytestmark = pytest.mark.oracle


def _program(lax):
    return lambda s: (lambda a: a * a)(lax.add(np.float32(2), s))


def test_values_and_the_jvp_agree_and_the_cotangents_weak_type_differs():
    (ours,), (theirs,) = vjp(_program(s02.lax), 0.75)[1](np.float32(1)), \
        jax.vjp(_program(jax.lax), 0.75)[1](np.float32(1))
    np.testing.assert_array_equal(ours, theirs)
    assert np.asarray(ours).dtype == theirs.dtype == np.float32
    assert (weak_type_of(ours), weak_type_of(theirs)) == (True, False)
    t_ours = jvp(_program(s02.lax), (0.75,), (0.25,))[1]
    t_theirs = jax.jvp(_program(jax.lax), (0.75,), (0.25,))[1]
    np.testing.assert_array_equal(t_ours, t_theirs)
    assert weak_type_of(t_ours) == weak_type_of(t_theirs) is False
