"""The numpy facade: JAX's promotion with weak types on the whole dtype grid, values, errors."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import stages.s02_tracing as s02
from shared.testing import RTOL_ELEMENTWISE, RTOL_REDUCTION, canonical_error_text
from stages.s02_tracing import numpy as snp
from stages.s02_tracing.array import Array

_NAMES = ["bool", "uint8", "uint16", "uint32", "int8", "int16", "int32", "float16", "float32",
          "complex64"]
# One value per grid point: 2-element arrays of each dtype, then weak Python scalars (and a
# Python bool, which JAX does not treat as weak).
GRID = [np.array([1, 2]).astype(n) for n in _NAMES] + [3, 1.5, 2j, True]
GRID_IDS = _NAMES + ["py_int", "py_float", "py_complex", "py_bool"]
BINARY_OPS = ["add", "subtract", "multiply", "true_divide", "maximum", "equal"]


def _outcome(make_jaxpr, fn, *args):
    """(dtype, weak_type) of fn's traced output, or the error it raised."""
    try:
        (aval,) = make_jaxpr(fn)(*args).out_avals
    except Exception as e:  # noqa: BLE001  (the error itself is compared)
        return type(e).__name__, canonical_error_text(str(e))
    return aval.dtype, aval.weak_type


@pytest.mark.parametrize("op", BINARY_OPS)
@pytest.mark.parametrize("a", GRID, ids=GRID_IDS)
def test_binary_result_dtype_and_weak_type_equal_jnp_on_the_whole_grid(op, a):
    for b in GRID:
        ours = _outcome(s02.make_jaxpr, getattr(snp, op), a, b)
        theirs = _outcome(jax.make_jaxpr, getattr(jnp, op), a, b)
        assert ours == theirs, (a, b)


@pytest.mark.parametrize("a", GRID, ids=GRID_IDS)
def test_tracer_operators_promote_like_jax_arrays(a):
    for b in GRID:
        for fn in (lambda x, y: x * y, lambda x, y: y - x, lambda x, y: x / y):
            assert _outcome(s02.make_jaxpr, fn, a, b) == _outcome(jax.make_jaxpr, fn, a, b)


@pytest.mark.parametrize("a", GRID[:-4], ids=GRID_IDS[:-4])
def test_eager_results_have_jnp_dtypes(a):
    for b in GRID:
        for op in ("add", "multiply", "maximum"):
            try:
                theirs = jax.eval_shape(getattr(jnp, op), a, b).dtype
            except TypeError:
                continue
            assert getattr(snp, op)(a, b).dtype == theirs, (op, a, b)


def test_a_python_scalar_does_not_widen_an_f32_array():
    x = np.ones(3, np.float32)
    assert snp.multiply(x, 2.0).dtype == np.float32
    assert snp.add(x.astype(np.float16), 1).dtype == np.float16
    assert snp.add(np.ones(3, np.int8), 1000).dtype == np.int8
    assert snp.add(np.ones(3, np.int32), 1.5).dtype == np.float32


rng = np.random.default_rng(1)
X = rng.standard_normal((3, 4)).astype(np.float32)
POS = (rng.random((3, 4)) + 0.5).astype(np.float32)
I = rng.integers(-5, 6, size=(3, 4)).astype(np.int32)


def _same(name, *args, rtol=RTOL_ELEMENTWISE, **kwargs):
    ours = getattr(snp, name)(*args, **kwargs)
    theirs = getattr(jnp, name)(*args, **kwargs)
    assert getattr(ours, "weak_type", False) == getattr(theirs, "weak_type", False), name
    # an array of ours wherever JAX gives an array of its own, not the numpy input back (JAX
    # hands back some numpy inputs, e.g. reshape's or an int's ceil: ours need not)
    assert isinstance(ours, Array) or not isinstance(theirs, jax.Array), (name, type(ours))
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, (name, ours, theirs)
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=1e-6)


