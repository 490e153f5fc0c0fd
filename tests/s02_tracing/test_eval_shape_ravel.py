"""eval_shape and ShapeDtypeStruct, ravel_pytree, against jax."""

from __future__ import annotations

import jax
import jax.flatten_util
import jax.numpy as jjnp
import numpy as np
import pytest

import stages.s02_tracing as s02
from shared.testing import assert_same_typed_values


def _shapes(tree):
    return [(x.shape, np.dtype(x.dtype), bool(getattr(x, "weak_type", False)))
            for x in jax.tree_util.tree_leaves(tree)]


EVAL_CASES = {
    "matmul_and_sums": (lambda jnp: lambda x, y: (x @ y, x.sum(), 2.0 * x[0, 0]),
                        lambda S: (S((2, 3), np.float32), np.ones((3, 4), np.float32))),
    "weak_scalar": (lambda jnp: lambda x: x + 1, lambda S: (2.0,)),
    "dict_out": (lambda jnp: lambda x: {"a": jnp.sin(x), "b": x.astype(np.int32)},
                 lambda S: (S((5,), np.float32),)),
    "weak_struct": (lambda jnp: lambda x: x * 2, lambda S: (S((), np.float32, weak_type=True),)),
}


@pytest.mark.parametrize("case", sorted(EVAL_CASES))
def test_eval_shape_matches_jax(case):
    fn, args = EVAL_CASES[case]
    ours = s02.eval_shape(fn(s02.numpy), *args(s02.ShapeDtypeStruct))
    theirs = jax.eval_shape(fn(jjnp), *args(jax.ShapeDtypeStruct))
    assert _shapes(ours) == _shapes(theirs)
    assert repr(ours) == repr(theirs)


def test_shape_dtype_struct_prints_as_jax():
    for args in [((2, 3), np.int32), ((), np.float32)]:
        assert repr(s02.ShapeDtypeStruct(*args)) == repr(jax.ShapeDtypeStruct(*args))
    assert repr(s02.ShapeDtypeStruct((), np.float32, weak_type=True)) == \
        repr(jax.ShapeDtypeStruct((), np.float32, weak_type=True))


RAVEL_CASES = {
    "mixed_dtypes": {"a": np.ones((2, 2), np.float32), "b": np.arange(3, dtype=np.int32)},
    "one_dtype": [np.arange(4.0, dtype=np.float32), (np.ones(2, np.float32),)],
    "python_scalars": (1, 2.0),
    "empty": [],
}


@pytest.mark.parametrize("case", sorted(RAVEL_CASES))
def test_ravel_pytree_matches_jax(case):
    tree = RAVEL_CASES[case]
    flat, unravel = s02.ravel_pytree(tree)
    jflat, junravel = jax.flatten_util.ravel_pytree(tree)
    assert_same_typed_values(flat, jflat)
    assert_same_typed_values(unravel(flat), junravel(jflat))


def test_unravel_refuses_another_dtype_as_jax_does():
    tree = RAVEL_CASES["mixed_dtypes"]
    flat = np.zeros(7, np.int32)
    with pytest.raises(TypeError) as theirs:
        jax.flatten_util.ravel_pytree(tree)[1](flat)
    with pytest.raises(TypeError) as ours:
        s02.ravel_pytree(tree)[1](flat)
    assert str(ours.value) == str(theirs.value)
