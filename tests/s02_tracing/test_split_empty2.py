"""split, empty2, and pad's params as JAX prints them.

lax.split cuts an array into consecutive pieces along an axis, one equation with several
results; empty2 is a rank-0 value of unspecified contents (a split cond fills residual slots
with it); lax.pad keeps its config's numbers as given, so an np.int64 prints as one.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from jax._src.lax import lax as jax_lax_internal

import stages.s02_tracing as s02
from shared.testing import assert_same_typed_values

pytestmark = pytest.mark.oracle

X = np.arange(12, dtype=np.float32).reshape(3, 4)

SPLITS = {
    "axis 0": (X, (1, 2), 0),
    "axis 1": (X, (2, 1, 1), 1),
    "negative axis": (X, (3, 1), -1),
    "empty piece": (X, (0, 3), 0),
    "one piece": (X, (4,), 1),
    "int32": (np.arange(6, dtype=np.int32), (2, 4), 0),
}


@pytest.mark.parametrize("name", SPLITS)
def test_split_values_equal_jaxs(name):
    x, sizes, axis = SPLITS[name]
    assert_same_typed_values(s02.lax.split(x, sizes, axis), jax.lax.split(x, sizes, axis))


@pytest.mark.parametrize("name", SPLITS)
def test_split_jaxpr_prints_as_jaxs(name):
    x, sizes, axis = SPLITS[name]
    ours = s02.make_jaxpr(lambda v: s02.lax.split(v, sizes, axis))(x)
    theirs = jax.make_jaxpr(lambda v: jax.lax.split(v, sizes, axis))(x)
    assert str(ours) == str(theirs)


def test_split_of_a_python_scalar_times_array_keeps_the_weak_type():
    f = lambda lax: lambda v: lax.split(v * 2.0, (1, 2))
    ours = s02.make_jaxpr(f(s02.lax))(np.float32(1) * np.ones(3, np.float32))
    theirs = jax.make_jaxpr(f(jax.lax))(np.float32(1) * np.ones(3, np.float32))
    assert str(ours) == str(theirs)


@pytest.mark.parametrize("sizes, axis", [((1, 1), 0), ((-1, 4), 0), ((1, 2), 1)])
def test_split_errors_are_jaxs(sizes, axis):
    x = np.ones(3, np.float32)
    with pytest.raises(ValueError) as theirs:
        jax.lax.split(x, sizes, axis)
    with pytest.raises(ValueError) as ours:
        s02.lax.split(x, sizes, axis)
    assert str(ours.value) == str(theirs.value)
    with pytest.raises(ValueError) as traced:
        s02.make_jaxpr(lambda v: s02.lax.split(v, sizes, axis))(x)
    assert str(traced.value) == str(theirs.value)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_empty2_prints_as_jaxs(dtype):
    ours = s02.make_jaxpr(lambda: s02.lax.empty2(dtype))()
    device = jax._src.core.MemorySpace.Device
    theirs = jax.make_jaxpr(lambda: jax_lax_internal.empty2(np.dtype(dtype), memory_space=device))()
    assert str(ours) == str(theirs)
    assert s02.lax.empty2(dtype).shape == () and s02.lax.empty2(dtype).dtype == dtype


def test_empty_like_shaped_array_is_empty2_broadcast_as_jaxs():
    from stages.s02_tracing.lax.empty import empty_like_shaped_array

    x = np.ones((2, 3), np.float32)
    ours = s02.make_jaxpr(lambda v: empty_like_shaped_array(s02.core.get_aval(v)))(x)
    theirs = jax.make_jaxpr(lambda v: jax_lax_internal.empty_like_shaped_array(
        jax.typeof(v)))(x)
    assert str(ours) == str(theirs)


@pytest.mark.parametrize("config", [
    [(np.int64(1), 2, 0)],
    [(0, np.int64(2), np.int64(1))],
    [(np.int32(1), 1, 0)],
])
def test_pad_keeps_the_config_numbers_as_jax_does(config):
    x = np.ones(3, np.float32)
    ours = s02.make_jaxpr(lambda v: s02.lax.pad(v, np.float32(0), config))(x)
    theirs = jax.make_jaxpr(lambda v: jax.lax.pad(v, np.float32(0), config))(x)
    assert str(ours) == str(theirs)
    assert_same_typed_values(s02.lax.pad(x, np.float32(0), config),
                             jax.lax.pad(x, np.float32(0), config))
