"""Edge inputs of our jnp against jax.numpy: mismatched boolean masks, lists in an index,
`divmod`, `x.at[...].multiply`, take's wrap mode, literal fill values, complex logistic; clip
without bounds, `==` with a list, broad `where=` masks, round of bools, lists as fill values,
integer powers, complex order; and edges found by comparing case by case: non-finite complex
parts, complex max/min with NaN, isclose's promotion, tuple indices, eager weak-type errors."""

from __future__ import annotations

import operator

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import stages.s02_tracing as s02
from shared.testing import assert_same_typed_values
from stages.s02_tracing import numpy as ojnp
from stages.s02_tracing.array import Array

X = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
X4 = np.zeros((2, 3, 4, 5), np.float32)


def _same_error(ours_fn, theirs_fn):
    with pytest.raises(Exception) as ours:
        ours_fn()
    with pytest.raises(Exception) as theirs:
        theirs_fn()
    assert type(ours.value).__name__ == type(theirs.value).__name__
    assert str(ours.value) == str(theirs.value)


# A mask of the wrong shape must be refused: its nonzero() would index other axes.
# `index N` counts the index's own entries, a None and the ... included.
BAD_MASKS = {
    "whole_index": (X, np.ones((3, 4), bool)),
    "after_none": (X, (None, np.ones((3, 4), bool))),
    "after_ellipsis": (X, (Ellipsis, np.ones(3, bool))),
    "after_a_slice": (X, (slice(None), np.ones((2, 4), bool))),
    "two_masks": (X, (0, None, np.ones(4, bool), np.ones(3, bool))),
    "ellipsis_between": (X4, (0, Ellipsis, np.ones(3, bool))),
    "too_long": (X4, np.ones((2, 3, 4, 6), bool)),
}


@pytest.mark.parametrize("operand, idx", BAD_MASKS.values(), ids=BAD_MASKS.keys())
@pytest.mark.parametrize("how", ["getitem", "set"])
def test_a_mask_of_the_wrong_shape_is_refused(operand, idx, how):
    def run(jnp):
        a = jnp.asarray(operand)
        return a[idx] if how == "getitem" else a.at[idx].set(1.0)

    _same_error(lambda: run(ojnp), lambda: run(jjnp))


INDEX_ERRORS = {
    "too_many_ints": (X4, (0, 0, 0, 0, 0)),
    "too_many_with_an_array": (X4, (0, 0, 0, 0, np.array([0]))),
    "too_many_by_a_mask": (X4, np.ones((2, 3, 4, 5, 1), bool)),
    "arrays_that_do_not_broadcast": (X, (np.ones((2, 3), bool), np.ones(4, bool))),
    "list_of_lists": (X, [[0, 1]]),
    "list_with_a_slice": (X, [slice(None), 0]),
    "list_of_ints": (X, [0, 1]),
}


@pytest.mark.parametrize("operand, idx", INDEX_ERRORS.values(), ids=INDEX_ERRORS.keys())
def test_index_errors_are_jaxs(operand, idx):
    _same_error(lambda: ojnp.asarray(operand)[idx], lambda: jjnp.asarray(operand)[idx])


def test_a_list_of_bools_in_a_tuple_is_a_mask():
    idx = (slice(None), [True, False, True])
    assert_same_typed_values(ojnp.asarray(X)[idx], jjnp.asarray(X)[idx])
    assert_same_typed_values(ojnp.asarray(X).at[idx].add(1.0),
                             jjnp.asarray(X).at[idx].add(1.0))


def test_at_multiply():
    idx = (np.array([0, 0, 1]), slice(1, None))
    assert_same_typed_values(ojnp.asarray(X).at[idx].multiply(3.0),
                             jjnp.asarray(X).at[idx].multiply(3.0))


DIVMOD_ARGS = [
    (np.array([-3.0, 3.0, -0.0, 5.5, np.inf, -7.25], np.float32), 2.0),
    (np.array([-3.0, 3.0, 1.0], np.float32), np.array([-2.0, 0.0, -0.5], np.float32)),
    (np.arange(-3, 3, dtype=np.int32), -2),
    (np.array([7, 250], np.uint8), 3),
]


