"""Flattening: leaf order, what is a node, is_leaf, and how a treedef prints, against jax."""

from __future__ import annotations

import collections

import jax.tree_util as jtu
import numpy as np
import pytest

import stages.s01_pytrees as tu

Point = collections.namedtuple("Point", ["y", "x"])

# Trees whose leaves, treedef text and sizes must equal jax's.
CASES = [
    1,
    "x",
    None,
    (),
    [],
    {},
    (1,),
    [1, [2, (3, None)]],
    {"b": 1, "a": 2, "c": (3, None, [4])},
    {1: "one", 3: ("three",), 2: None},
    {("a", 1): 1, ("a", 0): 2},
    Point(1, 2),
    Point(y=[None], x={"k": ()}),
    collections.OrderedDict([("b", 1), ("a", 2)]),
    collections.defaultdict(list, {"b": 1, "a": 2}),
    [collections.OrderedDict(z=None), collections.defaultdict(dict, z=(1,))],
    np.arange(3),
]


def _ids(case):
    return repr(case)[:40]


@pytest.mark.parametrize("tree", CASES, ids=_ids)
def test_leaves_treedef_text_and_sizes_equal_jax(tree):
    leaves, treedef = tu.tree_flatten(tree)
    jax_leaves, jax_treedef = jtu.tree_flatten(tree)
    assert [id(x) for x in leaves] == [id(x) for x in jax_leaves]
    assert str(treedef) == str(jax_treedef)
    assert repr(treedef) == repr(jax_treedef)
    assert treedef.num_leaves == jax_treedef.num_leaves
    assert treedef.num_nodes == jax_treedef.num_nodes


@pytest.mark.parametrize("tree", [[[1, 2], [3]], {"a": [1, None, 2], "b": (3,)}],
                         ids=["nested_lists", "dict_of_list_and_tuple"])
def test_each_subtree_counts_only_its_own_leaves_and_nodes(tree):
    # a node's sizes are those of its own subtree, not of everything flattened before it
    children = tu.tree_structure(tree).children()
    jax_children = jtu.tree_structure(tree).children()
    sizes = [(c.num_leaves, c.num_nodes) for c in children]
    assert sizes == [(c.num_leaves, c.num_nodes) for c in jax_children]
    assert sizes[1] == (1, 2)


def test_dict_children_come_out_in_sorted_key_order():
    leaves, treedef = tu.tree_flatten({"b": 1, "a": 2, "c": (3, None, [4])})
    assert leaves == [2, 1, 3, 4]
    assert str(treedef) == "PyTreeDef({'a': *, 'b': *, 'c': (*, None, [*])})"


def test_unflatten_builds_dicts_in_sorted_key_order_like_jax():
    tree = {"b": 1, "a": 2}
    rebuilt = tu.tree_unflatten(tu.tree_structure(tree), [10, 20])
    assert list(rebuilt.items()) == [("a", 10), ("b", 20)]
    assert rebuilt == jtu.tree_unflatten(jtu.tree_structure(tree), [10, 20])


def test_unsortable_dict_keys_raise_jaxs_value_error(same_error):
    text = same_error(lambda: tu.tree_flatten({1: "a", "b": 2}),
                      lambda: jtu.tree_flatten({1: "a", "b": 2}))
    assert text == "Comparator raised exception while sorting pytree dictionary keys."


def test_unsortable_dict_keys_keep_the_comparison_error_as_cause():
    with pytest.raises(ValueError) as info:
        tu.tree_flatten({1: "a", "b": 2})
    assert isinstance(info.value.__cause__, TypeError)


class _Unorderable:
    """A dict key whose `<` raises the given exception (not a TypeError)."""

    def __init__(self, n: int, error: type[Exception]) -> None:
        self.n, self.error = n, error

    def __hash__(self) -> int:
        return self.n

    def __lt__(self, other: object) -> bool:
        raise self.error("no order")


