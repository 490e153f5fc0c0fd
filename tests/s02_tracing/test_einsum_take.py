"""jnp.einsum, jnp.take and jnp.take_along_axis against jax.numpy (values and dtypes)."""

from __future__ import annotations

import jax.numpy as jjnp
import numpy as np
import pytest

import stages.s02_tracing.numpy as ojnp
from shared.testing import RTOL_REDUCTION, assert_same_typed_values

_rng = np.random.default_rng(25)
A = _rng.standard_normal((3, 4)).astype(np.float32)
B = _rng.standard_normal((4, 5)).astype(np.float32)
C = _rng.standard_normal((5, 3)).astype(np.float32)
X = np.arange(12.0, dtype=np.float32).reshape(3, 4)

CASES = {
    "matmul": lambda jnp: jnp.einsum("ij,jk->ik", A, B),
    "chain_trace": lambda jnp: jnp.einsum("ij,jk,ki->", A, B, C),
    "transpose": lambda jnp: jnp.einsum("ij->ji", A),
    "gram": lambda jnp: jnp.einsum("ij,ik->jk", A, A),
    "batched_dot": lambda jnp: jnp.einsum("bi,bi->b", A, A),
    "implicit_output": lambda jnp: jnp.einsum("ij,jk", A, B),
    "total": lambda jnp: jnp.einsum("ij->", A),
    "outer": lambda jnp: jnp.einsum("ij,kl->ijkl", A[:, :2], B[:2]),
    "int_and_float": lambda jnp: jnp.einsum("i,i->", np.arange(4, dtype=np.int32), A[0]),
    "take_axis": lambda jnp: jnp.take(X, jnp.array([5, -1, 1]), axis=1),
    "take_flat": lambda jnp: jnp.take(X, jnp.array([[0, 11], [13, 2]])),
    "take_clip": lambda jnp: jnp.take(X, jnp.array([0, 7]), axis=0, mode="clip"),
    "take_int_fill": lambda jnp: jnp.take(X.astype(np.int32), jnp.array([9]), axis=1),
    "take_along": lambda jnp: jnp.take_along_axis(X, jnp.array([[0, 3], [1, 1], [2, -1]]),
                                                  axis=1),
    "take_along_broadcast": lambda jnp: jnp.take_along_axis(X, jnp.array([[0, 7]]), axis=1),
    "take_along_argsort": lambda jnp: jnp.take_along_axis(A, jnp.argsort(A, axis=0), axis=0),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_jax_numpy(case):
    assert_same_typed_values(CASES[case](ojnp), CASES[case](jjnp), rtol=RTOL_REDUCTION)