@pytest.mark.parametrize("x, y", DIVMOD_ARGS)
def test_divmod(x, y):
    for ours, theirs in [(ojnp.divmod(x, y), jjnp.divmod(x, y)),
                         (divmod(ojnp.asarray(x), y), divmod(jjnp.asarray(x), y))]:
        for o, t in zip(ours, theirs, strict=True):
            assert_same_typed_values(o, t)


def test_divmod_of_floats_is_one_computation():
    # JAX's float divmod returns the modulus floor_divide fixes up, not a second remainder
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    with jax.disable_jit():  # JAX wraps divmod in a jit; ours is inline
        theirs = str(jax.make_jaxpr(lambda a: divmod(a, 2.0))(x))
    assert str(s02.make_jaxpr(lambda a: divmod(a, 2.0))(x)) == theirs


def test_floor_divide_refuses_complex_values():
    _same_error(lambda: ojnp.floor_divide(np.complex64(1), 2),
                lambda: jjnp.floor_divide(np.complex64(1), 2))


@pytest.mark.parametrize("fill", [0.1, 1 / 3, 1e30])
def test_a_weak_python_float_fill_prints_as_written(fill):
    # no dtype: the fill stays weak and JAX stages the Python float itself (0.1, not the
    # float32 value 0.10000000149011612); with a dtype it is converted
    assert str(s02.make_jaxpr(lambda a: ojnp.full((2,), fill))(1.0)) == \
        str(jax.make_jaxpr(lambda a: jjnp.full((2,), fill))(1.0))
    assert str(s02.make_jaxpr(lambda a: ojnp.full((2,), fill, np.float32))(1.0)) == \
        str(jax.make_jaxpr(lambda a: jjnp.full((2,), fill, np.float32))(1.0))


def test_take_wrap_does_not_normalize_the_wrapped_indices():
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    idx = np.array([5, -1, -7], np.int32)
    with jax.disable_jit():  # JAX wraps take and remainder in jits
        theirs = str(jax.make_jaxpr(lambda a: jjnp.take(a, idx, mode="wrap"))(x))
    assert str(s02.make_jaxpr(lambda a: ojnp.take(a, idx, mode="wrap"))(x)) == theirs
    assert_same_typed_values(ojnp.take(x, idx, mode="wrap"), jjnp.take(x, idx, mode="wrap"))


def test_logistic_of_complex_values():
    z = np.array([1 + 1j, -2j, 0, 100 + 3j, -100 + 1j, -3 + 0.5j], np.complex64)
    np.testing.assert_allclose(np.asarray(s02.lax.logistic(z)),
                               np.asarray(jax.lax.logistic(z)), rtol=1e-6, atol=1e-6)


JOIN_ERRORS = {
    "stack_ranks": lambda jnp: jnp.stack([np.ones((2, 3)), np.float32(1)]),
    "stack_shapes": lambda jnp: jnp.stack([np.ones((2, 3)), np.ones((1, 3))]),
    "stack_a_list": lambda jnp: jnp.stack([[1, 2]]),
    "concatenate_a_0d_second": lambda jnp: jnp.concatenate([np.ones((2, 3)), np.float32(1)]),
    "concatenate_a_0d_first": lambda jnp: jnp.concatenate([np.float32(1), np.ones(3)]),
}


@pytest.mark.parametrize("fn", JOIN_ERRORS.values(), ids=JOIN_ERRORS.keys())
def test_stack_and_concatenate_errors_are_jaxs(fn):
    _same_error(lambda: fn(ojnp), lambda: fn(jjnp))


def test_concatenate_without_an_axis_ravels_any_ranks_then_promotes():
    x, i = np.ones((2, 3), np.float32), np.arange(3, dtype=np.int32)
    assert_same_typed_values(ojnp.concatenate([x, np.float32(1), i], axis=None),
                             jjnp.concatenate([x, np.float32(1), i], axis=None))
    assert str(s02.make_jaxpr(lambda a, b: ojnp.concatenate([b, a, 2.0], axis=None))(x, i)) == \
        str(jax.make_jaxpr(lambda a, b: jjnp.concatenate([b, a, 2.0], axis=None))(x, i))