@pytest.mark.parametrize("error", [RuntimeError, ZeroDivisionError], ids=lambda e: e.__name__)
def test_any_exception_from_key_comparison_becomes_jaxs_value_error(same_error, error):
    tree = {_Unorderable(1, error): "a", _Unorderable(2, error): "b"}
    text = same_error(lambda: tu.tree_flatten(tree), lambda: jtu.tree_flatten(tree))
    assert text == "Comparator raised exception while sorting pytree dictionary keys."
    with pytest.raises(ValueError) as ours:
        tu.tree_flatten(tree)
    with pytest.raises(ValueError) as theirs:
        jtu.tree_flatten(tree)
    assert type(ours.value.__cause__) is type(theirs.value.__cause__) is error


def test_none_is_a_node_with_no_children_not_a_leaf():
    assert tu.tree_leaves([None, 1, (None,)]) == [1] == jtu.tree_leaves([None, 1, (None,)])
    treedef = tu.tree_structure(None)
    assert str(treedef) == "PyTreeDef(None)"
    assert (treedef.num_leaves, treedef.num_nodes) == (0, 1)


def test_is_leaf_is_asked_before_the_type_lookup_at_the_root():
    is_tuple = lambda x: isinstance(x, tuple)
    leaves, treedef = tu.tree_flatten((1, 2), is_leaf=is_tuple)
    assert leaves == [(1, 2)]
    assert str(treedef) == "PyTreeDef(*)" == str(jtu.tree_structure((1, 2), is_leaf=is_tuple))


def test_is_leaf_can_turn_none_into_a_leaf_at_the_root_and_inside():
    is_none = lambda x: x is None
    assert tu.tree_flatten(None, is_leaf=is_none)[0] == [None]
    leaves, treedef = tu.tree_flatten([None, 1], is_leaf=is_none)
    assert leaves == [None, 1]
    jax_treedef = jtu.tree_structure([None, 1], is_leaf=is_none)
    assert str(treedef) == "PyTreeDef([*, *])" == str(jax_treedef)


def test_is_leaf_is_asked_at_every_node_with_each_node_once():
    tree = {"a": [1, (2, 3)], "b": None}
    seen, jax_seen = [], []
    tu.tree_flatten(tree, is_leaf=lambda x: seen.append(x) or False)
    jtu.tree_flatten(tree, is_leaf=lambda x: jax_seen.append(x) or False)
    assert seen == jax_seen
    assert len(seen) == 7  # dict, list, 1, tuple, 2, 3, None


@pytest.mark.parametrize("verdict", [1, 0, "yes", np.bool_(False)], ids=repr)
def test_is_leaf_must_answer_a_bool(same_error, verdict):
    text = same_error(lambda: tu.tree_flatten([1], is_leaf=lambda x: verdict),
                      lambda: jtu.tree_flatten([1], is_leaf=lambda x: verdict))
    assert text.startswith("is_leaf predicate returned a non-boolean value ")


def test_is_leaf_answering_none_means_not_a_leaf():
    assert str(tu.tree_structure([1], is_leaf=lambda x: None)) == "PyTreeDef([*])"


def test_namedtuple_flattens_in_field_order_and_prints_as_custom_node():
    leaves, treedef = tu.tree_flatten(Point(1, 2))
    assert leaves == [1, 2]
    assert str(treedef) == "PyTreeDef(CustomNode(namedtuple[Point], [*, *]))"


def test_ordered_dict_keeps_insertion_order():
    leaves, treedef = tu.tree_flatten(collections.OrderedDict([("b", 1), ("a", 2)]))
    assert leaves == [1, 2]
    assert str(treedef) == "PyTreeDef(CustomNode(OrderedDict[('b', 'a')], [*, *]))"


def test_defaultdict_sorts_its_keys_and_keeps_its_factory():
    tree = collections.defaultdict(list, {"b": 1, "a": 2})
    leaves, treedef = tu.tree_flatten(tree)
    assert leaves == [2, 1]
    assert str(treedef) == (
        "PyTreeDef(CustomNode(defaultdict[(<class 'list'>, ('a', 'b'))], [*, *]))")
    rebuilt = tu.tree_unflatten(treedef, leaves)
    assert rebuilt.default_factory is list and rebuilt == tree


