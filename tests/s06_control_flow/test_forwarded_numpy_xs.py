"""A y that is its iteration's x, over a numpy xs: the loop gives back a new array, a constant
of its own in the jaxpr (JAX: `_maybe_put`, a device_put), not the xs constant again."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import stages.s02_tracing as s02
import stages.s06_control_flow as s06

XS = np.linspace(-1, 1, 3).astype(np.float32)
CASES = {
    "scan, y is x": lambda lib: lambda c: lib.scan(lambda c, x: (c + x, x), c, XS),
    "scan of length 0": lambda lib: lambda c: lib.scan(lambda c, x: (c + x, x), c, XS[:0]),
    "scan over float64": lambda lib: lambda c: lib.scan(lambda c, x: (c, x), c, XS.astype(float)),
    "map with a remainder": lambda lib: lambda c: lib.map(
        lambda x: x * 2, [np.arange(5), np.arange(5.0)], batch_size=2),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_forwarded_y_is_a_constant_of_its_own_as_in_jax(name):
    ours = s02.make_jaxpr(CASES[name](s06))(np.float32(0))
    theirs = jax.make_jaxpr(CASES[name](jax.lax))(np.float32(0))
    assert str(ours) == str(theirs)
    assert len(ours.consts) == len(theirs.consts)


def test_the_forwarded_y_is_a_new_array_with_the_values_of_xs():
    ys = s06.scan(lambda c, x: (c, x), np.float32(0), XS)[1]
    assert ys is not XS and np.array_equal(np.asarray(ys), XS) and ys.dtype == np.float32