# Negative steps: the same elements sliced forwards from the lowest one, then `rev`, as JAX
# writes them; with an index array beside, JAX gathers along a reversed iota instead (same
# values, another jaxpr), so those compare values only.
Y = np.arange(24.0, dtype=np.float32).reshape(6, 4)
NEGATIVE_STEPS = {
    "reversed": (lambda a: a[::-1], True), "every_other_reversed": (lambda a: a[::-2], True),
    "start_stop": (lambda a: a[4:0:-2, 1:], True), "second_axis": (lambda a: a[:, ::-3], True),
    "with_none": (lambda a: a[-1:-7:-1, None, ::-1], True),
    "int_then": (lambda a: a[1, ::-1], True),
    "empty": (lambda a: a[0:5:-1], True), "ellipsis": (lambda a: a[..., ::-2], True),
    "beside_an_index_array": (lambda a: a[np.array([0, 2]), ::-1], False),
}


@pytest.mark.parametrize("f, same_jaxpr", NEGATIVE_STEPS.values(), ids=NEGATIVE_STEPS.keys())
def test_negative_slice_steps_read_as_jaxs(f, same_jaxpr):
    assert_same_typed_values(f(ojnp.asarray(Y)), f(jjnp.asarray(Y)))
    if same_jaxpr:
        assert str(s02.make_jaxpr(f)(Y)) == str(jax.make_jaxpr(f)(Y))


def test_a_traced_start_with_a_reversed_slice_and_its_gradient_are_jaxs():
    def f(ns):
        return lambda a, i: ns.sum(a[i, ::-1] * ns.arange(4.0))

    assert str(s02.make_jaxpr(f(ojnp))(Y, 2)) == str(jax.make_jaxpr(f(jjnp))(Y, 2))
    from stages.s04_autodiff import grad
    np.testing.assert_array_equal(grad(lambda a: f(ojnp)(a, 2))(Y),
                                  jax.grad(lambda a: f(jjnp)(a, 2))(Y))


@pytest.mark.parametrize("axis", [None, 0, -1, (0, 1), [1]], ids=str)
def test_flip_is_one_rev_as_jaxs(axis):
    f = (lambda ns: lambda a: ns.flip(a, axis))
    assert_same_typed_values(f(ojnp)(Y), f(jjnp)(Y))
    with jax.disable_jit():  # JAX's flip is a jit of one rev
        assert str(s02.make_jaxpr(f(ojnp))(Y)) == str(jax.make_jaxpr(f(jjnp))(Y))


def test_flip_refuses_what_jax_refuses():
    _same_error(lambda: ojnp.flip(Y, 2), lambda: jjnp.flip(Y, 2))
    _same_error(lambda: ojnp.flip(Y, (0, 0)), lambda: jjnp.flip(Y, (0, 0)))
    _same_error(lambda: ojnp.flip([1, 2]), lambda: jjnp.flip([1, 2]))


def _same_outcome(f):
    """f(ojnp) and f(jjnp) agree: the same typed values, or the same error."""
    try:
        theirs = f(jjnp)
    except Exception:  # noqa: BLE001  (the error itself is compared)
        _same_error(lambda: f(ojnp), lambda: f(jjnp))
        return
    assert_same_typed_values(f(ojnp), theirs)


@pytest.mark.parametrize("args", [(np.arange(3),), (3,), (2.5,), (True,), (np.float16(2),),
                                  (np.arange(5), 1, 3), (np.arange(5.0), None, 2)], ids=str)
def test_clip_returns_an_array_even_without_bounds_as_jaxs_jit_does(args):
    ours = ojnp.clip(*args)
    assert isinstance(ours, Array)
    assert_same_typed_values(ours, jjnp.clip(*args))


@pytest.mark.parametrize("args", [([1, 5], 0, 3), (np.array([1j]),), (np.arange(3.0), 1j),
                                  (np.arange(3.0), None, np.complex64(1)), ()], ids=str)
def test_clip_refuses_what_jax_refuses(args):
    _same_error(lambda: ojnp.clip(*args), lambda: jjnp.clip(*args))
    if len(args) > 1 and args[0] is not None and not isinstance(args[0], list):
        with pytest.raises(ValueError, match="^Clip received a complex value either through "
                           "the input or the min/max keywords. Complex values have no ordering "
                           "and cannot be clipped. Please convert .* respectively.$"):
            ojnp.clip(*args)