@pytest.mark.parametrize(
    "name, args",
    [("add", (X, X[0])), ("add", (I, 1.5)), ("subtract", (I, X)), ("multiply", (X, 2)),
     ("divide", (I, 4)), ("true_divide", (X, POS)), ("floor_divide", (I, 3)),
     ("floor_divide", (X, 0.7)), ("floor_divide", (I, 2.5)), ("floor_divide", (I > 0, 2.5)),
     ("remainder", (I, -3)), ("remainder", (X, 0.7)),
     ("mod", (I, 4)), ("power", (X, 3)), ("power", (POS, 0.5)), ("power", (POS, I)),
     ("negative", (X,)), ("exp", (I,)), ("log", (POS,)), ("log1p", (POS,)), ("sin", (X,)),
     ("cos", (X,)), ("tan", (X * 0.5,)), ("tanh", (X,)), ("sqrt", (POS,)), ("abs", (I,)),
     ("absolute", (X,)), ("sign", (X,)), ("floor", (X,)), ("ceil", (I,)), ("maximum", (X, 0.0)),
     ("minimum", (I, X)), ("equal", (I, 1)), ("not_equal", (X, X)), ("less", (I, 0)),
     ("greater_equal", (X, POS)), ("bitwise_and", (I, 3)), ("bitwise_or", (I > 0, I < 0)),
     ("bitwise_xor", (I, 5)), ("invert", (I,)), ("left_shift", (I, 2)),
     ("right_shift", (I, 1)), ("square", (X,)), ("reciprocal", (POS,)),
     ("where", (X > 0, X, 0.0)), ("where", (I, X, I)), ("clip", (X, -0.5, 0.5)),
     ("positive", (I,)), ("abs", (I.astype(np.uint8),)), ("positive", (X > 0,)),
     ("floor", (I,)), ("real", (X,)), ("conjugate", (I,)), ("floor", (3,)),
     ("astype", (np.array([100j, 0, 1], np.complex64), bool)),
     # shifts promote bools to int32
     ("left_shift", (I > 0, True)), ("right_shift", (I > 0, True))],
)
def test_elementwise_functions_match_jnp(name, args):
    _same(name, *args)


@pytest.mark.parametrize(
    "name, args, kwargs",
    [("sum", (X,), {}), ("sum", (I > 0,), {"axis": 0}), ("sum", (X,), {"axis": -1,
     "keepdims": True}), ("sum", (I.astype(np.int8),), {}), ("sum", (X.astype(np.float16),), {}),
     ("mean", (X,), {}), ("mean", (I,), {"axis": 1}), ("mean", (X,), {"axis": (0, 1),
     "keepdims": True}), ("max", (X,), {"axis": 0}), ("min", (I,), {}), ("argmax", (X,), {}),
     ("argmax", (X,), {"axis": 1, "keepdims": True}), ("argmin", (I,), {"axis": 0}),
     ("cumsum", (X,), {"axis": 1}), ("cumsum", (I.astype(np.uint8),), {}),
     # an explicit bool dtype: sum is an `or`, prod an `and`, cumsum counts nonzeros
     ("sum", (I,), {"dtype": bool}), ("prod", (I,), {"axis": 0, "dtype": bool}),
     ("cumsum", (I,), {"axis": 1, "dtype": bool}), ("cumprod", (I,), {"dtype": bool}),
     # max and min of a weak value are strong
     ("max", (2.5,), {}), ("min", (np.float32(2.5) * 1,), {"axis": None})],
)
def test_reductions_match_jnp(name, args, kwargs):
    _same(name, *args, rtol=RTOL_REDUCTION, **kwargs)


MASK = np.array([[True, False, True, True], [False, False, False, False], [True] * 4])


_MASKS = {"mask": (MASK, None), "mask+initial": (MASK, 2), "row mask+initial": (MASK[0], -1.5),
          "initial": (None, 2)}


@pytest.mark.parametrize("name, masking", [
    (name, masking) for name in ["sum", "prod", "max", "min", "any", "all", "mean"]
    for masking in _MASKS if name in ("sum", "prod", "max", "min") or _MASKS[masking][1] is None])
@pytest.mark.parametrize("a", [X, I, I > 0, I.astype(np.uint8), X.astype(np.float16)],
                         ids=["f32", "i32", "bool", "u8", "f16"])
@pytest.mark.parametrize("axis", [None, 1])
def test_where_and_initial_match_jnp(name, masking, a, axis):
    # a row of MASK is all False: a max without `initial` has no answer there, so JAX refuses
    # every max/min `where` without `initial`; with it, masked-out elements count as identities
    # (any, all and mean take no `initial`)
    where, initial = _MASKS[masking]
    kwargs = {"axis": axis} | ({} if where is None else {"where": where})
    if initial is not None:
        kwargs["initial"] = initial
    if name in ("max", "min") and initial is None:
        errors = []
        for ns in (snp, jnp):
            with pytest.raises(ValueError) as err:
                getattr(ns, name)(a, **kwargs)
            errors.append(str(err.value))
        assert errors[0] == errors[1] == (f"reduction operation {name} does not have an "
                                          "identity, so to use a where mask one has to "
                                          "specify 'initial'")
        return
    _same(name, a, rtol=RTOL_REDUCTION, **kwargs)


