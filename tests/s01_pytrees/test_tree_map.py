"""tree_map and friends: several trees, prefix trees, and the structure errors, against jax."""

from __future__ import annotations

import collections
import operator

import jax.tree_util as jtu
import pytest

import stages.s01_pytrees as tu

Point = collections.namedtuple("Point", ["y", "x"])
OD, DD = collections.OrderedDict, collections.defaultdict


def _pair(*xs):
    return xs


def test_tree_map_over_one_tree_keeps_the_structure():
    tree = {"b": [1, None, (2,)], "a": Point(3, 4)}
    ours = tu.tree_map(lambda x: x * 10, tree)
    assert ours == jtu.tree_map(lambda x: x * 10, tree)
    assert ours == {"a": Point(30, 40), "b": [10, None, (20,)]}


def test_tree_map_over_several_trees_zips_their_leaves():
    a, b, c = {"x": 1, "y": (2, 3)}, {"x": 10, "y": (20, 30)}, {"x": 100, "y": (200, 300)}
    ours = tu.tree_map(lambda *xs: sum(xs), a, b, c)
    assert ours == jtu.tree_map(lambda *xs: sum(xs), a, b, c) == {"x": 111, "y": (222, 333)}


def test_the_first_tree_is_only_a_prefix_of_the_others():
    assert tu.tree_map(_pair, [1], [(2, 3)]) == [(1, (2, 3))] == jtu.tree_map(_pair, [1], [(2, 3)])
    ours = tu.tree_map(_pair, {"a": 1, "b": 2}, {"a": [1, 2], "b": {"c": 3}})
    assert ours == jtu.tree_map(_pair, {"a": 1, "b": 2}, {"a": [1, 2], "b": {"c": 3}})


def test_tree_map_is_leaf_stops_the_walk():
    tree = [(1, 2), [3, (4,)]]
    is_tuple = lambda x: isinstance(x, tuple)
    ours = tu.tree_map(lambda t: ("leaf", t), tree, is_leaf=is_tuple)
    assert ours == jtu.tree_map(lambda t: ("leaf", t), tree, is_leaf=is_tuple)
    assert ours[0] == ("leaf", (1, 2))


def test_tree_map_calls_f_once_per_leaf_in_flatten_order():
    seen = []
    tu.tree_map(seen.append, {"b": 1, "a": [2, 3]})
    assert seen == [2, 3, 1]


# (prefix tree, full tree): each must fail in tree_map with jax's exact message.
STRUCTURE_ERRORS = {
    "length-of-tuple": ((1, 2), (1, 2, 3)),
    "length-of-list": ([1, (2, 3)], [1]),
    "length-nested": ({"a": (1, {"b": [1, 2]})}, {"a": (1, {"b": [1, 2, 3]})}),
    "type-tuple-vs-list": ((1, 2), [1, 2]),
    "type-nested": ({"a": {"x": (1,)}}, {"a": {"x": [1]}}),
    "type-none-vs-int": ([None], [1]),
    "type-none-at-root": (None, 1),
    "type-tuple-vs-none": ((1,), None),
    "metadata-dict-keys": ({"a": 1}, {"b": 1}),
    "metadata-two-keys": ({"a": 1, "b": 2}, {"a": 1, "c": 2}),
    "metadata-int-vs-str-key": ({1: 1}, {"a": 1}),
    "metadata-ordereddict-order": (OD(a=1, b=2), OD(b=1, a=2)),
    "metadata-defaultdict-factory": (DD(list, a=1), DD(dict, a=1)),
    "children-dict": ({"a": 1}, {"a": 1, "b": 2}),
    "children-ordereddict": (OD(a=1), OD(a=1, b=2)),
    "inside-defaultdict": (DD(list, a=(1,)), DD(list, a=(1, 2))),
}