@pytest.mark.parametrize("other", [[0, 1, 2], (0, 1, 2), {0: 1}, {0}], ids=str)
@pytest.mark.parametrize("op", [operator.eq, operator.ne], ids=["eq", "ne"])
@pytest.mark.parametrize("swap", [False, True], ids=["array_first", "container_first"])
def test_equality_with_a_container_is_refused_not_false_as_in_jax(op, other, swap):
    def compare(x):
        return op(other, x) if swap else op(x, other)

    name = type(other).__name__
    for ns, cls in ((ojnp, "Array"), (jjnp, "ArrayImpl")):  # JAX's eager class is ArrayImpl
        with pytest.raises(TypeError, match=rf"^unsupported operand type\(s\) for ==: "
                           rf"'{cls}' and '{name}'$"):
            compare(ns.arange(3))
    _same_error(lambda: s02.make_jaxpr(compare)(X), lambda: jax.make_jaxpr(compare)(X))
    # anything else still falls back to Python's identity comparison, as in JAX
    assert str(s02.make_jaxpr(lambda x: op(x, None))(X)) == \
        str(jax.make_jaxpr(lambda x: op(x, None))(X))


@pytest.mark.parametrize("other", [[0, 1], (0, 1)], ids=str)
@pytest.mark.parametrize("swap", [False, True], ids=["array_first", "sequence_first"])
def test_a_list_or_tuple_times_an_array_is_refused_not_repeated_as_in_jax(other, swap):
    # Python's fallback would repeat the sequence through the array's __index__
    def times(x):
        return other * x if swap else x * other

    for ns, cls in ((ojnp, "Array"), (jjnp, "ArrayImpl")):
        left, right = (type(other).__name__, cls) if swap else (cls, type(other).__name__)
        with pytest.raises(TypeError, match=rf"^unsupported operand type\(s\) for \*: "
                           rf"'{left}' and '{right}'$"):
            times(ns.asarray(np.int32(2)))
    _same_error(lambda: s02.make_jaxpr(times)(np.int32(2)),
                lambda: jax.make_jaxpr(times)(np.int32(2)))


def test_item_assignment_says_arrays_are_immutable_as_jax_says():
    def assign(x):
        x[0] = 1.0
        return x

    _same_error(lambda: assign(ojnp.asarray(X)), lambda: assign(jjnp.asarray(X)))
    _same_error(lambda: s02.make_jaxpr(assign)(X), lambda: jax.make_jaxpr(assign)(X))


@pytest.mark.parametrize("ndigits", [None, 0, 1, -1])
def test_round_of_an_array_is_jaxs(ndigits):
    # round(x) is an integer array (as round(7.5) is an int); round(x, n) keeps the dtype
    x = np.array([1.25, 2.5, -0.5, 17.0], np.float32)
    args = () if ndigits is None else (ndigits,)
    ours, theirs = round(ojnp.asarray(x), *args), round(jjnp.asarray(x), *args)
    assert_same_typed_values(ours, theirs)
    traced = [make(lambda v: round(v, *args))(x).out_avals[0].str_short()
              for make in (s02.make_jaxpr, jax.make_jaxpr)]
    assert traced[0] == traced[1] == ("float32[4]" if args else "int32[4]")


def test_copy_false_with_a_new_dtype_is_numpys_error_and_astype_takes_jaxs_keywords():
    _same_error(lambda: np.asarray(ojnp.asarray(X), dtype=np.int32, copy=False),
                lambda: np.asarray(jjnp.asarray(X), dtype=np.int32, copy=False))
    assert np.asarray(ojnp.asarray(X), copy=True).flags.writeable
    assert not np.asarray(ojnp.asarray(X), copy=False).flags.writeable
    for kwargs in ({"copy": True}, {"copy": False}, {"device": None}):
        assert_same_typed_values(ojnp.asarray(X).astype(np.int32, **kwargs),
                                 jjnp.asarray(X).astype(np.int32, **kwargs))


