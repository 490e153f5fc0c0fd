"""Values with a zero tangent are eager Arrays under jvp, vjp and linearize: they promote as
JAX's do (no float64, no int64), and an eager Array can index a traced one."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import stages.s04_autodiff as s04
from shared.testing import assert_same_typed_values
from stages.s02_tracing import make_jaxpr
from stages.s02_tracing import numpy as onp

XV = np.array([0.1, 0.5, 0.9], np.float32)

FUNCTIONS = {
    "bool_times_python_int": lambda np_: lambda a: (a > 0.3) * 2,
    "int_divided_by_python_int": lambda np_: lambda a: a.astype(np_.int32) / 2,
    "int_times_float": lambda np_: lambda a: np_.astype(a, np_.int32) * a,
    "index_by_argmax": lambda np_: lambda a: a[np_.argmax(a)],
    "index_by_argmin_of_a_function": lambda np_: lambda a: np_.sin(a)[np_.argmin(a * 2.0)],
    "mask_then_sum": lambda np_: lambda a: ((a > 0.3) * a).sum(),
}


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_jvp_and_linearize_agree_with_jax(name):
    ours, theirs = FUNCTIONS[name](onp), FUNCTIONS[name](jjnp)
    assert_same_typed_values(s04.jvp(ours, (XV,), (XV,)), jax.jvp(theirs, (XV,), (XV,)))
    out, f_jvp = s04.linearize(ours, XV)
    their_out, their_f_jvp = jax.linearize(theirs, XV)
    assert_same_typed_values(out, their_out)
    if np.issubdtype(np.asarray(their_out).dtype, np.floating):
        assert_same_typed_values(f_jvp(XV), their_f_jvp(XV))


@pytest.mark.parametrize("name", ["index_by_argmax", "index_by_argmin_of_a_function",
                                  "mask_then_sum"])
def test_grad_agrees_with_jax_and_prints_the_same_jaxpr(name):
    ours, theirs = FUNCTIONS[name](onp), FUNCTIONS[name](jjnp)
    assert_same_typed_values(s04.grad(ours)(XV), jax.grad(theirs)(XV))
    assert str(make_jaxpr(s04.grad(ours))(XV)) == str(jax.make_jaxpr(jax.grad(theirs))(XV))