@pytest.mark.parametrize("prefix, full", STRUCTURE_ERRORS.values(), ids=STRUCTURE_ERRORS.keys())
def test_tree_map_structure_errors_equal_jax(same_error, prefix, full):
    same_error(lambda: tu.tree_map(_pair, prefix, full),
               lambda: jtu.tree_map(_pair, prefix, full))
    same_error(lambda: tu.tree_map(_pair, prefix, prefix, full),
               lambda: jtu.tree_map(_pair, prefix, prefix, full))


@pytest.mark.parametrize("prefix, full", STRUCTURE_ERRORS.values(), ids=STRUCTURE_ERRORS.keys())
def test_tree_map_with_path_structure_errors_equal_jax(same_error, prefix, full):
    text = same_error(lambda: tu.tree_map_with_path(_pair, prefix, full),
                      lambda: jtu.tree_map_with_path(_pair, prefix, full))
    assert "tree_map_with_path tree" in text


def test_length_error_text():
    with pytest.raises(ValueError) as info:
        tu.tree_map(_pair, (1, 2), (1, 2, 3))
    assert str(info.value) == (
        "pytree structure error: different lengths of tuple at key path\n"
        "    tree_map tree\n"
        "At that key path, the prefix pytree tree_map tree has a subtree of type tuple of "
        "length 2, but the full pytree has a subtree of the same type but of length 3.")


def test_the_structure_error_is_raised_from_none_as_in_jax():
    errors = []
    for lib in (tu, jtu):
        with pytest.raises(ValueError) as info:
            lib.tree_map(_pair, (1, 2), (1, 2, 3))
        errors.append(info.value)
    ours, theirs = errors
    assert theirs.__cause__ is None and theirs.__suppress_context__
    assert ours.__cause__ is None and ours.__suppress_context__


def test_none_is_a_node_so_it_does_not_match_a_leaf():
    with pytest.raises(ValueError) as info:
        tu.tree_map(_pair, [None], [1])
    assert str(info.value) == (
        "pytree structure error: different types at key path\n"
        "    tree_map tree[0]\n"
        "At that key path, the prefix pytree tree_map tree has a subtree of type\n"
        "    <class 'NoneType'>\n"
        "but at the same key path the full pytree has a subtree of different type\n"
        "    <class 'int'>.")


def test_metadata_error_text_includes_a_diff():
    with pytest.raises(ValueError) as info:
        tu.tree_map(_pair, {"a": 1}, {"b": 1})
    assert str(info.value) == (
        "pytree structure error: different pytree metadata at key path\n"
        "    tree_map tree\n"
        "At that key path, the prefix pytree tree_map tree has a subtree of type\n"
        "    <class 'dict'>\n"
        "with metadata\n"
        "    ('a',)\n"
        "but at the same key path the full pytree has a subtree of the same type but with "
        "metadata\n"
        "    ('b',)\n"
        "so the diff in the metadata at these pytree nodes is\n"
        "    - ('a',)\n"
        "    ?   ^\n"
        "\n"
        "    + ('b',)\n"
        "    ?   ^\n")


def test_registered_node_errors_equal_jax(nodes, same_error):
    box, params = nodes.Box, nodes.Params
    for prefix, full in [(box(1, 2, "a"), box(1, 2, "b")), (box((1, 2), 3), box((1, 2, 3), 3)),
                         (params(1, 2, "x"), params(1, 2, "y")),
                         (params(1, (2,)), params(1, (2, 3))), (box(1, 2), (1, 2))]:
        same_error(lambda p=prefix, f=full: tu.tree_map(_pair, p, f),
                   lambda p=prefix, f=full: jtu.tree_map(_pair, p, f))


def test_prefix_errors_lists_each_mismatch():
    errors = tu.prefix_errors({"a": (1, 2), "b": [1]}, {"a": (1, 2, 3), "b": (1,)})
    texts = [str(make("in_axes")) for make in errors]
    assert len(texts) == 2
    assert texts[0].startswith("pytree structure error: different lengths of tuple at key path\n"
                               "    in_axes['a']\n")
    assert texts[1].startswith("pytree structure error: different types at key path\n"
                               "    in_axes['b']\n")