_REFUSED_ARGUMENTS = {
    "sort_kind": lambda ns: ns.sort(X, kind="quicksort"),
    "argsort_kind": lambda ns: ns.argsort(X, kind="stable"),
    "argsort_order": lambda ns: ns.argsort(X, order="a"),
    "take_a_list_of_indices": lambda ns: ns.take(X, [0, 1]),
    "take_from_a_list": lambda ns: ns.take([1.0, 2.0], np.array([0])),
    "take_along_axis_from_a_list": lambda ns: ns.take_along_axis(
        [[1.0]], np.zeros((1, 1), np.int32), 1),
    "take_along_axis_float_indices": lambda ns: ns.take_along_axis(
        X, np.zeros((2, 3, 4), np.float32), 1),
    "take_along_axis_fewer_dims": lambda ns: ns.take_along_axis(X, np.zeros(3, np.int32), 1),
    "take_along_axis_2d_indices_without_axis": lambda ns: ns.take_along_axis(
        X, np.zeros((2, 3), np.int32), None),
}


@pytest.mark.parametrize("name", list(_REFUSED_ARGUMENTS))
def test_what_jax_refuses_in_sort_and_take_is_refused_with_its_message(name):
    _same_error(lambda: _REFUSED_ARGUMENTS[name](ojnp), lambda: _REFUSED_ARGUMENTS[name](jjnp))


@pytest.mark.parametrize("fn", ["var", "std"])
@pytest.mark.parametrize("kwargs", [
    {"axis": 1, "keepdims": True, "where": X[0] > 5}, {"axis": 0, "where": X[0] > 2, "ddof": 1},
    {"where": X > 10}, {"axis": 2, "mean": np.full((2, 3, 1), 3.0, np.float32)},
    {"axis": (0, 2), "where": X > 3, "mean": np.float32(12.0)},
], ids=["where_keepdims", "where_ddof", "where_all", "mean", "where_and_mean"])
def test_var_and_std_take_where_and_mean_as_jax(fn, kwargs):
    # where= keeps only the marked elements in the mean, the squares and the count; mean= is used
    # in place of the computed mean
    assert_same_typed_values(getattr(ojnp, fn)(X, **kwargs), getattr(jjnp, fn)(X, **kwargs),
                             rtol=1e-5)


@pytest.mark.parametrize("fn", ["sum", "prod"])
@pytest.mark.parametrize("x", [np.array([100, 100], np.int8), np.array([200, 100], np.uint8),
                               np.array([True, True]), np.float16([1.5, 2.0])], ids=str)
def test_promote_integers_false_keeps_a_narrow_int_as_jax(fn, x):
    assert_same_typed_values(getattr(ojnp, fn)(x, promote_integers=False),
                             getattr(jjnp, fn)(x, promote_integers=False))


BROAD_MASK = np.array([[1, 0, 1], [0, 1, 1]], bool)


@pytest.mark.parametrize("name, kwargs", [
    ("sum", {}), ("prod", {}), ("any", {}), ("all", {}), ("max", {"initial": -1.0}),
    ("min", {"initial": 5}), ("sum", {"axis": 0, "keepdims": True}), ("sum", {"axis": -1}),
    ("mean", {}), ("sum", {"where": np.ones(2, bool)}), ("sum", {"where": np.array([1, 0, 1])}),
    ("max", {"where": np.array([1, 0, 1])}), ("mean", {"where": np.array([1, 0, 1])}),
], ids=str)
def test_a_where_mask_broader_than_the_array_broadcasts_it_as_jnp_where(name, kwargs):
    # JAX reduces over the array's own axes of the broadcast result: a (2, 3) mask over a (3,)
    # array sums axis 0 of the (2, 3) select, giving shape (3,)
    kwargs = {"where": BROAD_MASK} | kwargs
    _same_outcome(lambda ns: getattr(ns, name)(ns.arange(3.0), **kwargs))


@pytest.mark.parametrize("fn", ["round", "around"])
def test_round_refuses_a_bool_as_jax_does(fn):
    _same_error(lambda: getattr(ojnp, fn)(np.array([True])),
                lambda: getattr(jjnp, fn)(np.array([True])))
    with pytest.raises(ValueError, match=r"^data type <class 'numpy.bool'> not inexact$"):
        getattr(ojnp, fn)(True)
    assert_same_typed_values(ojnp.round(np.float32(15.3), -1), jjnp.round(np.float32(15.3), -1))


