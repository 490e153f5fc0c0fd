"""float0, the tangent dtype of an int or a bool, is an aval's dtype like any other: it prints in
jaxprs, it is a jit argument and a jit result (never an Array: numpy's zeros, which hold
nothing), as in JAX. Here on stage 7's interpreting backend; stage 9's tests run it on PJRT."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import stages.s04_autodiff as s04
import stages.s07_caches as s07
from stages.s02_tracing import eval_shape, make_jaxpr

F0 = np.zeros((), jax.dtypes.float0)  # the same numpy dtype as ours
CASES = {
    "jvp of an int function": (lambda jvp, grad: lambda n: jvp(lambda m: m * 2, (n,), (F0,)),
                               (3,)),
    "grad with allow_int": (lambda jvp, grad: grad(lambda x, n: x * n, argnums=(0, 1),
                                                   allow_int=True), (2.0, 3)),
    "a float0 argument and a float": (lambda jvp, grad: lambda t, x: (t, x * 2),
                                      (np.zeros((2,), jax.dtypes.float0), 1.0)),
}


def build(name):
    make, args = CASES[name]
    return make(s04.jvp, s04.grad), make(jax.jvp, jax.grad), args


def assert_same_results(got, want):
    got, want = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert (np.shape(g), np.dtype(g.dtype)) == (np.shape(w), np.dtype(w.dtype))
        if w.dtype == jax.dtypes.float0:
            assert type(g) is np.ndarray  # numpy's zeros, as JAX returns them
        else:
            assert g.weak_type == w.weak_type
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


@pytest.mark.parametrize("name", sorted(CASES))
def test_float0_traces_prints_and_runs_under_jit_as_in_jax(name):
    ours, theirs, args = build(name)
    assert str(make_jaxpr(ours)(*args)) == str(jax.make_jaxpr(theirs)(*args))
    assert repr(eval_shape(ours, *args)) == repr(jax.eval_shape(theirs, *args))
    assert_same_results(s07.jit(ours)(*args), jax.jit(theirs)(*args))
    assert_same_results(s07.jit(ours)(*args), jax.jit(theirs)(*args))  # the cache hit too
