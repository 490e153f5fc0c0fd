"""nonzero, flatnonzero, argwhere, the one-argument where and bincount against JAX's: values,
dtypes and shapes outside a trace (the count read from the values), with `size=` and
`fill_value=` inside one, and JAX's errors where the count would be a tracer."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

from stages.s02_tracing import core, make_jaxpr
from stages.s02_tracing import numpy as jnp

pytestmark = pytest.mark.oracle

ARRAYS = {
    "ints": np.array([0, 3, 0, 5]),
    "floats 2-d": np.array([[0, 1.5], [2, 0]], np.float32),
    "all zero": np.zeros((2, 3), np.float32),
    "bools": np.array([True, False, True]),
    "3-d": np.arange(24).reshape(2, 3, 4) % 3,
    "empty": np.zeros((0, 2), np.float32),
}
OPTIONS = {"none": {}, "cut": {"size": 2}, "padded": {"size": 5},
           "fill": {"size": 5, "fill_value": -1}}
NAMES = ["nonzero", "flatnonzero", "argwhere", "where"]


def _same(ours, theirs):
    ours, theirs = (x if isinstance(x, tuple) else (x,) for x in (ours, theirs))
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        assert (np.shape(a), np.asarray(a).dtype) == (np.shape(b), np.asarray(b).dtype)
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("option", OPTIONS)
@pytest.mark.parametrize("array", ARRAYS)
def test_the_indices_of_the_nonzero_entries_are_jaxs(name, option, array):
    x, kwargs = ARRAYS[array], OPTIONS[option]
    _same(getattr(jnp, name)(x, **kwargs), getattr(jjnp, name)(x, **kwargs))


@pytest.mark.parametrize("value", [3.0, 0.0])
def test_argwhere_of_a_0d_array_has_rows_of_no_indices(value):
    x = np.float32(value)
    _same(jnp.argwhere(x), jjnp.argwhere(x))


def test_a_fill_value_per_axis_pads_each_index_array():
    x = np.array([[0, 2], [3, 0]])
    _same(jnp.nonzero(x, size=4, fill_value=(7, 9)), jjnp.nonzero(x, size=4, fill_value=(7, 9)))


@pytest.mark.parametrize("name", NAMES)
def test_with_a_size_a_trace_gives_jaxs_values(name):
    x = np.array([[0, 2, 0], [3, 0, 4]])

    def f(lib):
        return lambda v: getattr(lib, name)(v, size=4, fill_value=-1)

    closed = make_jaxpr(f(jnp))(x)
    _same(tuple(core.eval_jaxpr(closed.jaxpr, closed.consts, x)),
          tuple(jax.tree_util.tree_leaves(jax.jit(f(jjnp))(x))))


@pytest.mark.parametrize("name", ["nonzero", "where", "argwhere", "flatnonzero", "bincount"])
def test_without_a_size_a_trace_raises_jaxs_concretization_error(name):
    x = np.array([0, 3, 0, 5])
    messages = []
    for lib, trace, error in ((jjnp, jax.make_jaxpr, jax.errors.ConcretizationTypeError),
                              (jnp, make_jaxpr, core.ConcretizationTypeError)):
        with pytest.raises(error) as info:
            trace(lambda v: getattr(lib, name)(v))(x)  # noqa: B023
        messages.append(str(info.value).split("\n")[:2])
    assert messages[0] == messages[1]


def test_x_nonzero_is_an_array_method_on_arrays_and_tracers():
    x = np.array([[0, 2], [3, 0]])
    _same(jnp.asarray(x).nonzero(), jjnp.asarray(x).nonzero())
    closed = make_jaxpr(lambda v: v.nonzero(size=2))(x)
    _same(tuple(core.eval_jaxpr(closed.jaxpr, closed.consts, x)), jjnp.nonzero(x, size=2))


@pytest.mark.parametrize("call", [
    lambda lib: lib.where(np.array([0, 1]), 1, size=2),
    lambda lib: lib.where(np.array([0, 1]), None, 1),
    lambda lib: lib.where(np.array([0, 1]), 1, 2, fill_value=0),
    lambda lib: lib.nonzero(np.float32(3)),
    lambda lib: lib.nonzero(np.array([0, 1]), size=2, fill_value=(1, 2)),
    lambda lib: lib.nonzero(np.array([0, 1]), size=2, fill_value=np.array([1, 2])),
    lambda lib: lib.bincount(np.array([1.0, 2.0])),
    lambda lib: lib.bincount(np.array([[1, 2]])),
    lambda lib: lib.bincount(np.array([1, 2]), weights=np.array([1.0])),
    lambda lib: lib.bincount(np.array([3, 0]), weights=np.array([True, False])),
], ids=["where size", "where one None", "where fill", "0-d", "fill tuple length",
        "fill not scalar", "bincount float", "bincount 2-d", "bincount weights",
        "bincount bool weights"])
def test_errors_are_jaxs(call):
    raised = []
    for lib in (jjnp, jnp):
        with pytest.raises(Exception) as info:
            call(lib)
        raised.append((type(info.value), str(info.value).replace("({})", "")))
    assert raised[0] == raised[1]  # JAX prints a type's (empty) varying axes as ({})


@pytest.mark.parametrize("args, kwargs", [
    (([0, 1, 1, 3],), {}),
    (([0, 1, 1, 3], [1.0, 2.0, 3.0, 4.0]), {}),
    (([0, 1, 1, 3],), {"minlength": 6}),
    (([0, 1, 1, 3],), {"length": 2}),
    (([-1, 2, 2],), {}),
    (([],), {"minlength": 3}),
], ids=["counts", "weights", "minlength", "length cuts", "negative is 0", "empty"])
def test_bincount_is_jaxs(args, kwargs):
    arrays = [np.array(a, np.int32 if i == 0 else None) for i, a in enumerate(args)]
    _same(jnp.bincount(*arrays, **kwargs), jjnp.bincount(*arrays, **kwargs))
