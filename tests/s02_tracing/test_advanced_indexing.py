"""NumPy advanced indexing (a gather) and `x.at[...]` (a scatter), against jax.numpy."""

from __future__ import annotations

from types import SimpleNamespace

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import stages.s02_tracing as s02
from shared.testing import assert_same_typed_values

OURS = SimpleNamespace(jnp=s02.numpy, make_jaxpr=s02.make_jaxpr)
THEIRS = SimpleNamespace(jnp=jjnp, make_jaxpr=jax.make_jaxpr)

X = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
I = np.array([2, -1, 0], np.int32)

# id -> f(a, i) with a = asarray(X), i = asarray(I)
CASES = {
    "rows": lambda a, i: a[i[:2] % 2],
    "middle_axis": lambda a, i: a[:, i],
    "with_a_slice": lambda a, i: a[:, i, 1:3],
    "int_array_none": lambda a, i: a[0, i, None],
    "ellipsis": lambda a, i: a[..., i],
    "apart_goes_first": lambda a, i: a[i[:2] % 2, :, i[:2]],
    "none_between": lambda a, i: a[i[:2] % 2, None, i[1:]],
    "bool_vector": lambda a, i: a[np.array([True, False])],
    "bool_mask": lambda a, i: a[X > 10],
    "strided_and_2d": lambda a, i: a[1, ::2, np.array([[0, 3]], np.int32)],
    "at_set": lambda a, i: a.at[i[:2] % 2].set(7.0),
    "at_add_repeated": lambda a, i: a.at[:, np.array([1, 1, 2])].add(1.0),
    "at_add_traced": lambda a, i: a.at[:, i].add(1.0),
    "at_mul_slice": lambda a, i: a.at[0, 1:3].mul(2.0),
    "at_max_none": lambda a, i: a.at[:, i, None].max(20.0),
    "at_min": lambda a, i: a.at[1, i].min(np.arange(4, dtype=np.float32)),
    "at_mask": lambda a, i: a.at[X > 20].set(0.0),
    "at_out_of_bounds_dropped": lambda a, i: a.at[1, 5].set(3.0),
    "at_get": lambda a, i: a.at[:, 1].get(),
    "at_get_fill": lambda a, i: a.at[:, np.array([7, 1])].get(mode="fill", fill_value=-1.0),
    "at_set_int_to_float": lambda a, i: a.at[0, 0, 0].set(5),
    # numbers are made positive while tracing, and a basic index is one sorted, unique index
    "at_set_number": lambda a, i: a.at[1].set(0.0),
    "at_add_negative_numbers": lambda a, i: a.at[-1, np.int32(-2)].add(1.0),
    "at_get_number_fill": lambda a, i: a.at[0, 2].get(mode="fill"),
    "at_numpy_negative_indices": lambda a, i: a.at[np.array([0, -1])].set(1.0),
    # an int array updated by floats: the scatter runs in float32, then converts back
    "at_add_float_to_int": lambda a, i: i.at[1].add(0.5),
    "at_mul_float_to_int": lambda a, i: i.at[0].mul(0.5),
    "at_set_float_to_int": lambda a, i: i.at[np.array([0, 2])].set(np.float32(1.5)),
    "at_add_fitting_int": lambda a, i: i.astype(np.uint8).at[0].add(300),
    # a scalar bool is a new axis of size 1 (True) or 0 (False)
    "bool_true": lambda a, i: a[True],
    "bool_false": lambda a, i: a[False],
    "bool_after_int": lambda a, i: a[0, True],
    "bool_numpy_0d": lambda a, i: a[np.array(True)],
    "bool_then_array": lambda a, i: a[1, True, i],
    "at_bool_set": lambda a, i: a.at[True].set(1.0),
    "at_bool_false_add": lambda a, i: a.at[False].add(1.0),
}


@pytest.mark.filterwarnings("ignore:scatter inputs have incompatible types")
@pytest.mark.parametrize("case", sorted(CASES))
def test_advanced_indexing_matches_jax(case):
    def run(ns):
        return CASES[case](ns.jnp.asarray(X), ns.jnp.asarray(I))
    assert_same_typed_values(run(OURS), run(THEIRS))


