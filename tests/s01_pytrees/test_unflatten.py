"""Unflatten and flatten_up_to: round trips, and their error texts word for word against jax."""

from __future__ import annotations

import collections

import jax.tree_util as jtu
import pytest

import stages.s01_pytrees as tu

Point = collections.namedtuple("Point", ["y", "x"])
Other = collections.namedtuple("Other", ["y", "x"])
Three = collections.namedtuple("Three", ["y", "x", "z"])


def test_unflatten_rebuilds_every_builtin_kind():
    # Keys already sorted: unflatten builds dicts in sorted key order.
    tree = {"d": collections.defaultdict(set, k=7), "o": collections.OrderedDict(b=5, a=6),
            "p": Point(3, {"z": 4}), "t": (1, [2, None])}
    leaves, treedef = tu.tree_flatten(tree)
    rebuilt = tu.tree_unflatten(treedef, leaves)
    assert repr(rebuilt) == repr(tree)
    assert rebuilt["d"].default_factory is set


def test_unflatten_puts_new_leaves_in_flatten_order():
    treedef = tu.tree_structure({"b": [1, 2], "a": (3,)})
    assert tu.tree_unflatten(treedef, "xyz") == {"a": ("x",), "b": ["y", "z"]}


def test_unflatten_accepts_any_iterable_of_leaves():
    treedef = tu.tree_structure([1, (2,)])
    assert tu.tree_unflatten(treedef, iter([5, 6])) == [5, (6,)]
    assert tu.tree_unflatten(treedef, (x for x in [5, 6])) == [5, (6,)]


def test_unflatten_of_a_leaf_treedef_returns_the_leaf():
    assert tu.tree_unflatten(tu.tree_structure(0), ["only"]) == "only"


def test_unflatten_of_none_needs_no_leaves():
    assert tu.tree_unflatten(tu.tree_structure(None), []) is None


@pytest.mark.parametrize("tree, leaves", [
    ((1, 2), [1]),
    ((1, 2), [1, 2, 3]),
    ([], [1]),
    (7, []),
    ({"a": [1, 2], "b": 3}, [1, 2]),
], ids=["too-few", "too-many", "empty-with-one", "leaf-with-none", "nested-too-few"])
def test_unflatten_leaf_count_errors_equal_jax(same_error, tree, leaves):
    same_error(lambda: tu.tree_unflatten(tu.tree_structure(tree), leaves),
               lambda: jtu.tree_unflatten(jtu.tree_structure(tree), leaves))


def test_unflatten_error_texts_say_what_was_expected():
    treedef = tu.tree_structure((1, 2))
    with pytest.raises(ValueError) as few:
        treedef.unflatten([1])
    assert str(few.value) == "Too few leaves for PyTreeDef; expected 2, got 1"
    with pytest.raises(ValueError) as many:
        treedef.unflatten([1, 2, 3])
    assert str(many.value) == "Too many leaves for PyTreeDef; expected 2."


def test_unflatten_counts_an_extra_none_leaf_as_too_many(same_error):
    treedef = tu.tree_structure((1, 2))
    with pytest.raises(ValueError) as many:
        treedef.unflatten([1, 2, None])
    assert str(many.value) == "Too many leaves for PyTreeDef; expected 2."
    same_error(lambda: treedef.unflatten([1, 2, None]),
               lambda: jtu.tree_structure((1, 2)).unflatten([1, 2, None]))


@pytest.mark.parametrize("prefix, full", [
    ((1, 2), ((1, 2), [3])),
    ([1, {"a": 2}], [(1,), {"a": [2, 3]}]),
    (1, {"anything": [1, 2]}),
    (Point(1, 2), Point((1,), None)),
    (None, None),
], ids=["tuple", "list-dict", "leaf", "namedtuple", "none"])
def test_flatten_up_to_stops_at_the_prefix_leaves(prefix, full):
    ours = tu.tree_structure(prefix).flatten_up_to(full)
    assert ours == jtu.tree_structure(prefix).flatten_up_to(full)


MISMATCHES = [
    ((1, 2), (1, 2, 3)),
    ((1, 2), [1, 2]),
    ([1, 2], [1, 2, 3]),
    ([1, 2], (1, 2)),
    ({"a": 1}, {"b": 1}),
    ({"a": 1, "b": 2}, {"a": 1}),
    ({"a": 1}, [1]),
    ({"a": 1}, collections.OrderedDict(a=1)),
    (None, 1),
    ([None], [1]),
    (Point(1, 2), Other(1, 2)),
    (Point(1, 2), (1, 2)),
    (Point(1, 2), Three(1, 2, 3)),
    (collections.OrderedDict(a=1), collections.OrderedDict(b=1)),
    (collections.OrderedDict(a=1), {"a": 1}),
    (collections.defaultdict(list, a=1), collections.defaultdict(dict, a=1)),
    ({"a": (1, 2)}, {"a": (1,)}),
]


@pytest.mark.parametrize("prefix, full", MISMATCHES, ids=[repr(m)[:50] for m in MISMATCHES])
def test_flatten_up_to_errors_equal_jax(same_error, prefix, full):
    same_error(lambda: tu.tree_structure(prefix).flatten_up_to(full),
               lambda: jtu.tree_structure(prefix).flatten_up_to(full))


def test_flatten_up_to_error_texts_name_the_offending_value():
    treedef = tu.tree_structure((1, 2))
    with pytest.raises(ValueError, match=r"^Tuple arity mismatch: 3 != 2; tuple: \(1, 2, 3\)\.$"):
        treedef.flatten_up_to((1, 2, 3))
    with pytest.raises(ValueError, match=r"^Expected tuple, got \[1, 2\]\.$"):
        treedef.flatten_up_to([1, 2])


def test_flatten_up_to_of_custom_nodes_checks_type_aux_and_arity(nodes, same_error):
    box, params = nodes.Box, nodes.Params
    for prefix, full in [(box(1, 2, "a"), box(1, 2, "b")), (box(1, 2), 1),
                         (params(1, 2, "x"), params(1, 2, "y")), (params(1, 2), (1, 2))]:
        same_error(lambda p=prefix, f=full: tu.tree_structure(p).flatten_up_to(f),
                   lambda p=prefix, f=full: jtu.tree_structure(p).flatten_up_to(f))


def test_flatten_up_to_of_a_custom_node_with_a_different_child_count():
    class Bag:
        def __init__(self, *items):
            self.items = items

        def __repr__(self):
            return f"Bag{self.items!r}"

    for lib in (tu, jtu):
        lib.register_pytree_node(Bag, lambda b: (b.items, None), lambda _, c: Bag(*c))
    with pytest.raises(ValueError) as info:
        tu.tree_structure(Bag(1, 2)).flatten_up_to(Bag(1, 2, 3))
    with pytest.raises(ValueError) as jax_info:
        jtu.tree_structure(Bag(1, 2)).flatten_up_to(Bag(1, 2, 3))
    assert str(info.value) == str(jax_info.value)
    assert str(info.value) == "Custom type arity mismatch: 3 != 2; value: Bag(1, 2, 3)."