def test_a_masked_sum_is_a_select_then_the_reduce_then_initial_as_jax_traces_it():
    text = str(s02.make_jaxpr(lambda x, w: snp.sum(x, where=w, initial=1.0))(X, MASK))
    assert "select_n b c a" in text and "add 1.0:f32[] e" in text, text
    assert float(snp.asarray(X).sum(where=MASK)) == pytest.approx(float(X[MASK].sum()), rel=1e-6)
    errors = []
    for ns in (snp, jnp):
        with pytest.raises(ValueError) as err:
            ns.sum(X, initial=np.zeros(2))
        errors.append(str(err.value))
    assert errors[0] == errors[1] == "initial value must be a scalar. Got array of shape (2,)"


def test_products_match_jnp():
    a, b = X, POS.T
    _same("dot", a, b, rtol=RTOL_REDUCTION)
    _same("dot", a, b[:, 0], rtol=RTOL_REDUCTION)
    _same("dot", a, 2.0)
    _same("matmul", a, b, rtol=RTOL_REDUCTION)
    _same("matmul", a[0], b, rtol=RTOL_REDUCTION)
    _same("matmul", a, b[:, 0], rtol=RTOL_REDUCTION)
    batched = rng.standard_normal((2, 1, 3, 4)).astype(np.float32)
    _same("matmul", batched, rng.standard_normal((5, 4, 2)).astype(np.float32),
          rtol=RTOL_REDUCTION)
    _same("matmul", I, I.T)


def test_shape_functions_and_constructors_match_jnp():
    _same("reshape", X, (2, -1))
    _same("ravel", X)
    _same("transpose", X)
    _same("transpose", X.reshape(3, 2, 2), (2, -3, 1))
    _same("swapaxes", X.reshape(3, 2, 2), 0, 2)
    _same("expand_dims", X, -1)
    _same("squeeze", X[None, :, None])
    _same("concatenate", [X, I], axis=1)
    _same("concatenate", [X, POS], axis=None)
    _same("stack", [X, POS], axis=1)
    _same("broadcast_to", X[0], (2, 3, 4))
    for args in [((2, 3),), ((2,), np.int32)]:
        _same("zeros", *args)
        _same("ones", *args)
    _same("full", (2, 2), 1.5)
    _same("zeros_like", I)
    _same("ones_like", X, np.int32)
    _same("full_like", X, 3)
    for args in [(5,), (2, 7), (0, 10, 3), (0.0, 1.0, 0.25), (4, 0)]:
        _same("arange", *args)
    _same("asarray", [1.0, 2.0])
    _same("asarray", np.ones(2, np.float64))
    # an explicit dtype converts straight from the value, not through int32 first
    _same("asarray", 2**40, dtype=np.float32)
    _same("asarray", np.array([2**40]), dtype=np.float32)
    _same("asarray", [1, 2**31], dtype=np.float32)
    _same("asarray", [np.float16(1), 2.0])


@pytest.mark.parametrize("value", [[1, 2**31], (1, -(2**31) - 1), [[1], [2**31]],
                                   [True, 2**31], [None]])
def test_asarray_of_a_list_refuses_what_int32_cannot_hold_as_jnp_does(value):
    with pytest.raises(Exception) as ours:
        snp.asarray(value)
    with pytest.raises(Exception) as theirs:
        jnp.asarray(value)
    assert (type(ours.value), str(ours.value)) == (type(theirs.value), str(theirs.value))


def test_reshape_errors_match_jnp():
    for shape in [(4, 2), (5, -1), (-1, -1)]:
        with pytest.raises(TypeError) as ours:
            snp.reshape(np.ones((2, 3), np.float32), shape)
        with pytest.raises(TypeError) as theirs:
            jnp.reshape(jnp.ones((2, 3)), shape)
        assert str(ours.value) == str(theirs.value)


