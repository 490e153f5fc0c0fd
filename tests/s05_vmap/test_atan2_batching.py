"""vmap of atan2: the broadcasting binary rule, against jax.vmap (values and printed jaxprs).

atan2 batches as add and max do: operands batched on different axes are lined up first, an
unbatched operand is broadcast only when it must be.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import stages.s04_autodiff as s04
import stages.s05_vmap as s05
from shared.testing import RTOL_ELEMENTWISE
from stages.s02_tracing import lax

pytestmark = pytest.mark.oracle

rng = np.random.default_rng(7)


def _f(*shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


# every quadrant, signed zeros and infinities in the batch
EDGES = np.array([[1.0, 1.0], [-1.0, 1.0], [-1.0, -1.0], [1.0, -1.0], [0.0, -0.0],
                  [-0.0, -1.0], [np.inf, 1.0], [-np.inf, -np.inf], [2.0, np.inf]], np.float32)

CASES = {
    "same axis": ((_f(3, 5), _f(3, 5)), 1),
    "axes differ": ((_f(5, 3), _f(3, 5)), (0, 1)),
    "y unbatched": ((_f(3, 5), _f(3)), (1, None)),
    "x unbatched": ((_f(3), _f(5, 3)), (None, 0)),
    "batched scalars against a vector": ((_f(5), _f(3)), (0, None)),
    "edges as a batch of pairs": ((EDGES[:, 0], EDGES[:, 1]), 0),
}


@pytest.mark.parametrize("case", list(CASES))
def test_vmap_of_lax_atan2_equals_jaxs_values_and_jaxpr(case, ours, theirs, close):
    args, in_axes = CASES[case]
    got = ours.vmap(ours.lax.atan2, in_axes)(*args)
    want = theirs.vmap(theirs.lax.atan2, in_axes)(*args)
    close(got, want, rtol=RTOL_ELEMENTWISE)
    assert np.array_equal(np.signbit(np.asarray(got)), np.signbit(np.asarray(want)))
    ours_jaxpr = ours.make_jaxpr(ours.vmap(ours.lax.atan2, in_axes))(*args)
    jax_jaxpr = theirs.make_jaxpr(theirs.vmap(theirs.lax.atan2, in_axes))(*args)
    assert str(ours_jaxpr) == str(jax_jaxpr)


@pytest.mark.parametrize("name", ["arctan2", "atan2"])
def test_vmap_of_jnp_arctan2_of_ints_and_a_python_scalar_equals_jaxs(name, ours, theirs, close):
    i = np.array([[-3, 0, 2], [1, 4, -2]], np.int32)
    got = ours.vmap(lambda a: getattr(ours.jnp, name)(a, 2))(i)
    want = theirs.vmap(lambda a: getattr(theirs.jnp, name)(a, 2))(i)
    close(got, want, rtol=RTOL_ELEMENTWISE)


def test_out_axes_and_nested_vmap_equal_jaxs(ours, theirs, close):
    x, y = _f(2, 3, 4), _f(4, 2)

    def nested(lib):
        inner = lib.vmap(lib.lax.atan2, (0, 1), out_axes=1)
        return lib.vmap(inner, (1, None))

    close(nested(ours)(x, y), nested(theirs)(x, y), rtol=RTOL_ELEMENTWISE)


def test_vmap_of_grad_and_grad_of_vmap_equal_jaxs(ours, theirs, close):
    x, y = _f(5), _f(5)
    got = ours.vmap(s04.grad(ours.lax.atan2, (0, 1)))(x, y)
    want = theirs.vmap(jax.grad(theirs.lax.atan2, (0, 1)))(x, y)
    close(got, want, rtol=RTOL_ELEMENTWISE)
    got = s04.grad(lambda a: ours.jnp.sum(ours.vmap(ours.lax.atan2, (0, None))(a, y[0])))(x)
    want = jax.grad(lambda a: theirs.jnp.sum(theirs.vmap(theirs.lax.atan2, (0, None))(a, y[0])))(x)
    close(got, want, rtol=RTOL_ELEMENTWISE)


def test_atan2_has_a_batching_rule():
    assert lax.atan2_p in s05.batching.primitive_batchers
