"""The eager Array: what a primitive returns outside a transformation, compared with JAX's Array.

Its operators go through the primitives, as a tracer's do, so eager code promotes dtypes and
keeps weak types exactly as traced code (and JAX) does; it prints as JAX's does.
"""

from __future__ import annotations

import pickle

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax as jlax

from shared.testing import assert_same_typed_values
from stages.s02_tracing import Array, core, eval_jaxpr, make_jaxpr
from stages.s02_tracing import lax as olax
from stages.s02_tracing import numpy as onp

XV = np.array([0.1, 0.5, 0.9], np.float32)
M = np.arange(6, dtype=np.float32).reshape(2, 3)


def both(f):
    """f on our numpy facade and on jax.numpy (f takes the module)."""
    return f(onp), f(jnp)


# ------------------------------------------------------------------ promotion, eager and traced

PROGRAMS = {
    "int_array_times_float_numpy": lambda np_: np_.astype(XV, np_.int32) * XV,
    "python_float_times_int_array": lambda np_: 2.5 * np_.ones(3, np_.int32),
    "weak_scalar_result": lambda np_: np_.sin(2.0),
    "weak_int_plus_one": lambda np_: np_.asarray(1) + 1,
    "bool_times_python_int": lambda np_: np_.asarray(XV > 0.3) * 2,
    "int_divided_by_python_int": lambda np_: np_.astype(XV, np_.int32) / 2,
    "numpy_array_times_array": lambda np_: np.ones(3, np.float32) * np_.ones(3, np_.int32),
    "numpy_scalar_times_array": lambda np_: np.float32(2) * np_.ones(3, np_.int32),
    "weak_times_weak": lambda np_: np_.asarray(2.0) * np_.asarray(3.0),
    "float16_plus_python_float": lambda np_: np_.ones(2, np_.float16) + 1.5,
    "reduction_of_weak": lambda np_: (np_.ones(3) * 1.0).sum(),
    "methods": lambda np_: (np_.ones((2, 3)).T.shape, np_.ones((2, 3)).astype(np_.int32),
                            np_.arange(6.0).reshape(2, 3).sum(axis=0)),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_eager_code_promotes_and_keeps_weak_types_as_jax(name):
    ours, theirs = both(PROGRAMS[name])
    assert_same_typed_values(ours, theirs)


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_eager_and_traced_code_give_the_same_types(name):
    f = PROGRAMS[name]
    eager = f(onp)
    closed = make_jaxpr(lambda: f(onp))()
    traced = eval_jaxpr(closed.jaxpr, closed.consts)
    for e, t in zip(jax.tree_util.tree_leaves(eager), traced, strict=True):
        assert core.get_aval(e) == core.get_aval(t)


def test_eager_results_are_arrays_everywhere_a_primitive_runs():
    assert isinstance(onp.sin(XV), Array)
    assert isinstance(olax.add(1.0, 2.0), Array)
    closed = make_jaxpr(lambda x: onp.sin(x) * 2.0)(XV)
    (out,) = eval_jaxpr(closed.jaxpr, closed.consts, XV)
    assert isinstance(out, Array)  # eval_jaxpr at the top level binds eagerly


# ------------------------------------------------------------------ printing


@pytest.mark.parametrize("make", [
    lambda np_: np_.asarray(np.array([1.0, 2.0], np.float32)),
    lambda np_: np_.asarray(2.0),
    lambda np_: np_.asarray(2),
    lambda np_: np_.asarray(True),
    lambda np_: np_.arange(3) * 2,
    lambda np_: np_.ones((2, 3)),
    lambda np_: np_.zeros((0,)),
    lambda np_: np_.asarray(np.array([True, False])),
    lambda np_: np_.ones((20, 30)),
    lambda np_: np_.asarray(np.array([3], np.uint8)),
    lambda np_: np_.ones((2, 2)) * 1.0,
], ids=["f32", "weak_f32", "weak_i32", "bool", "int_arange", "matrix", "empty", "bools",
        "wide", "uint8", "weak_times_strong"])
def test_an_array_prints_as_jaxs(make):
    ours, theirs = both(make)
    assert repr(ours) == repr(theirs)
    assert str(ours) == str(theirs)


def test_format_and_python_conversions_are_jaxs():
    ours, theirs = both(lambda np_: np_.asarray(2.5))
    assert f"{ours:.3f}" == f"{theirs:.3f}"
    assert float(ours) == float(theirs) and int(ours) == int(theirs) and bool(ours)
    assert [1, 2, 3][onp.asarray(1)] == 2
    assert onp.arange(3.0)[1].item() == 1.0 and onp.ones(2).tolist() == [1.0, 1.0]
    assert len(onp.ones(3)) == 3 and 1.0 in onp.ones(2)
    with pytest.raises(TypeError, match="unhashable type"):
        hash(onp.ones(2))
    with pytest.raises(TypeError, match="Only scalar arrays can be converted"):
        float(onp.ones(2))


def test_iteration_gives_rows_as_arrays():
    ours, theirs = both(lambda np_: list(np_.arange(3.0)))
    assert [repr(x) for x in ours] == [repr(x) for x in theirs]


def test_an_array_is_immutable_and_pickles_with_its_weak_type():
    x = onp.asarray(2.0)
    assert not np.asarray(x).flags.writeable
    y = pickle.loads(pickle.dumps(x))
    assert repr(y) == repr(x) == "Array(2., dtype=float32, weak_type=True)"
    data = np.ones(3, np.float32)
    onp.asarray(data)
    assert data.flags.writeable  # the caller's array is left alone


@pytest.mark.parametrize("convert", [np.array, lambda x: np.array(x, copy=True),
                                     lambda x: np.array(x, copy=False), np.asarray,
                                     lambda x: np.asarray(x, dtype=np.float64)],
                         ids=["array", "array_copy", "array_no_copy", "asarray", "asarray_f64"])
def test_numpy_copies_when_asked_and_only_then_as_in_jax(convert):
    def seen(x):
        out = convert(x)
        return out.flags.writeable, np.shares_memory(out, np.asarray(x))
    ours, theirs = both(lambda np_: seen(np_.ones(3)))
    assert ours == theirs


# ------------------------------------------------------------------ indexing with arrays


def test_a_traced_index_into_an_eager_result_is_a_dynamic_slice():
    from stages.s06_control_flow import fori_loop

    ours = fori_loop(0, 3, lambda i, c: c + onp.sin(onp.arange(3.0))[i], 0.0)
    theirs = jax.lax.fori_loop(0, 3, lambda i, c: c + jnp.sin(jnp.arange(3.0))[i], 0.0)
    assert_same_typed_values(ours, theirs)


@pytest.mark.parametrize("index", [np.array(1), np.array(-1, np.int32), np.int32(2)],
                         ids=["int64_array", "negative_int32_array", "numpy_scalar"])
def test_a_0d_integer_array_index_stages_what_jax_stages(index):
    ours = make_jaxpr(lambda a: a[index])(XV)
    theirs = jax.make_jaxpr(lambda a: a[index])(XV)
    assert str(ours) == str(theirs)


def test_an_eager_array_index_gives_jaxs_value():
    ours, theirs = both(lambda np_: np_.asarray(M)[np_.argmax(np_.asarray(XV)) - 1])
    assert_same_typed_values(ours, theirs)


# ------------------------------------------------------------------ conversions of Python ints


@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
@pytest.mark.parametrize("value, dtype", [(2**100, np.float32), (2**40, np.int32),
                                          (-(2**70), np.float16), (7, np.uint8)])
def test_a_big_python_int_converts_as_in_jax(value, dtype):
    assert_same_typed_values(olax.convert_element_type(value, dtype),
                             jlax.convert_element_type(value, dtype))
    ours = make_jaxpr(lambda x: x + olax.convert_element_type(value, dtype))(dtype(1))
    theirs = jax.make_jaxpr(lambda x: x + jlax.convert_element_type(value, dtype))(dtype(1))
    assert str(ours) == str(theirs)
