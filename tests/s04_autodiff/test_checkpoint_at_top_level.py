"""checkpoint called outside any transformation traces its function (a tracer that leaks out of
it is caught as in JAX), and saved_residuals lists what JAX lists, in JAX's order."""

from __future__ import annotations

import re

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from jax._src.ad_checkpoint import saved_residuals as jax_saved_residuals

from stages.s02_tracing import UnexpectedTracerError
from stages.s02_tracing import numpy as jnp
from stages.s04_autodiff import ad_checkpoint, checkpoint


def _leaky(np_, leak):
    def g(x):
        y = np_.sin(x) * 2.0
        leak.append(y)
        return y
    return g


def test_a_tracer_leaked_from_a_top_level_checkpoint_is_caught_as_in_jax():
    ours, theirs = [], []
    np.testing.assert_allclose(checkpoint(_leaky(jnp, ours))(1.0),
                               jax.checkpoint(_leaky(jjnp, theirs))(1.0), rtol=1e-6)
    assert repr(ours[0]) == repr(theirs[0]) == "JitTracer(~float32[])"
    with pytest.raises(UnexpectedTracerError) as mine:
        ours[0] + 1.0
    with pytest.raises(jax.errors.UnexpectedTracerError) as real:
        theirs[0] + 1.0
    assert str(mine.value).split("\n")[0] == str(real.value).split("\n")[0]


FUNCTIONS = {
    "sin_of_a_product": lambda np_, cp: lambda x: np_.sin(x * 2.0) * x,
    "two_arguments": lambda np_, cp: lambda x, y: np_.sin(x * y) * np_.cos(y),
    "checkpoint_inside": lambda np_, cp: lambda x: cp(lambda z: np_.sin(np_.sin(z)) * z)(x),
    "checkpoint_times_x": lambda np_, cp: lambda x: cp(lambda z: np_.sin(z) * z)(x) * x,
    "square_of_a_product": lambda np_, cp: lambda x, y: (x * y) ** 2,
    "products_of_products": lambda np_, cp: lambda x: (x * x) * (x * x),
    "three_factors": lambda np_, cp: lambda x: np_.tanh(x) * np_.sin(x) * x,
}


def _without_source(entries):
    return [re.sub(r" from /.*", "", s) for _, s in entries]


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_saved_residuals_lists_what_jax_lists(name):
    ours_f = FUNCTIONS[name](jnp, checkpoint)
    args = (np.float32(0.7),) * ours_f.__code__.co_argcount
    ours = ad_checkpoint.saved_residuals(ours_f, *args)
    theirs = jax_saved_residuals(FUNCTIONS[name](jjnp, jax.checkpoint), *args)
    assert [s for _, s in ours] == _without_source(theirs)
    assert [str(a) for a, _ in ours] == [str(a) for a, _ in theirs]
