"""An integer or bool output's tangent is float0 zeros. Eagerly it is a numpy array (no Array
holds float0); staged, it is what JAX stages: a float0 scalar broadcast to the shape, and under
vmap that broadcast is batched as any other unbatched value is."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import stages.s04_autodiff as s04
import stages.s05_vmap as s05
from stages.s02_tracing import make_jaxpr

X = np.array([0.1, 0.5, 0.9], np.float32)
XS = np.stack([X, -X])


def _jvp_of_bool(jvp):
    return lambda x, t: jvp(lambda x: (x > 0.3, x * 2), (x,), (t,))


def _vmapped(vmap, jvp):
    return vmap(lambda x: jvp(lambda x: x > 0.3, (x,), (x,)))


CASES = {
    "jvp": (lambda: _jvp_of_bool(s04.jvp), lambda: _jvp_of_bool(jax.jvp), (X, X)),
    "vmap_of_jvp": (lambda: _vmapped(s05.vmap, s04.jvp), lambda: _vmapped(jax.vmap, jax.jvp),
                    (XS,)),
    "linearize": (lambda: lambda x: s04.linearize(lambda x: (x > 0.3, x * 2), x)[1](x),
                  lambda: lambda x: jax.linearize(lambda x: (x > 0.3, x * 2), x)[1](x), (X,)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_staged_zeros_print_as_jax_s(name):
    ours, theirs, args = CASES[name]
    text = str(make_jaxpr(ours())(*args))
    assert text == str(jax.make_jaxpr(theirs())(*args))


def test_the_float0_zeros_are_a_broadcast_scalar():
    text = str(make_jaxpr(_jvp_of_bool(s04.jvp))(X, X))
    assert "float0[3] = broadcast_in_dim (b'',):float0[]" in text
    assert text.startswith("{ lambda ; ")  # no float0 array closed over as a constant


@pytest.mark.parametrize("name", list(CASES))
def test_eagerly_the_zeros_are_numpy_float0_of_jax_s_shape(name):
    ours, theirs, args = CASES[name]
    mine = jax.tree_util.tree_leaves(ours()(*args))
    their = jax.tree_util.tree_leaves(theirs()(*args))
    assert [(np.shape(a), np.asarray(a).dtype) for a in mine] == \
        [(np.shape(b), np.asarray(b).dtype) for b in their]
    for a in mine:
        if np.asarray(a).dtype == jax.dtypes.float0:
            assert type(a) is np.ndarray
