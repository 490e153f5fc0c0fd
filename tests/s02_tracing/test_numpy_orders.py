"""numpy's layout and dtype options that JAX takes, against jax.numpy: reshape and ravel in
column-major order (one reshape that reads the axes reversed, as JAX stages it), concatenate
and stack into a given dtype, array with leading axes up to `ndmin`; and the options JAX
refuses, with its words."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import stages.s02_tracing as s02
from shared.testing import assert_same_typed_values
from stages.s02_tracing import numpy as ojnp
from stages.s04_autodiff import grad
from stages.s05_vmap import vmap

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
W = np.linspace(-1.0, 1.0, 24, dtype=np.float32).reshape(4, 6)

ORDERED = {
    "reshape_F": lambda n, x: n.reshape(x, (4, 6), order="F"),
    "reshape_F_inferred": lambda n, x: n.reshape(x, (2, -1), order="F"),
    "reshape_C": lambda n, x: n.reshape(x, (4, 6), order="C"),
    "ravel_F": lambda n, x: n.ravel(x, order="F"),
    "method_reshape_F": lambda n, x: x.reshape(6, 4, order="F"),
    "method_ravel_F": lambda n, x: x.ravel(order="F"),
    "method_flatten_F": lambda n, x: x.flatten(order="F"),
}


@pytest.mark.parametrize("f", ORDERED.values(), ids=ORDERED.keys())
def test_column_major_reshape_is_jaxs_values_and_jaxpr(f):
    assert_same_typed_values(f(ojnp, ojnp.asarray(X)), f(jjnp, jjnp.asarray(X)))
    assert str(s02.make_jaxpr(lambda x: f(ojnp, x))(X)) == \
        str(jax.make_jaxpr(lambda x: f(jjnp, x))(X))


def test_column_major_reshape_differentiates_and_batches_as_jax():
    def loss(n):
        return lambda x: (n.reshape(x, (4, 6), order="F") * W).sum()

    np.testing.assert_array_equal(grad(loss(ojnp))(X), jax.grad(loss(jjnp))(X))
    for axis in (0, 1, 2):
        assert_same_typed_values(vmap(lambda x: ojnp.ravel(x, order="F"), in_axes=axis)(X),
                                 jax.vmap(lambda x: jjnp.ravel(x, order="F"), in_axes=axis)(X))


JOINED = {
    "concatenate_narrower": lambda n: n.concatenate([X, np.ones((2, 3, 4), np.int32)],
                                                    dtype=n.int16),
    "concatenate_unraveled": lambda n: n.concatenate([X, X[0]], axis=None, dtype=n.float16),
    "stack_scalars": lambda n: n.stack([1, 2.5], dtype=n.int32),
    "stack_arrays": lambda n: n.stack([X, X], axis=-1, dtype=n.bfloat16),
    "concatenate_none": lambda n: n.concatenate([X, X], dtype=None),
    "array_ndmin_scalar": lambda n: n.array(3.0, ndmin=2),
    "array_ndmin_list": lambda n: n.array([1, 2], ndmin=3),
    "array_ndmin_below_rank": lambda n: n.array(X, ndmin=1),
}


@pytest.mark.parametrize("f", JOINED.values(), ids=JOINED.keys())
def test_dtype_and_ndmin_options_are_jaxs(f):
    assert_same_typed_values(f(ojnp), f(jjnp))


REFUSED = {
    "reshape_A": lambda n: n.reshape(n.ones(6), (2, 3), order="A"),
    "reshape_unknown": lambda n: n.reshape(n.ones(6), (2, 3), order="X"),
    "ravel_K": lambda n: n.ravel(n.ones(6), order="K"),
    "ravel_unknown": lambda n: n.ravel(n.ones(6), order="X"),
    "array_order_F": lambda n: n.array([1], order="F"),
    "stack_out": lambda n: n.stack([n.ones(2)], out=n.ones((1, 2))),
    "arange_complex": lambda n: n.arange(0, 3, 1j),
}


@pytest.mark.parametrize("f", REFUSED.values(), ids=REFUSED.keys())
def test_what_jax_refuses_is_refused_in_its_words(f):
    with pytest.raises(Exception) as ours:
        f(ojnp)
    with pytest.raises(Exception) as theirs:
        f(jjnp)
    assert (type(ours.value), str(ours.value)) == (type(theirs.value), str(theirs.value))