def test_unregistered_objects_are_leaves():
    class Opaque:
        pass

    thing = Opaque()
    assert tu.tree_leaves([thing, {"k": thing}]) == [thing, thing]


@pytest.mark.parametrize("tree", [(1, 2), {"a": 1, "b": [2]}, None, Point(1, 2), 7,
                                  collections.OrderedDict(b=1, a=2)], ids=_ids)
def test_node_data_equals_jax(tree):
    assert tu.tree_structure(tree).node_data() == jtu.tree_structure(tree).node_data()


@pytest.mark.parametrize("tree", [[1, (2, 3), {"a": None}], Point([1], 2), 5, ()], ids=_ids)
def test_children_are_the_treedefs_of_the_root_children(tree):
    ours = [str(c) for c in tu.tree_structure(tree).children()]
    assert ours == [str(c) for c in jtu.tree_structure(tree).children()]
    assert tu.treedef_children(tu.tree_structure(tree)) == tu.tree_structure(tree).children()


def test_compose_puts_the_inner_structure_at_every_leaf():
    outer, inner = [1, [2]], (1, None, 2)
    ours = tu.tree_structure(outer).compose(tu.tree_structure(inner))
    theirs = jtu.tree_structure(outer).compose(jtu.tree_structure(inner))
    assert str(ours) == str(theirs) == "PyTreeDef([(*, None, *), [(*, None, *)]])"
    assert (ours.num_leaves, ours.num_nodes) == (theirs.num_leaves, theirs.num_nodes)
    assert ours == tu.tree_structure([(1, None, 2), [(1, None, 2)]])


def test_treedef_tuple_wraps_treedefs_in_a_tuple_node():
    parts = [tu.tree_structure([1, 2]), tu.tree_structure({"a": 3})]
    assert tu.treedef_tuple(parts) == tu.tree_structure(([1, 2], {"a": 3}))
    assert tu.treedef_tuple(parts).num_nodes == 6


def test_treedef_is_leaf_checks_only_the_node_count_like_jax():
    for tree in (1, None, (), [1], {"a": 1}):
        assert tu.treedef_is_leaf(tu.tree_structure(tree)) == jtu.treedef_is_leaf(
            jtu.tree_structure(tree))
    assert tu.treedef_is_leaf(tu.tree_structure(None))  # the quirk: None counts as a leaf here


def test_all_leaves_is_false_when_any_element_is_a_node():
    for items in ([1, "a"], [[1]], [None], [1, Point(1, 2)]):
        assert tu.all_leaves(items) == jtu.all_leaves(items)
    assert tu.all_leaves([None], is_leaf=lambda x: x is None)


def test_flatten_one_level_gives_children_and_node_data():
    children, data = tu.flatten_one_level({"b": 1, "a": 2})
    assert (list(children), data) == ([2, 1], ("a", "b"))
    with pytest.raises(ValueError, match="can't tree-flatten type: <class 'int'>"):
        tu.flatten_one_level(3)


def test_dict_keys_are_sorted_one_level_down_too():
    from jax._src.tree_util import flatten_one_level as jax_flatten_one_level

    tree = {"b": 1, "c": 3, "a": 2}
    children, keys = tu.flatten_one_level(tree)
    assert keys == ("a", "b", "c")
    assert list(children) == list(jax_flatten_one_level(tree)[0]) == [2, 1, 3]
    with pytest.raises(ValueError, match=r"^Comparator raised exception while sorting pytree "
                                         r"dictionary keys\.$"):
        tu.flatten_one_level({1: "a", "b": 2})


def test_none_leaf_registry_treats_none_as_a_leaf():
    leaves, treedef = tu.none_leaf_registry.flatten([None, 1])
    assert leaves == [None, 1]
    assert str(treedef) == "PyTreeDef([*, *])"