@pytest.mark.parametrize("f", [
    lambda ns: ns.full((2, 3), [1, 2, 3]), lambda ns: ns.full_like(np.zeros(3), [1, 2, 3]),
    lambda ns: ns.full_like([1, 2, 3], 1), lambda ns: ns.zeros_like([1, 2, 3]),
    lambda ns: ns.ones_like([1, 2, 3]), lambda ns: ns.full_like(np.zeros((2, 3)), np.arange(3)),
    lambda ns: ns.full_like(np.zeros(2, int), np.ones(3), np.float16, (4, 3)),
    lambda ns: ns.full_like(3, np.array([1.5, 2.0])),
])
def test_full_and_the_likes_refuse_lists_and_broadcast_array_fills_as_jax(f):
    _same_outcome(f)


POWERS = {
    "int": (np.arange(-3, 4), np.array([3, 2, 1, 0, -1, -2, 70])),
    "weak_base": (2, np.arange(5)), "zero_base": (0, np.arange(3)),
    "bool": (np.array([True, False]), np.array([True, False])),
    "uint8": (np.arange(4, dtype=np.uint8), np.arange(4, dtype=np.uint8)),
    "mixed": (np.int16(3), np.arange(4, dtype=np.int8)),
}


@pytest.mark.parametrize("x1, x2", POWERS.values(), ids=POWERS.keys())
def test_an_integer_power_of_integers_squares_and_multiplies_as_jax(x1, x2):
    assert_same_typed_values(ojnp.power(x1, x2), jjnp.power(x1, x2))
    assert_same_typed_values(x1 ** ojnp.asarray(x2), x1 ** jjnp.asarray(x2))
    with jax.disable_jit():  # JAX's _where is a jit of one select
        assert str(s02.make_jaxpr(ojnp.power)(x1, x2)) == str(jax.make_jaxpr(jjnp.power)(x1, x2))


C = np.array([1 + 2j, 1 + 1j, 2, 1j], np.complex64)
COMPLEX_ORDER_ARGS = {"arrays": (C, C[::-1]), "scalar": (C, 1 + 1j), "reversed": (1j, C),
                      "both_scalars": (2j, 1j), "real_other": (C, np.float32(1))}


@pytest.mark.parametrize("name", ["greater", "greater_equal", "less", "less_equal"])
@pytest.mark.parametrize("args", COMPLEX_ORDER_ARGS.values(), ids=COMPLEX_ORDER_ARGS.keys())
def test_complex_values_order_by_real_then_imaginary_part_as_in_jax(name, args):
    assert_same_typed_values(getattr(ojnp, name)(*args), getattr(jjnp, name)(*args))
    with jax.disable_jit():
        assert str(s02.make_jaxpr(getattr(ojnp, name))(*args)) == \
            str(jax.make_jaxpr(getattr(jjnp, name))(*args))


# ---- found by comparing against JAX case by case

INF, NAN = np.float32(np.inf), np.float32(np.nan)


@pytest.mark.parametrize("re, im", [(2.5, INF), (2.5, NAN), (-INF, INF), (NAN, 1.0)])
def test_lax_complex_keeps_each_part_even_when_one_is_not_finite(re, im):
    # x + 1j * y would make 1j * inf = nan + inf j and lose the real part
    ours = s02.lax.complex(np.float32(re), np.float32(im))
    theirs = jax.lax.complex(np.float32(re), np.float32(im))
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    assert str(ours) == str(theirs)


C = np.array([1 + 1j, np.nan + 0j, 3 + 0j, 3 - 2j, complex(0, np.nan)], np.complex64)


@pytest.mark.parametrize("fn", [
    lambda ns, x: ns.lax.max(x, x[::-1]), lambda ns, x: ns.lax.min(x, x[::-1]),
    lambda ns, x: ns.numpy.maximum(x, np.complex64(2 + 0j)),
    lambda ns, x: ns.numpy.max(x), lambda ns, x: ns.numpy.min(x),
    lambda ns, x: ns.lax.reduce_max(x[:0], (0,)), lambda ns, x: ns.lax.reduce_min(x[:0], (0,)),
], ids=["max", "min", "jnp_maximum", "jnp_max", "jnp_min", "empty_max", "empty_min"])
def test_complex_max_and_min_compare_lexicographically_and_do_not_spread_nan(fn):
    # XLA: real parts first, imaginary parts on a tie, then a select: a NaN part loses
    ours, theirs = fn(s02, C), fn(jax, C)
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


