"""Eager cummax and cummin of complex values against jax.lax (XLA's compiled values): the
complex order is XLA's, whose max(nan, 1) is 1 and max(1, nan) nan, so where NaNs are the
result depends on the order values are combined in; reversed, each output folds its window in
the array's own order."""

from __future__ import annotations

import numpy as np
import pytest
from jax import lax as jlax

from stages.s02_tracing import lax


def _arrays():
    rng = np.random.default_rng(7)
    for n in (1, 2, 5, 9):
        x = (rng.integers(-2, 3, (n, 3)) + 1j * rng.integers(-2, 3, (n, 3))).astype(np.complex64)
        yield x.copy()
        x[rng.random((n, 3)) < 0.35] = np.nan
        x[0, 0] = complex(np.nan, 0.0)
        yield x


@pytest.mark.parametrize("name", ["cummax", "cummin"])
@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("axis", [0, 1])
def test_complex_running_extrema_with_nans_are_xlas(name, reverse, axis):
    for x in _arrays():
        ours = np.asarray(getattr(lax, name)(x, axis, reverse))
        theirs = np.asarray(getattr(jlax, name)(x, axis, reverse=reverse))
        np.testing.assert_array_equal(ours, theirs)  # NaNs in the same places
