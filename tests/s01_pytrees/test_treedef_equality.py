"""Treedef equality and hashing: what two structures must share to be "the same", against jax.

A later stage keys jit's caches on treedefs, so equality must be exactly JAX's, hashing must
agree with equality, and a treedef must not change after it is made.
"""

from __future__ import annotations

import collections
import operator

import jax.tree_util as jtu
import numpy as np
import pytest

import stages.s01_pytrees as tu

First = collections.namedtuple("Point", ["x"])
Second = collections.namedtuple("Point", ["x"])  # a different class with the same name


def _both(a, b):
    """(ours a == b, jax a == b) for the structures of two trees."""
    return (tu.tree_structure(a) == tu.tree_structure(b),
            jtu.tree_structure(a) == jtu.tree_structure(b))


@pytest.mark.parametrize("a, b, equal", [
    ((1,), (2,), True),
    (1, "x", True),
    ([1], (1,), False),
    ({"a": 1}, {"b": 1}, False),
    ({"a": 1}, collections.OrderedDict(a=1), False),
    (collections.OrderedDict(a=1, b=2), collections.OrderedDict(b=2, a=1), False),
    (collections.defaultdict(list, a=1), collections.defaultdict(dict, a=1), False),
    (None, (), False),
    ([None], [1], False),
    (First(1), Second(1), False),
    ({1: "x"}, {1.0: "x"}, True),
    ({True: "x"}, {1: "x"}, True),
], ids=lambda v: repr(v)[:30])
def test_equality_equals_jax(a, b, equal):
    assert _both(a, b) == (equal, equal)


def test_namedtuples_of_the_same_name_print_the_same_but_are_not_equal():
    ours_a, ours_b = tu.tree_structure(First(1)), tu.tree_structure(Second(1))
    assert str(ours_a) == str(ours_b) == "PyTreeDef(CustomNode(namedtuple[Point], [*]))"
    assert ours_a != ours_b
    assert str(jtu.tree_structure(First(1))) == str(ours_a)


def test_custom_aux_data_that_prints_the_same_can_differ():
    class Tagged:
        def __init__(self, x, tag):
            self.x, self.tag = x, tag

    for lib in (tu, jtu):
        lib.register_pytree_node(Tagged, lambda t: ((t.x,), t.tag),
                                 lambda tag, c: Tagged(c[0], tag))
    # aux 1 and "1" both print as Tagged[1], but 1 != "1".
    for lib in (tu, jtu):
        one, text_one = lib.tree_structure(Tagged(0, 1)), lib.tree_structure(Tagged(0, "1"))
        assert str(one) == str(text_one) == "PyTreeDef(CustomNode(Tagged[1], [*]))"
        assert one != text_one


def test_dict_keys_that_print_differently_can_still_be_equal():
    ours_int, ours_float = tu.tree_structure({1: 0}), tu.tree_structure({1.0: 0})
    assert str(ours_int) != str(ours_float)
    assert ours_int == ours_float
    assert hash(ours_int) == hash(ours_float)


@pytest.mark.parametrize("tree", [
    {"a": [1, (2, None)], "b": First(3)},
    collections.defaultdict(list, k=[1]),
    collections.OrderedDict(z=1, a=2),
    (),
], ids=lambda v: repr(v)[:30])
def test_equal_treedefs_hash_equal_and_work_as_dict_keys(tree):
    a, b = tu.tree_structure(tree), tu.tree_structure(tree)
    assert a == b and a is not b
    assert hash(a) == hash(b)
    cache = {a: "hit"}
    assert cache[b] == "hit"


def test_unhashable_aux_data_still_hashes_like_jax():
    class Listy:
        def __init__(self, x, aux):
            self.x, self.aux = x, aux

    for lib in (tu, jtu):
        lib.register_pytree_node(Listy, lambda v: ((v.x,), v.aux), lambda a, c: Listy(c[0], a))
    ours = tu.tree_structure(Listy(1, [1, 2]))
    hash(jtu.tree_structure(Listy(1, [1, 2])))
    assert hash(ours) == hash(tu.tree_structure(Listy(5, [1, 2])))
    assert str(ours) == "PyTreeDef(CustomNode(Listy[[1, 2]], [*]))"