def test_isclose_promotes_to_the_common_dtype_before_float():
    # -3 meets uint32 as 2**32 - 3 first, as JAX does, and only then becomes a float
    x = np.array([2**32 - 3, 7], np.uint32)
    assert_same_typed_values(ojnp.isclose(x, -3), jjnp.isclose(x, -3))
    with jax.disable_jit():  # JAX's isclose is a jit of its own; ours is inline
        theirs = str(jax.make_jaxpr(jjnp.isclose)(x, 7))
    assert str(s02.make_jaxpr(ojnp.isclose)(x, 7)) == theirs


@pytest.mark.parametrize("index", [
    lambda x: x[(0, 1), :], lambda x: x[:, (0, 2)], lambda x: x[[0, -1], :],
    lambda x: x[np.array([[0], [1]]), np.array([0, 2])],
], ids=["tuple_rows", "tuple_columns", "list", "broadcast_arrays"])
def test_tuples_lists_and_broadcast_index_arrays_index_and_print_as_jax(index):
    m = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    assert_same_typed_values(index(ojnp.asarray(m)), index(jjnp.asarray(m)))
    assert str(s02.make_jaxpr(index)(m)) == str(jax.make_jaxpr(index)(m))


@pytest.mark.parametrize("fn", [lambda ns, x: ns.numpy.any(x), lambda ns, x: ns.numpy.all(x)],
                         ids=["any", "all"])
def test_any_and_all_of_complex_values_read_the_real_part_as_jax(fn):
    # JAX's _cast_to_bool takes `real` first: 1j counts as False there (numpy says True)
    x = np.array([1j, 0], np.complex64)
    assert_same_typed_values(fn(s02, x), fn(jax, x))
    assert str(s02.make_jaxpr(lambda x: fn(s02, x))(x)) == \
        str(jax.make_jaxpr(lambda x: fn(jax, x))(x))


def test_an_eager_rule_error_names_the_weak_type_as_a_traced_one_does():
    _same_error(lambda: s02.lax.integer_pow(2, -3), lambda: jax.lax.integer_pow(2, -3))
    with pytest.raises(TypeError, match=r"integer_pow\(~int32\[\], -3\)"):
        s02.lax.integer_pow(2, -3)


@pytest.mark.parametrize("op", ["rem", "shift_right_arithmetic"])
def test_the_jnp_tip_is_given_where_jax_gives_it(op):
    # rem has no tip in JAX's table; shift_right_arithmetic points at jnp.right_shift
    args = (np.float32(2.0), np.int32(3)) if op == "rem" else (np.int8(3), np.int32(2))
    _same_error(lambda: getattr(s02.lax, op)(*args), lambda: getattr(jax.lax, op)(*args))


@pytest.mark.parametrize("fn", [
    lambda ns, x, ax: ns.numpy.argmax(x, axis=ax), lambda ns, x, ax: ns.numpy.cumsum(x, axis=ax),
    lambda ns, x, ax: ns.numpy.sort(x, axis=ax), lambda ns, x, ax: ns.numpy.take(x, 0, axis=ax),
    lambda ns, x, ax: ns.numpy.concatenate([x, x], axis=ax),
    lambda ns, x, ax: ns.numpy.transpose(x, (ax, 0)),
], ids=["argmax", "cumsum", "sort", "take", "concatenate", "transpose"])
@pytest.mark.parametrize("axis", [(0, 1), 1.0], ids=["tuple", "float"])
def test_an_axis_that_is_not_an_integer_is_refused_by_operator_index_as_jax(fn, axis):
    m = np.ones((2, 2), np.float32)
    with pytest.raises(TypeError) as theirs:
        fn(jax, m, axis)
    with pytest.raises(TypeError) as ours:
        fn(s02, m, axis)
    assert str(ours.value) == str(theirs.value)
    assert "cannot be interpreted as an integer" in str(ours.value)
