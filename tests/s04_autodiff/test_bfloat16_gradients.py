"""grad, jvp and vjp of bfloat16 functions, against JAX: the same jaxprs and the same values.

bfloat16 is a float to the transformations (`dtypes.issubdtype`), though numpy does not count it
as one, so grad accepts it, its tangents are bfloat16 and its cotangents too.
"""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import ml_dtypes
import numpy as np
import pytest

from stages.s02_tracing import make_jaxpr
from stages.s02_tracing import numpy as onp
from stages.s04_autodiff import grad, jvp, value_and_grad, vjp

BF16 = np.dtype(ml_dtypes.bfloat16)
X = np.array([0.5, 1.25, -2.0, 3.5], np.float32).astype(BF16)
W = (np.arange(12, dtype=np.float32).reshape(4, 3) / 8).astype(BF16)

FUNCTIONS = {
    "sin_tanh": lambda np_: lambda x: np_.sum(np_.sin(x) * x * 2.0 + np_.tanh(x)),
    "mean_square": lambda np_: lambda x: np_.mean(x * x),
    "exp_div": lambda np_: lambda x: np_.sum(np_.exp(x) / (1.0 + x * x)),
    "matmul": lambda np_: lambda x: np_.sum(np_.matmul(x, np_.asarray(W)) ** 2),
}


@pytest.mark.parametrize("name", FUNCTIONS)
def test_grad_of_a_bfloat16_function_equals_jax(name):
    ours_f, theirs_f = FUNCTIONS[name](onp), FUNCTIONS[name](jjnp)
    ours, theirs = grad(ours_f)(X), jax.grad(theirs_f)(X)
    assert ours.dtype == theirs.dtype == BF16
    # the same equations (the jaxprs agree), each a correctly rounded op or a transcendental
    # whose float32 values may differ in the last bit: within one bfloat16 ulp
    assert str(make_jaxpr(grad(ours_f))(X)) == str(jax.make_jaxpr(jax.grad(theirs_f))(X))
    np.testing.assert_allclose(np.asarray(ours, np.float32), np.asarray(theirs, np.float32),
                               rtol=2.0**-7, atol=0)


def test_value_and_grad_jvp_and_vjp_keep_bfloat16():
    f = FUNCTIONS["mean_square"](onp)
    value, g = value_and_grad(f)(X)
    assert (value.dtype, g.dtype) == (BF16, BF16)
    theirs = jax.grad(FUNCTIONS["mean_square"](jjnp))(X)
    assert np.asarray(g).tobytes() == np.asarray(theirs).tobytes()
    primal_out, tangent_out = jvp(onp.sin, (X,), (np.ones(4, BF16),))
    assert primal_out.dtype == tangent_out.dtype == BF16
    _, pullback = vjp(onp.sin, X)
    (ct,) = pullback(np.ones(4, BF16))
    assert ct.dtype == BF16
