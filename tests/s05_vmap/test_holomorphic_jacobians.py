"""jacfwd, jacrev and hessian with holomorphic=True (and jacrev's allow_int), as in JAX:
values, dtypes, and the refusals of a real input or output."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import stages.s05_vmap as s05
from shared.testing import assert_same_typed_values
from stages.s02_tracing import numpy as jnp

Z = np.complex64(1 + 1j)
ZS = np.array([1 + 1j, 0.5 - 2j], np.complex64)


def _outcome(fn):
    try:
        return "ok", fn()
    except (TypeError, ValueError) as err:
        return type(err).__name__, str(err)


def same(ours_fn, theirs_fn):
    ours, theirs = _outcome(ours_fn), _outcome(theirs_fn)
    assert ours[0] == theirs[0], (ours, theirs)
    if ours[0] == "ok":
        assert_same_typed_values(ours[1], theirs[1], rtol=2e-5)
    else:
        assert ours[1] == theirs[1]


FUNCTIONS = {
    "square": lambda np_: lambda z: z * z,
    "vector": lambda np_: lambda z: np_.sin(z) * z[1],
    "real_output": lambda np_: lambda z: np_.abs(z),
}
ARGS = {"complex_scalar": Z, "complex_vector": ZS, "float": np.float32(1.0)}


@pytest.mark.parametrize("which", ["jacfwd", "jacrev"])
@pytest.mark.parametrize("fun", list(FUNCTIONS))
@pytest.mark.parametrize("arg", list(ARGS))
@pytest.mark.parametrize("holomorphic", [True, False])
def test_jacobians_with_holomorphic_are_jaxs(which, fun, arg, holomorphic):
    if fun == "vector" and arg != "complex_vector":
        return
    f = FUNCTIONS[fun]
    same(lambda: getattr(s05, which)(f(jnp), holomorphic=holomorphic)(ARGS[arg]),
         lambda: getattr(jax, which)(f(jjnp), holomorphic=holomorphic)(ARGS[arg]))


def test_hessian_with_holomorphic_is_jaxs():
    same(lambda: s05.hessian(lambda z: jnp.sin(z) * z, holomorphic=True)(Z),
         lambda: jax.hessian(lambda z: jjnp.sin(z) * z, holomorphic=True)(Z))


@pytest.mark.parametrize("allow_int", [True, False])
def test_jacrev_allow_int_is_jaxs(allow_int):
    same(lambda: s05.jacrev(lambda x, n: x * n, (0, 1), allow_int=allow_int)(2.0, 3),
         lambda: jax.jacrev(lambda x, n: x * n, (0, 1), allow_int=allow_int)(2.0, 3))