# Where JAX 0.10.2's message is wrong, ours says the right thing; these pin both behaviours.
def test_divergence_namedtuple_error_names_the_right_field():
    prefix, full = Point(1, (1, 2)), Point(1, (2, 3, 4))
    with pytest.raises(ValueError) as ours:
        tu.tree_map(_pair, prefix, full)
    with pytest.raises(ValueError) as theirs:
        jtu.tree_map(_pair, prefix, full)
    assert "    tree_map tree.x\n" in str(ours.value)
    # JAX's flatten_one_level_with_keys names every namedtuple child after the first field.
    assert "    tree_map tree.y\n" in str(theirs.value)


def test_divergence_children_count_error_for_attribute_keys():
    class Named:
        def __init__(self, **kids):
            self.kids = kids

    for lib in (tu, jtu):
        lib.register_pytree_with_keys(
            Named,
            lambda n, lib=lib: (tuple((lib.GetAttrKey(k), v) for k, v in n.kids.items()), None),
            lambda _, values: Named(),
        )
    with pytest.raises(ValueError) as ours:
        tu.tree_map(_pair, Named(a=1), Named(a=1, b=2))
    assert str(ours.value).startswith(
        "pytree structure error: different numbers of pytree children at key path\n")
    assert str(ours.value).endswith("with 2 child keys\n    a b\n"
                                    "so the symmetric difference on key sets is\n    b")
    with pytest.raises(AttributeError):  # JAX reads `.key` of a GetAttrKey and crashes
        jtu.tree_map(_pair, Named(a=1), Named(a=1, b=2))


def test_divergence_is_leaf_is_kept_while_looking_for_the_error():
    is_tuple = lambda x: isinstance(x, tuple)
    prefix, full = [(1, 2), [3]], [(1, 2, 3), [4, 5]]
    with pytest.raises(ValueError) as ours:
        tu.tree_map(_pair, prefix, full, is_leaf=is_tuple)
    assert "different lengths of list at key path\n    tree_map tree[1]\n" in str(ours.value)
    with pytest.raises(ValueError) as theirs:  # JAX forgets is_leaf below the root
        jtu.tree_map(_pair, prefix, full, is_leaf=is_tuple)
    assert "different lengths of tuple at key path\n    tree_map tree[0]\n" in str(theirs.value)


def test_divergence_unflatten_reads_one_leaf_ahead_in_jax():
    class Boxed:  # a custom node whose unflatten rule always raises
        def __init__(self, v):
            self.v = v

    def refuse(aux, children):
        raise RuntimeError("the rule")

    for lib in (tu, jtu):
        lib.register_pytree_node(Boxed, lambda b: ((b.v,), None), refuse)

    def f(x):
        if x == 3:
            raise RuntimeError("the function")
        return x

    def first_error(lib, tree):
        with pytest.raises(RuntimeError) as err:
            lib.tree_map(f, tree)
        return str(err.value)

    # both unflatten while f runs: JAX has already asked f for the leaf after the node's subtree
    assert first_error(jtu, [Boxed(1), 3]) == "the function"
    assert first_error(tu, [Boxed(1), 3]) == "the rule"
    for tree, want in (([Boxed(1), 2, 3], "the rule"), ([3, Boxed(1)], "the function")):
        assert first_error(jtu, tree) == first_error(tu, tree) == want


def test_tree_reduce_folds_the_leaves():
    tree = {"a": [1, 2], "b": (3, None)}
    assert tu.tree_reduce(operator.add, tree) == jtu.tree_reduce(operator.add, tree) == 6
    assert tu.tree_reduce(operator.add, tree, 10) == 16
    assert tu.tree_reduce(operator.add, [], 0) == 0
    with pytest.raises(TypeError, match="reduce\\(\\) of empty iterable with no initial value"):
        tu.tree_reduce(operator.add, [])