def test_treedef_is_immutable_with_jaxs_errors():
    treedef, theirs = tu.tree_structure([1, 2]), jtu.tree_structure([1, 2])
    # CPython 3.12 names JAX's nanobind class by its full path in the second message
    # ('jaxlib._jax.pytree.PyTreeDef' object ...); 3.11 by its short name, as ours always does.
    for tree, prefix in ((treedef, ""), (theirs, r"(jaxlib\._jax\.pytree\.)?")):
        with pytest.raises(AttributeError, match=r"^property of 'PyTreeDef' object has no setter$"):
            tree.num_leaves = 3
        with pytest.raises(AttributeError,
                           match=rf"^'{prefix}PyTreeDef' object has no attribute 'anything'$"):
            tree.anything = 1
    assert treedef.num_leaves == 2


def test_treedef_never_equals_other_types():
    assert tu.tree_structure(1) != "PyTreeDef(*)"
    assert tu.tree_structure(1) != 1


class Holder:
    """One child and an aux datum, registered with ours and jax by the `holder` fixture."""

    def __init__(self, x, aux):
        self.x, self.aux = x, aux

    def __repr__(self):
        return f"Holder({self.x!r})"


@pytest.fixture(scope="module")
def holder():
    for lib in (tu, jtu):
        lib.register_pytree_node(Holder, lambda h: ((h.x,), h.aux),
                                 lambda aux, c: Holder(c[0], aux))
    return Holder


class EqRaises:
    def __eq__(self, other):
        raise TypeError("no == here")

    __hash__ = object.__hash__


# Aux data that == cannot say is equal to itself: an array, NaN, an __eq__ that raises.
AWKWARD_AUX = [lambda: np.arange(3), lambda: float("nan"), EqRaises]
AWKWARD_IDS = ["array", "nan", "eq_raises"]


@pytest.mark.parametrize("make_aux", AWKWARD_AUX, ids=AWKWARD_IDS)
def test_the_same_aux_object_always_matches_itself_as_in_jax(holder, make_aux):
    aux = make_aux()
    for lib in (tu, jtu):  # the C++ compares the same object as equal without calling ==
        assert lib.tree_map(operator.add, holder(1, aux), holder(2, aux)).x == 3
        assert lib.tree_structure(holder(1, aux)).flatten_up_to(holder(2, aux)) == [2]
        assert lib.tree_structure(holder(1, aux)) == lib.tree_structure(holder(2, aux))


@pytest.mark.parametrize("make_aux", [AWKWARD_AUX[0], AWKWARD_AUX[2]], ids=["array", "eq_raises"])
@pytest.mark.parametrize("wrap", [lambda h: h, lambda h: [1, {"k": h}]], ids=["root", "nested"])
def test_aux_data_that_fails_to_compare_raises_jaxs_error(holder, same_error, make_aux, wrap):
    def compare(lib, op):
        return lambda: op(lib.tree_structure(wrap(holder(1, make_aux()))),
                          lib.tree_structure(wrap(holder(1, make_aux()))))

    for op in (operator.eq, operator.ne):
        text = same_error(compare(tu, op), compare(jtu, op), ValueError)
        assert text.startswith("Exception raised while checking equality of metadata fields")
    with pytest.raises(ValueError) as ours:
        compare(tu, operator.eq)()
    with pytest.raises(ValueError) as theirs:
        compare(jtu, operator.eq)()
    # chained from the comparison's own error, as JAX's is
    assert type(ours.value.__cause__) is type(theirs.value.__cause__)
    assert str(ours.value.__cause__) == str(theirs.value.__cause__)


def test_aux_data_is_compared_with_not_equal_as_in_jax(holder):
    class Contrary:  # == and != both say yes
        def __eq__(self, other):
            return True

        def __ne__(self, other):
            return True

        __hash__ = object.__hash__

    ours = tu.tree_structure(holder(1, Contrary())) == tu.tree_structure(holder(1, Contrary()))
    theirs = jtu.tree_structure(holder(1, Contrary())) == jtu.tree_structure(holder(1, Contrary()))
    assert ours is theirs is False