# the rest print differently, with the same values: JAX wraps `%` in a jit (rows, at_set,
# apart_goes_first); it folds partial slices into the gather's windows and None into its output
# where ours slices first and expands the operand (with_a_slice, int_array_none, none_between,
# strided_and_2d, at_max_none); and it broadcasts a number beside an array index to the array's
# shape before making it a column (at_min)
PRINTS_AS_JAX = ["at_add_negative_numbers", "at_add_repeated", "at_add_traced", "at_get",
                 "at_get_fill", "at_get_number_fill", "at_mask", "at_mul_slice",
                 "at_numpy_negative_indices", "at_out_of_bounds_dropped", "at_set_int_to_float",
                 "at_set_number", "bool_mask", "bool_vector", "ellipsis", "middle_axis",
                 "at_add_float_to_int", "at_mul_float_to_int", "at_set_float_to_int",
                 "at_add_fitting_int", "bool_true", "bool_numpy_0d"]


@pytest.mark.filterwarnings("ignore:scatter inputs have incompatible types")
@pytest.mark.parametrize("case", PRINTS_AS_JAX)
def test_advanced_indexing_jaxpr_prints_as_jax(case):
    def run(ns):
        return str(ns.make_jaxpr(CASES[case])(X, I))
    assert run(OURS) == run(THEIRS)


def test_an_update_that_does_not_fit_the_dtype_warns_as_jax_does():
    def run(ns):
        with pytest.warns(FutureWarning) as record:
            ns.jnp.asarray(I).at[1].add(0.5)
        return [str(w.message) for w in record]
    assert run(OURS) == run(THEIRS)


def test_grad_through_indexing_matches_jax():
    def run(ns):
        def f(a):
            return (a[:, I] ** 2).sum() + a.at[0, I].add(a[1, I]).sum()
        return jax.grad(f)(X) if ns is THEIRS else s04_grad(f)(X)
    from stages.s04_autodiff import grad as s04_grad
    assert_same_typed_values(run(OURS), run(THEIRS))


def _error(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value).__name__, str(info.value)


ERRORS = {
    "traced_mask": lambda ns, a: ns.make_jaxpr(lambda a: a[a > 3])(X),
    "float": lambda ns, a: a[np.array([1.5], np.float32)],
    "list": lambda ns, a: a[[1, 0]],
    "python_float": lambda ns, a: a[1.0],
    "float_after_int": lambda ns, a: a[0, 1.0],
    "numpy_float": lambda ns, a: a[np.float32(1)],
    "float_0d_array": lambda ns, a: a[np.array(1.0)],
    "at_float": lambda ns, a: a.at[1.0].set(2.0),
    "size_0_axis": lambda ns, a: a[:, :0][0, 0],
}


@pytest.mark.parametrize("index", sorted(ERRORS))
def test_indexing_errors_match_jax(index):
    def run(ns):
        return ERRORS[index](ns, ns.jnp.asarray(X))
    assert _error(lambda: run(OURS)) == _error(lambda: run(THEIRS))


_X = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
_XI = np.arange(1, 7, dtype=np.int32)
AT_SCALED = {
    "divide": (lambda a: a.at[0, 1].divide(4.0), _X),
    "power_column": (lambda a: a.at[:, 1].power(2.0), _X),
    "divide_int": (lambda a: a.at[2].divide(2), _XI),
    "power_int": (lambda a: a.at[np.array([1, 3])].power(3), _XI),
    "divide_twice": (lambda a: a.at[np.array([1, 1])].divide(2.0), _XI.astype(np.float32)),
}


@pytest.mark.parametrize("name", sorted(AT_SCALED))
def test_at_divide_and_power_scatter_into_ones_as_jax(name):
    f, x = AT_SCALED[name]
    ours, theirs = f(OURS.jnp.asarray(x)), f(THEIRS.jnp.asarray(x))
    assert (np.asarray(ours).tolist(), ours.dtype, ours.weak_type) == \
        (np.asarray(theirs).tolist(), theirs.dtype, theirs.weak_type)
    with jax.disable_jit():
        assert str(OURS.make_jaxpr(f)(x)) == str(THEIRS.make_jaxpr(f)(x))
