"""jnp.einsum, jnp.take and jnp.take_along_axis against jax.numpy (values and dtypes); einsum's
printed jaxprs, whose contraction order both take from opt_einsum."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import stages.s02_tracing.numpy as ojnp
from shared.testing import RTOL_REDUCTION, assert_same_typed_values
from stages.s02_tracing import make_jaxpr as ojnp_make_jaxpr

_rng = np.random.default_rng(25)
A = _rng.standard_normal((3, 4)).astype(np.float32)
B = _rng.standard_normal((4, 5)).astype(np.float32)
C = _rng.standard_normal((5, 3)).astype(np.float32)
X = np.arange(12.0, dtype=np.float32).reshape(3, 4)
T = _rng.standard_normal((3, 3, 3)).astype(np.float32)
D = _rng.standard_normal((2, 1, 3, 4)).astype(np.float32)
E = _rng.standard_normal((5, 4, 2)).astype(np.float32)
I4 = np.arange(4, dtype=np.int32)

CASES = {
    "matmul": lambda jnp: jnp.einsum("ij,jk->ik", A, B),
    "chain_trace": lambda jnp: jnp.einsum("ij,jk,ki->", A, B, C),
    "transpose": lambda jnp: jnp.einsum("ij->ji", A),
    "gram": lambda jnp: jnp.einsum("ij,ik->jk", A, A),
    "batched_dot": lambda jnp: jnp.einsum("bi,bi->b", A, A),
    "implicit_output": lambda jnp: jnp.einsum("ij,jk", A, B),
    "total": lambda jnp: jnp.einsum("ij->", A),
    "outer": lambda jnp: jnp.einsum("ij,kl->ijkl", A[:, :2], B[:2]),
    "int_and_float": lambda jnp: jnp.einsum("i,i->", I4, A[0]),
    "diagonal": lambda jnp: jnp.einsum("ii->i", A[:, :3]),
    "trace_implicit": lambda jnp: jnp.einsum("ii", A[:, :3]),
    "triple_diagonal": lambda jnp: jnp.einsum("iii->i", T),
    "diagonal_summed_against": lambda jnp: jnp.einsum("iij->j", T),
    "diagonal_on_rhs": lambda jnp: jnp.einsum("ij,jj->i", A, B[:, :4]),
    "ellipsis_broadcast": lambda jnp: jnp.einsum("...ij,...jk->...ik", D, E),
    "ellipsis_sum": lambda jnp: jnp.einsum("i...->...", A),
    "chain_of_four": lambda jnp: jnp.einsum("ij,jk,kl,lm->im", A, B, C, A),
    "chain_unoptimized": lambda jnp: jnp.einsum("ij,jk,kl,lm->im", A, B, C, A,
                                                optimize=False),
    "chain_greedy": lambda jnp: jnp.einsum("ij,jk,kl,lm->im", A, B, C, A, optimize="greedy"),
    "three_way_outer": lambda jnp: jnp.einsum("bi,bj,bk->bijk", A, A, A),
    "int_sum": lambda jnp: jnp.einsum("ij->i", X.astype(np.int32)),
    "size_one_squeezed": lambda jnp: jnp.einsum("ij,kj->ik", A[:1], A),
    "scalar_operand": lambda jnp: jnp.einsum(",ij->ij", np.float32(2.0), A),
    "preferred_type": lambda jnp: jnp.einsum("i,i->", I4, I4, preferred_element_type=np.float32),
    "take_axis": lambda jnp: jnp.take(X, jnp.array([5, -1, 1]), axis=1),
    "take_flat": lambda jnp: jnp.take(X, jnp.array([[0, 11], [13, 2]])),
    "take_clip": lambda jnp: jnp.take(X, jnp.array([0, 7]), axis=0, mode="clip"),
    "take_int_fill": lambda jnp: jnp.take(X.astype(np.int32), jnp.array([9]), axis=1),
    # clip does not count a negative index from the end: -1 reads the first element
    "take_clip_negative": lambda jnp: jnp.take(X, jnp.array([-1, -7, 2, 9]), axis=1,
                                               mode="clip"),
    "take_clip_flat": lambda jnp: jnp.take(X, jnp.array([-1, 30])[0], mode="clip"),
    "take_wrap": lambda jnp: jnp.take(X, jnp.array([-1, -7, 2, 9, 13]), axis=1, mode="wrap"),
    "take_fill_negative": lambda jnp: jnp.take(X, jnp.array([-1, -7]), axis=1, mode="fill"),
    "take_along": lambda jnp: jnp.take_along_axis(X, jnp.array([[0, 3], [1, 1], [2, -1]]),
                                                  axis=1),
    "take_along_broadcast": lambda jnp: jnp.take_along_axis(X, jnp.array([[0, 7]]), axis=1),
    "take_along_argsort": lambda jnp: jnp.take_along_axis(A, jnp.argsort(A, axis=0), axis=0),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_jax_numpy(case):
    assert_same_typed_values(CASES[case](ojnp), CASES[case](jjnp), rtol=RTOL_REDUCTION)


EINSUMS = sorted(c for c in CASES if not c.startswith("take"))


@pytest.mark.parametrize("case", EINSUMS)
def test_einsum_jaxpr_prints_as_jax(case):
    # JAX's einsum is an inlined jit: its equations land in the caller's jaxpr, as ours do
    want = str(jax.make_jaxpr(lambda: CASES[case](jjnp))())
    assert str(ojnp_make_jaxpr(lambda: CASES[case](ojnp))()) == want


@pytest.mark.parametrize("call", [
    lambda jnp: jnp.take(X, jnp.array([0]), axis=2),
    lambda jnp: jnp.take(X, jnp.array([0]), axis=-3),
    lambda jnp: jnp.take(np.float32(1.0), jnp.array([0]), axis=0),
    lambda jnp: jnp.take_along_axis(X, jnp.array([[0]]), axis=2),
    lambda jnp: jnp.take_along_axis(X, jnp.array([[0]]), axis=-3),
    lambda jnp: jnp.take(X, jnp.array([0]), mode="promise_in_bounds"),
    lambda jnp: jnp.take(X, jnp.array([0]), mode="nearest"),
])
def test_take_refuses_an_axis_out_of_bounds_or_an_unknown_mode_as_jax_does(call):
    with pytest.raises(ValueError) as ours:
        call(ojnp)
    with pytest.raises(ValueError) as theirs:
        call(jjnp)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("spec", ["ij,jk->ik", "ij->i", "ij,jk->i", "ii->", "ij,ij->"])
def test_boolean_einsum_sums_with_or_as_jax(spec):
    b = np.array([[True, False], [False, False]])
    args = (b,) * spec.split("->")[0].count(",") + (b,)
    assert_same_typed_values(ojnp.einsum(spec, *args), jjnp.einsum(spec, *args))
    ours = ojnp_make_jaxpr(lambda *a: ojnp.einsum(spec, *a))(*args)
    assert str(ours) == str(jax.make_jaxpr(lambda *a: jjnp.einsum(spec, *a))(*args))


@pytest.mark.parametrize("mode", ["promise_in_bounds", "clip", "fill", None])
@pytest.mark.parametrize("wrap", [None, True, False])
def test_take_along_axis_wraps_negative_indices_as_jax_says(mode, wrap):
    # JAX's legacy default: wrap unless the indices are promised in bounds (then XLA clamps)
    i = np.array([[0, -1], [-2, 3], [1, -4]], np.int32)
    x = X
    np.testing.assert_array_equal(
        ojnp.take_along_axis(x, i, axis=1, mode=mode, wrap_negative_indices=wrap),
        jjnp.take_along_axis(x, i, axis=1, mode=mode, wrap_negative_indices=wrap))
