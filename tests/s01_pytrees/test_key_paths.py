"""Key paths: the key classes, keystr, and the path of every leaf, against jax."""

from __future__ import annotations

import collections
import dataclasses

import jax.tree_util as jtu
import pytest

import stages.s01_pytrees as tu

Point = collections.namedtuple("Point", ["y", "x"])


def _paths(lib, tree, **kwargs):
    """Each leaf's key path as (keystr, repr of the keys), and the leaf."""
    return [(lib.keystr(path), repr(path), leaf)
            for path, leaf in lib.tree_flatten_with_path(tree, **kwargs)[0]]


@pytest.mark.parametrize("name, arg, text, rep", [
    ("DictKey", "a", "['a']", "DictKey(key='a')"),
    ("DictKey", 1, "[1]", "DictKey(key=1)"),
    ("DictKey", ("a", 1), "[('a', 1)]", "DictKey(key=('a', 1))"),
    ("SequenceKey", 0, "[0]", "SequenceKey(idx=0)"),
    ("GetAttrKey", "x", ".x", "GetAttrKey(name='x')"),
    ("FlattenedIndexKey", 3, "[<flat index 3>]", "FlattenedIndexKey(key=3)"),
])
def test_key_classes_print_like_jax(name, arg, text, rep):
    ours, theirs = getattr(tu, name)(arg), getattr(jtu, name)(arg)
    assert (str(ours), repr(ours)) == (str(theirs), repr(theirs)) == (text, rep)


def test_the_package_exports_these_jax_tree_util_names():
    for name in ("KeyPath", "KeyEntry", "is_tree_node", "tree_reduce_associative"):
        assert name in tu.__all__ and hasattr(jtu, name), name
    assert tu.KeyPath.__origin__ is jtu.KeyPath.__origin__ is tuple  # tuple[KeyEntry, ...]


def test_keys_are_frozen_hashable_and_compare_by_class_and_value():
    assert tu.DictKey("a") == tu.DictKey("a")
    assert hash(tu.DictKey("a")) == hash(tu.DictKey("a"))
    assert tu.DictKey("a") != tu.GetAttrKey("a")
    assert tu.SequenceKey(0) != tu.FlattenedIndexKey(0)
    # A deliberate difference: ours are frozen dataclasses, whose error (a FrozenInstanceError,
    # an AttributeError) names the field; JAX's are C++ classes with read-only properties.
    with pytest.raises(AttributeError, match=r"^cannot assign to field 'key'$"):
        tu.DictKey("a").key = "b"
    with pytest.raises(AttributeError, match=r"^property of 'DictKey' object has no setter$"):
        jtu.DictKey("a").key = "b"


def test_keys_match_by_field_name_in_a_match_statement():
    match tu.DictKey("w"):
        case tu.DictKey(key=k):
            assert k == "w"
        case _:
            pytest.fail("DictKey did not match its own pattern")


def _keys(lib):
    return (lib.DictKey("a"), lib.SequenceKey(0), lib.GetAttrKey("x"), lib.FlattenedIndexKey(3))


def test_keystr_joins_the_key_texts():
    assert tu.keystr(_keys(tu)) == jtu.keystr(_keys(jtu)) == "['a'][0].x[<flat index 3>]"


@pytest.mark.parametrize("separator", ["", "/", "."])
def test_keystr_simple_uses_the_bare_keys(separator):
    ours = tu.keystr(_keys(tu), simple=True, separator=separator)
    assert ours == jtu.keystr(_keys(jtu), simple=True, separator=separator)
    assert ours == separator.join(["a", "0", "x", "3"])


def test_keystr_simple_prints_a_dict_key_that_is_no_string():
    def keys(lib):
        return lib.DictKey(1), lib.DictKey(("a", 1))

    ours = tu.keystr(keys(tu), simple=True, separator="/")
    assert ours == jtu.keystr(keys(jtu), simple=True, separator="/") == "1/('a', 1)"


