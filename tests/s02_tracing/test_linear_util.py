"""linear_util: stores, the transformation stack, its call order, and the weakly keyed cache."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
from jax._src import api_util as jax_api_util
from jax._src import linear_util as jax_lu

from stages.s01_pytrees import tree_flatten, tree_structure
from stages.s02_tracing import linear_util as lu
from stages.s02_tracing.api_util import (
    argnums_partial,
    argnums_partial2,
    flatten_fun,
    flatten_fun_nokwargs,
)

# ------------------------------------------------------------------ stores


@pytest.mark.parametrize("lib", [lu, jax_lu], ids=["ours", "jax"])
def test_store_is_write_once_with_jaxs_messages(lib):
    store = lib.Store()
    assert not store
    with pytest.raises(lib.StoreException, match="^Store empty$"):
        store.val  # noqa: B018
    store.store(1)
    assert store and store.val == 1
    with pytest.raises(lib.StoreException, match="^Store occupied$"):
        store.store(2)
    store.reset()
    store.store(3)
    assert store.val == 3


@pytest.mark.parametrize("lib", [lu, jax_lu], ids=["ours", "jax"])
def test_equal_store_accepts_an_equal_second_value_only(lib):
    store = lib.EqualStore()
    store.store((1, 2))
    store.store((1, 2))
    with pytest.raises(lib.StoreException, match="^Store occupied with not-equal value$"):
        store.store((1, 3))


# ------------------------------------------------------------------ the transformation stack


def _stack(lib, log):
    """Two transformations around f(x) = x + 1, logging when each sees args and results."""

    @lib.transformation2
    def add_one_first(f, x):
        log.append("A in")
        out = f(x + 10)
        log.append("A out")
        return out + 1

    @lib.transformation2
    def times_two(f, x):
        log.append("B in")
        out = f(x * 2)
        log.append("B out")
        return out

    def f(x):
        return x + 1

    if lib is lu:
        wrapped = lu.wrap_init(f)
    else:
        wrapped = jax_lu.wrap_init(f, debug_info=jax_api_util.debug_info("test", f, (1,), {}))
    return times_two(add_one_first(wrapped))  # add_one_first applied first, times_two last


def test_arguments_meet_the_last_applied_transformation_first():
    log: list[str] = []
    wrapped = _stack(lu, log)
    assert wrapped.call_wrapped(1) == (1 * 2 + 10) + 1 + 1
    # times_two (applied last) sees the arguments first and the results last
    assert log == ["B in", "A in", "A out", "B out"]
    jax_log: list[str] = []
    assert _stack(jax_lu, jax_log).call_wrapped(1) == 14
    assert jax_log == log


def test_the_last_applied_transformation_is_transforms_0_and_repr_matches_jax():
    ours, theirs = _stack(lu, []), _stack(jax_lu, [])
    assert [gen.__name__ for gen, _ in ours.transforms] == ["times_two", "add_one_first"]
    assert repr(ours) == repr(theirs)


def test_wrapped_funs_hash_on_their_stack_not_their_stores():
    def f(x):
        return x

    @lu.transformation_with_aux2
    def record(f, store, x):
        out = f(x)
        store.store(out)
        return out

    a, thunk_a = record(lu.wrap_init(f))
    b, _ = record(lu.wrap_init(f))
    assert a == b and hash(a) == hash(b)
    a.call_wrapped(1)  # fills a's store only
    assert thunk_a() == 1 and a == b and hash(a) == hash(b)
    assert lu.wrap_init(f) != a
    assert record(lu.wrap_init(f, {"k": 1}))[0] != a


def test_transformation_with_aux_hands_back_a_thunk_reading_the_store():
    @lu.transformation_with_aux2
    def aux(f, store, x):
        out = f(x)
        store.store(out * 100)
        return out

    wrapped, thunk = aux(lu.wrap_init(lambda x: x + 1))
    with pytest.raises(lu.StoreException, match="Store empty"):
        thunk()
    assert wrapped.call_wrapped(2) == 3 and thunk() == 300
    with pytest.raises(lu.StoreException, match="Store occupied"):
        wrapped.call_wrapped(2)  # a WrappedFun's stores are single-use


def test_static_args_are_passed_before_the_dynamic_ones():
    @lu.transformation2
    def scale(f, factor, x):
        return f(x * factor)

    wrapped = scale(lu.wrap_init(lambda x: x), 3)
    assert wrapped.transforms[0][1] == (3,)
    assert wrapped.call_wrapped(2) == 6


def test_generator_style_transformations_still_work():
    # the older style JAX kept as lu.transformation / lu.transformation_with_aux
    @lu.transformation
    def plus_one(x):
        out = yield (x + 1,), {}
        yield out * 10

    @lu.transformation_with_aux
    def with_aux(x):
        out = yield (x,), {}
        yield out, ("saw", x)

    wrapped, thunk = with_aux(plus_one(lu.wrap_init(lambda x: x)))
    assert wrapped.call_wrapped(1) == 20 and thunk() == ("saw", 1)


def test_wrap_init_params_become_sorted_keyword_arguments():
    wrapped = lu.wrap_init(lambda x, *, b, a: (x, a, b), {"b": 2, "a": 1})
    assert wrapped.params == (("a", 1), ("b", 2))
    assert wrapped.call_wrapped(0) == (0, 1, 2)


# ------------------------------------------------------------------ the cache


def _counting_cache():
    calls = []

    def call(fun, *args):
        calls.append(args)
        return fun.call_wrapped(*args)

    return lu.cache(call), calls


def test_cache_hits_on_the_same_stack_and_args_and_misses_otherwise():
    cached, calls = _counting_cache()

    def f(x):
        return x * 2

    @lu.transformation2
    def plus(f, k, x):
        return f(x) + k

    assert cached(lu.wrap_init(f), 3) == 6
    assert cached(lu.wrap_init(f), 3) == 6  # a second wrap_init(f) shares the entry
    assert len(calls) == 1
    assert cached(lu.wrap_init(f), 4) == 8  # new extra key
    assert cached(plus(lu.wrap_init(f), 1), 3) == 7  # new transformation stack
    assert cached(plus(lu.wrap_init(f), 2), 3) == 8  # same stack, new static arg
    assert cached(plus(lu.wrap_init(f), 1), 3) == 7
    assert len(calls) == 4


def test_cache_entries_die_with_the_function():
    # the cache holds the raw function weakly and nothing in an entry refers back to it, so
    # the function (and with it, through the weak dictionary, its entries) can be collected
    cached, calls = _counting_cache()

    def f(x):
        return x

    cached(lu.wrap_init(f), 1)
    cached(lu.wrap_init(f), 1)
    assert len(calls) == 1
    alive = weakref.ref(f)
    del f
    gc.collect()
    assert alive() is None


def test_a_cache_hit_populates_the_stores_of_the_new_wrapped_fun():
    cached, calls = _counting_cache()

    def f(x):
        return {"double": x * 2}

    in_tree = tree_structure(((1,), {}))
    first, out_tree_1 = flatten_fun(lu.wrap_init(f), in_tree)
    second, out_tree_2 = flatten_fun(lu.wrap_init(f), in_tree)
    assert cached(first, 5) == [10]
    assert cached(second, 5) == [10]
    assert len(calls) == 1
    assert out_tree_2() == out_tree_1() == tree_structure({"double": 0})


# ------------------------------------------------------------------ api_util transformations


def test_flatten_fun_unflattens_args_and_kwargs_and_stores_the_output_tree():
    def f(pair, *, scale):
        a, b = pair
        return (a * scale, {"b": b})

    args_flat, in_tree = tree_flatten((((1, 2),), {"scale": 10}))
    flat, out_tree = flatten_fun(lu.wrap_init(f), in_tree)
    assert flat.call_wrapped(*args_flat) == [10, 2]
    assert out_tree() == tree_structure((0, {"b": 0}))


def test_flatten_fun_nokwargs_takes_a_tree_of_positional_args():
    args_flat, in_tree = tree_flatten(([1, 2], 3))
    flat, out_tree = flatten_fun_nokwargs(lu.wrap_init(lambda xs, y: sum(xs) + y), in_tree)
    assert flat.call_wrapped(*args_flat) == [6]
    assert out_tree() == tree_structure(0)


def test_argnums_partial_closes_over_static_args_with_strict_type_equality():
    def f(a, b, c):
        return (a, b, c)

    wrapped, dyn = argnums_partial(lu.wrap_init(f), (0, 2), ("x", 1, np.float32(2)))
    assert dyn == ("x", np.float32(2)) and wrapped.call_wrapped(*dyn) == ("x", 1, 2.0)
    same, _ = argnums_partial(lu.wrap_init(f), (0, 2), ("y", 1, 3.0))
    as_float, _ = argnums_partial(lu.wrap_init(f), (0, 2), ("y", 1.0, 3.0))
    assert wrapped == same and wrapped != as_float  # 1 == 1.0, but not as a static argument


def test_argnums_partial_rejects_unhashable_static_args_with_jaxs_message():
    def f(a, b):
        return a

    with pytest.raises(ValueError, match=r"Non-hashable static arguments are not supported.*"
                                         r"Static argument \(index 1\) of type <class 'list'>"):
        argnums_partial(lu.wrap_init(f), (0,), (1, [2]))
    # JAX's api_util.argnums_partial still words it this way; jit (and so make_jaxpr) hashes
    # static arguments before it gets there, with another text (see test_make_jaxpr.py)
    their_f = jax_lu.wrap_init(f, debug_info=jax_api_util.debug_info("test", f, (1, [2]), {}))
    with pytest.raises(ValueError) as theirs:
        jax_api_util.argnums_partial(their_f, (0,), (1, [2]))
    with pytest.raises(ValueError) as ours:
        argnums_partial(lu.wrap_init(f), (0,), (1, [2]))
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("lib", [None, jax_api_util], ids=["ours", "jax"])
def test_argnums_partial2_closes_a_plain_callable_over_the_other_args_and_kwargs(lib):
    partial2 = argnums_partial2 if lib is None else lib.argnums_partial2
    f_partial, dyn = partial2(lambda a, b, c, k=0: (a, b, c, k), (2, 0), (1, 2, 3), {"k": 4})
    assert dyn == (3, 1) and f_partial(30, 10) == (10, 2, 30, 4)
    f_last, dyn = partial2(lambda a, b: (a, b), -1, (1, 2), {})
    assert dyn == (2,) and f_last(20) == (1, 20)


def test_argnums_partial2_rejects_an_index_out_of_range_with_jaxs_message():
    with pytest.raises(ValueError) as want:
        jax_api_util.argnums_partial2(lambda a: a, 1, (1,), {})
    with pytest.raises(ValueError) as mine:
        argnums_partial2(lambda a: a, 1, (1,), {})
    assert str(mine.value) == str(want.value)


def test_merge_linear_aux_says_which_store_was_filled():
    filled, empty = lu.Store(), lu.Store()
    filled.store("aux")
    read = lambda store: (lambda: store.val)  # noqa: E731
    assert lu.merge_linear_aux(read(filled), read(empty)) == (True, "aux")
    assert lu.merge_linear_aux(read(empty), read(filled)) == (False, "aux")
    with pytest.raises(lu.StoreException, match="neither store occupied"):
        lu.merge_linear_aux(read(empty), read(lu.Store()))
    with pytest.raises(lu.StoreException, match="both stores occupied"):
        lu.merge_linear_aux(read(filled), read(filled))