def test_broadcasting_and_argument_errors_match_jnp():
    cases = [(np.ones((2, 3), np.float32), np.ones((2,), np.float32)),
             (np.ones((2, 3), np.float32), np.ones((3, 2), np.float32)),
             ([1.0], np.ones(2, np.float32))]
    for a, b in cases:
        with pytest.raises(Exception) as ours:
            snp.add(a, b)
        with pytest.raises(Exception) as theirs:
            jnp.add(a, b)
        assert type(ours.value).__name__ == type(theirs.value).__name__
        assert str(ours.value) == str(theirs.value)


def test_arange_needs_concrete_bounds():
    with pytest.raises(s02.ConcretizationTypeError, match="jnp.arange"):
        s02.make_jaxpr(lambda n: snp.arange(n))(3)


def test_installed_methods_cover_every_operator_core_forwards():
    aval = s02.core.ShapedArray((), np.float32)
    for name in ("_add", "_radd", "_rsub", "_rtruediv", "_rpow", "_rmatmul", "_getitem", "_T",
                 "_reshape", "_sum", "_astype", "_lt", "_invert", "_divmod", "_rlshift"):
        assert callable(getattr(aval, name)), name


def test_operators_on_unsupported_types_defer_to_python():
    with pytest.raises(TypeError, match="unsupported operand"):
        s02.make_jaxpr(lambda x: x + "a")(1.0)


@pytest.mark.parametrize("a, b", list(itertools.product([X, I], [2, 2.5])))
def test_traced_operator_values_match_jax(a, b):
    fn = lambda x, y: (x * y + y) / (abs(x) + 1) - x**2  # noqa: E731
    (ours,) = s02.eval_jaxpr(s02.make_jaxpr(fn)(a, b).jaxpr, [], a, b)
    theirs = np.asarray(fn(jnp.asarray(a), b))
    assert ours.dtype == theirs.dtype
    np.testing.assert_allclose(ours, theirs, rtol=RTOL_ELEMENTWISE)


_TESTED_VALUES = [np.array([1.0, np.nan, np.inf, -np.inf, -0.0], np.float32),
                  np.array([1, 0, -2], np.int32), np.array([True, False]), np.float16(np.inf),
                  np.array([1 + 1j, np.inf + 0j, 1j * np.nan, 0j], np.complex64),
                  np.array([2, 0], np.uint8), 1.0, 0, True, 1j]


@pytest.mark.parametrize("name", ["isnan", "isinf", "isfinite", "logical_not"])
@pytest.mark.parametrize("x", _TESTED_VALUES, ids=repr)
def test_float_tests_and_logical_not_equal_jnp(name, x):
    ours, theirs = getattr(snp, name), getattr(jnp, name)
    with jax.disable_jit():  # JAX's isinf is a jit: inlined, its jaxpr is written as ours
        assert str(s02.make_jaxpr(ours)(x)) == str(jax.make_jaxpr(theirs)(x))
    got, want = ours(x), theirs(x)
    assert (got.dtype, got.shape, got.weak_type) == (want.dtype, want.shape, want.weak_type)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("name", ["logical_and", "logical_or", "logical_xor"])
@pytest.mark.parametrize("x", _TESTED_VALUES, ids=repr)
def test_logical_binary_ops_take_nonzero_as_true_as_jnp(name, x):
    for y in (np.arange(np.size(x), dtype=np.float32).reshape(np.shape(x)), 1, True, 0.0):
        ours, theirs = getattr(snp, name), getattr(jnp, name)
        assert str(s02.make_jaxpr(ours)(x, y)) == str(jax.make_jaxpr(theirs)(x, y))
        got, want = ours(x, y), theirs(x, y)
        assert (got.dtype, got.weak_type) == (want.dtype, want.weak_type)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("name", ["float32", "int32", "bool_", "uint8", "float16"])
def test_scalar_types_are_dtypes_and_functions_that_trace_as_jnp(name):
    ours, theirs = getattr(snp, name), getattr(jnp, name)
    assert ours == getattr(np, name) and hash(ours) == hash(getattr(np, name))
    assert np.dtype(ours) == np.dtype(theirs) and np.zeros(2, ours).dtype == np.dtype(theirs)
    assert isinstance(getattr(np, name)(1), ours)
    got, want = ours(3), theirs(3)  # a 0-d array, not numpy's scalar
    assert type(got) is Array and (got.dtype, got.weak_type) == (want.dtype, want.weak_type)
    assert str(s02.make_jaxpr(lambda x: ours(x))(2.5)) == str(
        jax.make_jaxpr(lambda x: theirs(x))(2.5))