@pytest.mark.parametrize("separator", ["/", "-"])
def test_keystr_separator_also_joins_the_full_key_texts(separator):
    # separator is not only for simple=True: the bracketed key texts are joined by it too
    ours = tu.keystr(_keys(tu), separator=separator)
    assert ours == jtu.keystr(_keys(jtu), separator=separator)
    assert ours == separator.join(["['a']", "[0]", ".x", "[<flat index 3>]"])


def test_keystr_of_the_empty_path_and_of_plain_objects():
    assert tu.keystr(()) == jtu.keystr(()) == ""
    assert tu.keystr(("x", 1)) == jtu.keystr(("x", 1)) == "x1"
    assert tu.keystr(("x", 1), simple=True, separator="/") == "x/1"


def test_keystr_simple_keeps_a_plain_objects_text_whole():
    keys = ("a.b", "[0]", "'c'")  # not key classes: simple=True has no bare key to take
    ours = tu.keystr(keys, simple=True, separator="/")
    assert ours == jtu.keystr(keys, simple=True, separator="/") == "a.b/[0]/'c'"


def test_flatten_with_path_for_builtin_kinds_equals_jax():
    tree = {"b": [1, (2,)], "a": Point(3, 4), "n": None,
            "o": collections.OrderedDict(z=5, y=6), "d": collections.defaultdict(list, q=7, p=8)}
    ours = _paths(tu, tree)
    assert ours == _paths(jtu, tree)
    assert [text for text, _, _ in ours] == [
        "['a'].y", "['a'].x", "['b'][0]", "['b'][1][0]", "['d']['p']", "['d']['q']",
        "['o']['z']", "['o']['y']"]


def test_flatten_with_path_returns_the_same_treedef_as_flatten():
    tree = {"b": [1, (2,)], "a": Point(3, None)}
    assert tu.tree_flatten_with_path(tree)[1] == tu.tree_structure(tree)


def test_registered_classes_get_keys_their_way(nodes):
    tree = [nodes.Box(1, 2), nodes.Params(3, 4), nodes.Pair(5, 6)]
    ours = _paths(tu, tree)
    assert ours == _paths(jtu, tree)
    assert [text for text, _, _ in ours] == [
        "[0][<flat index 0>]", "[0][<flat index 1>]", "[1].w", "[1].b", "[2].left", "[2].right"]


def test_is_leaf_in_flatten_with_path_takes_the_value_or_the_path():
    tree = {"a": (1, 2), "b": [3]}
    is_tuple = lambda x: isinstance(x, tuple)
    assert _paths(tu, tree, is_leaf=is_tuple) == _paths(jtu, tree, is_leaf=is_tuple)
    under_b = lambda path, x: len(path) == 1 and path[0].key == "b"
    ours = _paths(tu, tree, is_leaf=under_b, is_leaf_takes_path=True)
    assert ours == _paths(jtu, tree, is_leaf=under_b, is_leaf_takes_path=True)
    assert ours[-1][2] == [3]


def test_tree_leaves_with_path_is_the_leaf_half():
    tree = {"k": [1, 2]}
    assert tu.tree_leaves_with_path(tree) == tu.tree_flatten_with_path(tree)[0]


def test_tree_map_with_path_passes_the_path_first():
    tree, other = {"w": [1, 2], "b": 3}, {"w": [10, 20], "b": 30}
    f = lambda lib: lambda path, x, y: f"{lib.keystr(path)}={x + y}"
    assert tu.tree_map_with_path(f(tu), tree, other) == jtu.tree_map_with_path(f(jtu), tree, other)
    assert tu.tree_map_with_path(f(tu), tree, other)["w"] == ["['w'][0]=11", "['w'][1]=22"]


def test_dataclass_fields_in_the_order_given_not_sorted():
    @dataclasses.dataclass
    class Layer:
        zeta: int
        alpha: int

    for lib in (tu, jtu):
        lib.register_dataclass(Layer)
    assert _paths(tu, Layer(1, 2)) == _paths(jtu, Layer(1, 2))
    assert [text for text, _, _ in _paths(tu, Layer(1, 2))] == [".zeta", ".alpha"]
