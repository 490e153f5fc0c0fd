"""gather and the scatters against jax.lax: values in every mode, printed jaxprs, error texts."""

from __future__ import annotations

from types import SimpleNamespace

import jax
import numpy as np
import pytest

import stages.s02_tracing as s02
from shared.testing import assert_same_typed_values

OURS = SimpleNamespace(lax=s02.lax, make_jaxpr=s02.make_jaxpr)
THEIRS = SimpleNamespace(lax=jax.lax, make_jaxpr=jax.make_jaxpr)

f32 = np.float32
_rng = np.random.default_rng(21)
X = _rng.standard_normal((5, 4)).astype(f32)
X3 = _rng.standard_normal((3, 5, 4)).astype(f32)
ROWS = np.array([[1], [4], [0], [1]], np.int32)
ROWS_OOB = np.array([[1], [7], [-2], [3]], np.int32)
PAIRS = np.array([[0, 1], [4, 2], [2, 3]], np.int32)
PAIRS_OOB = np.array([[0, 1], [4, 3], [6, 0]], np.int32)


def _gdn(lax, *args):
    return lax.GatherDimensionNumbers(*args)


def _sdn(lax, *args):
    return lax.ScatterDimensionNumbers(*args)


# id -> (fn(lax) -> f(operand, indices), operand, indices)
GATHERS = {
    "rows": (lambda lax: lambda x, i: lax.gather(x, i, _gdn(lax, (1,), (0,), (0,)), (1, 4)),
             X, ROWS),
    "rows_clip": (lambda lax: lambda x, i: lax.gather(x, i, _gdn(lax, (1,), (0,), (0,)), (1, 4),
                                                      mode="clip"), X, ROWS_OOB),
    "rows_fill": (lambda lax: lambda x, i: lax.gather(x, i, _gdn(lax, (1,), (0,), (0,)), (1, 4),
                                                      mode="fill"), X, ROWS_OOB),
    "rows_fill_value": (lambda lax: lambda x, i: lax.gather(
        x, i, _gdn(lax, (1,), (0,), (0,)), (1, 4), mode="fill", fill_value=-1.0), X, ROWS_OOB),
    "elements": (lambda lax: lambda x, i: lax.gather(x, i, _gdn(lax, (), (0, 1), (0, 1)),
                                                     (1, 1)), X, PAIRS),
    "windows": (lambda lax: lambda x, i: lax.gather(x, i, _gdn(lax, (1, 2), (), (0, 1)),
                                                    (2, 2), mode="clip"), X, PAIRS_OOB),
    "window_first": (lambda lax: lambda x, i: lax.gather(x, i, _gdn(lax, (0,), (1,), (1,)),
                                                         (5, 1)), X, np.array([[3], [0]],
                                                                              np.int32)),
    "batching_dims": (lambda lax: lambda x, i: lax.gather(
        x, i, _gdn(lax, (1,), (1,), (1,), (0,), (0,)), (1, 1, 4)), X3,
        np.array([[2], [0], [4]], np.int32)),
    "int_fill": (lambda lax: lambda x, i: lax.gather(x, i, _gdn(lax, (1,), (0,), (0,)), (1, 4),
                                                     mode="fill"),
                 np.arange(20, dtype=np.int32).reshape(5, 4), ROWS_OOB),
}


@pytest.mark.parametrize("case", sorted(GATHERS))
def test_gather_values_match_jax(case):
    build, x, i = GATHERS[case]
    assert_same_typed_values(build(OURS.lax)(x, i), build(THEIRS.lax)(x, i))


@pytest.mark.parametrize("case", ["rows", "rows_fill", "elements", "batching_dims"])
def test_gather_jaxpr_prints_as_jax(case):
    build, x, i = GATHERS[case]
    assert str(OURS.make_jaxpr(build(OURS.lax))(x, i)) == \
        str(THEIRS.make_jaxpr(build(THEIRS.lax))(x, i))


U_ROWS = _rng.standard_normal((4, 4)).astype(f32)
U_ELEMS = _rng.standard_normal(3).astype(f32)

# id -> (scatter name, dimension numbers args, operand, indices, updates, mode)
SCATTERS = {
    f"{name}_{shape}_{mode}": (name, dn, x, i, u, mode)
    for name in ("scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max")
    for shape, dn, x, i, u in (
        ("rows", ((1,), (0,), (0,)), X, np.array([[1], [4], [0], [3]], np.int32), U_ROWS),
        ("rows_oob", ((1,), (0,), (0,)), X, np.array([[1], [7], [0], [-1]], np.int32), U_ROWS),
        ("elements", ((), (0, 1), (0, 1)), X, PAIRS, U_ELEMS),
    )
    for mode in (None, "clip")
}
# repeated indices: add, mul, min and max combine the updates (replacement order is unspecified)
SCATTERS.update({
    f"{name}_repeated": (name, ((1,), (0,), (0,)), X, ROWS, U_ROWS, None)
    for name in ("scatter_add", "scatter_mul", "scatter_min", "scatter_max")})


@pytest.mark.parametrize("case", sorted(SCATTERS))
def test_scatter_values_match_jax(case):
    name, dn, x, i, u, mode = SCATTERS[case]
    ours = getattr(OURS.lax, name)(x, i, u, _sdn(OURS.lax, *dn), mode=mode)
    theirs = getattr(THEIRS.lax, name)(x, i, u, _sdn(THEIRS.lax, *dn), mode=mode)
    assert_same_typed_values(ours, theirs)


@pytest.mark.parametrize("name", ["scatter", "scatter_add", "scatter_mul", "scatter_min",
                                  "scatter_max"])
def test_scatter_jaxpr_prints_as_jax(name):
    def build(lax):
        return lambda x, i, u: getattr(lax, name)(x, i, u, _sdn(lax, (1,), (0,), (0,)),
                                                  mode="clip")
    i = np.array([[1], [3]], np.int32)
    u = U_ROWS[:2]
    assert str(OURS.make_jaxpr(build(OURS.lax))(X, i, u)) == \
        str(THEIRS.make_jaxpr(build(THEIRS.lax))(X, i, u))


def _error(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value)


ERRORS = {
    "float_indices": lambda lax: lax.gather(X, ROWS.astype(f32), _gdn(lax, (1,), (0,), (0,)),
                                            (1, 4)),
    "slice_too_big": lambda lax: lax.gather(X, ROWS, _gdn(lax, (1,), (0,), (0,)), (1, 9)),
    "collapse_wide": lambda lax: lax.gather(X, ROWS, _gdn(lax, (1,), (0,), (0,)), (2, 4)),
    "index_map_length": lambda lax: lax.gather(X, ROWS, _gdn(lax, (1,), (0,), (0, 1)), (1, 4)),
    "offset_unsorted": lambda lax: lax.gather(X, PAIRS, _gdn(lax, (2, 1), (), (0, 1)), (2, 2)),
    "slice_sizes_rank": lambda lax: lax.gather(X, ROWS, _gdn(lax, (1,), (0,), (0,)), (1,)),
    "bad_mode": lambda lax: lax.gather(X, ROWS, _gdn(lax, (1,), (0,), (0,)), (1, 4),
                                       mode="wrap"),
    "scatter_dtypes": lambda lax: lax.scatter_add(X, ROWS, U_ROWS.astype(np.float16),
                                                  _sdn(lax, (1,), (0,), (0,))),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_gather_scatter_errors_match_jax(case):
    assert _error(lambda: ERRORS[case](OURS.lax)) == _error(lambda: ERRORS[case](THEIRS.lax))