def test_tree_reduce_associative_combines_in_balanced_pairs_as_jax(same_error):
    pair = lambda a, b: (a, b)  # not associative, so it shows the order of combination
    for tree in ([1, (2, 3), {"a": 4, "b": 5}], list(range(11)), [7], {"x": [None, 2]}):
        assert tu.tree_reduce_associative(pair, tree) == jtu.tree_reduce_associative(pair, tree)
    assert tu.tree_reduce_associative(pair, [1, (2, 3), {"a": 4, "b": 5}]) == (
        (1, 2), (3, (4, 5)))
    for tree in ([], None):
        assert tu.tree_reduce_associative(pair, tree, identity=0) == 0
    is_none = lambda x: x is None
    assert (tu.tree_reduce_associative(pair, [None, 1], is_leaf=is_none)
            == jtu.tree_reduce_associative(pair, [None, 1], is_leaf=is_none) == (None, 1))
    same_error(lambda: tu.tree_reduce_associative(pair, []),
               lambda: jtu.tree_reduce_associative(pair, []), TypeError)
    same_error(lambda: tu.tree_reduce_associative(pair, [1], 0),  # identity is keyword-only
               lambda: jtu.tree_reduce_associative(pair, [1], 0), TypeError)


def test_equality_errors_takes_is_leaf_as_jax():
    from jax._src.tree_util import equality_errors as jax_equality_errors

    is_none, is_tuple = (lambda x: x is None), (lambda x: isinstance(x, tuple))
    for a, b, is_leaf in [([None, (1,)], [1, (1, 2)], is_none), ([None, (1,)], [1, (1, 2)], None),
                          ({"a": (1,)}, {"a": (1, 2)}, is_tuple)]:
        theirs = repr(list(jax_equality_errors(a, b, is_leaf=is_leaf)))
        assert repr(list(tu.equality_errors(a, b, is_leaf=is_leaf))) == theirs
        assert repr(list(tu.equality_errors(a, b, is_leaf))) == theirs  # third, as in JAX
    assert list(tu.equality_errors([None, (1,)], [1, (1, 2)], is_leaf=is_none)) == [
        ((tu.SequenceKey(1),), "tuple of length 1", "tuple of length 2",
         "the lengths do not match")]


def test_tree_all_needs_every_leaf_truthy():
    for tree in ([1, True, {"a": 0}], [], {"a": (1, "x")}, [None]):
        assert tu.tree_all(tree) == jtu.tree_all(tree)


def test_tree_transpose_swaps_outer_and_inner_structure():
    outer, inner = [0, 0], (0, 0, 0)
    tree = [(1, 2, 3), (4, 5, 6)]
    ours = tu.tree_transpose(tu.tree_structure(outer), tu.tree_structure(inner), tree)
    assert ours == jtu.tree_transpose(jtu.tree_structure(outer), jtu.tree_structure(inner), tree)
    assert ours == ([1, 4], [2, 5], [3, 6])
    assert tu.tree_transpose(tu.tree_structure(outer), None, tree) == ours


def test_tree_transpose_mismatch_error_equals_jax(same_error):
    outer, inner, tree = [0, 0], (0, 0), [(1, 2, 3), (4, 5, 6)]
    same_error(
        lambda: tu.tree_transpose(tu.tree_structure(outer), tu.tree_structure(inner), tree),
        lambda: jtu.tree_transpose(jtu.tree_structure(outer), jtu.tree_structure(inner), tree),
        TypeError)


def test_broadcast_prefix_repeats_each_prefix_leaf_over_its_subtree():
    from jax._src.tree_util import broadcast_prefix as jax_broadcast_prefix

    prefix, full = (0, None, 1), ([1, 2], None, {"a": 3, "b": (4, 5)})
    assert tu.broadcast_prefix(prefix, full) == jax_broadcast_prefix(prefix, full)
    assert tu.broadcast_prefix(prefix, full) == [0, 0, 1, 1, 1]
