"""What jaxlib's registry checks that a Python registry could let through, against JAX: the
output of a custom node's flatten-with-keys rule, key entries' fields (an index stored as an
int), namedtuple fields, treedefs of two registries composed, and the children-count message
of equality_errors when the keys are no dict keys or cannot be hashed."""

from __future__ import annotations

import re

import numpy as np
import pytest
from jax import tree_util as jtu
from jax._src import tree_util as jax_src_tree_util

import stages.s01_pytrees as s01
from stages.s01_pytrees import tree_util as otu

LIBS = {"ours": (s01, otu, s01.none_leaf_registry, s01.equality_errors),
        "jax": (jtu, jtu, jax_src_tree_util.none_leaf_registry,
                jax_src_tree_util.equality_errors)}


def _outcome(f):
    try:
        return "ok", repr(f())
    except Exception as e:  # noqa: BLE001 (the oracle's exception, whatever it is)
        return type(e).__name__, str(e)


def _same(f):
    assert _outcome(lambda: f(*LIBS["ours"])) == _outcome(lambda: f(*LIBS["jax"]))


BAD_KEYED_OUTPUT = {"none": None, "not_a_pair_of_children": ([1], None),
                    "children_not_iterable": (5, None), "a_one_tuple": ([(1,)], None),
                    "a_list_not_a_tuple": [((1, 1),), None]}


@pytest.mark.parametrize("bad", BAD_KEYED_OUTPUT.values(), ids=BAD_KEYED_OUTPUT.keys())
def test_a_flatten_with_keys_rule_that_returns_no_pairs_is_refused_with_jaxs_message(bad):
    nodes = {}
    for name, (lib, *_) in LIBS.items():
        node = type("Node", (), {})
        lib.register_pytree_with_keys(node, lambda _, bad=bad: bad,
                                      lambda a, ch, node=node: node())
        nodes[name] = node
    for flatten in ("tree_flatten_with_path", "tree_leaves_with_path",
                    "flatten_one_level_with_keys"):
        ours = getattr(s01, flatten, None) or getattr(otu, flatten)
        assert _outcome(lambda ours=ours: ours(nodes["ours"]())) == \
            _outcome(lambda flatten=flatten: getattr(jtu, flatten)(nodes["jax"]()))


@pytest.mark.parametrize("tree", [{"a": 1}, [1, 2], (1,)], ids=["dict", "list", "tuple"])
def test_one_level_of_a_built_in_node_gives_a_tuple_of_pairs_as_jax(tree):
    _same(lambda lib, tu, *_: tu.flatten_one_level_with_keys(tree))


class _ListFields(tuple):
    _fields = ["a", "b"]


class _ShortFields(tuple):
    _fields = ("a",)


@pytest.mark.parametrize("tree", [_ListFields((1, 2)), _ShortFields((1, 2))],
                         ids=["fields_a_list", "fields_too_few"])
def test_a_namedtuple_whose_fields_do_not_fit_is_refused_with_paths_as_jax(tree):
    _same(lambda lib, *_: lib.tree_flatten_with_path(tree))
    _same(lambda lib, *_: lib.tree_flatten(tree))


@pytest.mark.parametrize("make", [
    lambda lib: lib.SequenceKey(True), lambda lib: lib.SequenceKey(np.int64(3)),
    lambda lib: lib.FlattenedIndexKey(np.uint8(2)), lambda lib: lib.DictKey((1, "a"))],
    ids=["bool_index", "numpy_index", "numpy_flat_index", "tuple_dict_key"])
def test_a_key_entry_stores_its_index_as_an_int_as_jax(make):
    _same(lambda lib, *_: make(lib))
    ours, theirs = make(s01), make(jtu)
    assert (str(ours), hash(type(getattr(ours, "idx", getattr(ours, "key", None))))) == \
        (str(theirs), hash(type(getattr(theirs, "idx", getattr(theirs, "key", None)))))


@pytest.mark.parametrize("make, ours", [
    (lambda lib: lib.SequenceKey("a"), "SequenceKey's idx must be an int, got 'a'"),
    (lambda lib: lib.GetAttrKey(1), "GetAttrKey's name must be a str, got 1"),
    (lambda lib: lib.FlattenedIndexKey(1.5), "FlattenedIndexKey's key must be an int, got 1.5"),
], ids=["str_index", "int_name", "float_flat_index"])
def test_a_key_entry_of_the_wrong_type_is_refused_as_jax(make, ours):
    """A TypeError in both; JAX's text is nanobind's list of the accepted signatures, ours says
    which field wanted what."""
    with pytest.raises(TypeError, match="^" + re.escape(ours) + "$"):
        make(s01)
    with pytest.raises(TypeError, match="incompatible function arguments"):
        make(jtu)


def test_a_key_entry_is_frozen_with_an_attribute_error_as_jax():
    for lib in (s01, jtu):
        for attribute in ("key", "other"):
            with pytest.raises(AttributeError):
                setattr(lib.DictKey("a"), attribute, 1)


def test_treedefs_of_two_registries_are_not_composed_or_tupled_as_jax():
    def other(lib, tu, none_leaf, _):
        return none_leaf.flatten(None)[1]

    _same(lambda *a: a[0].tree_structure([1]).compose(other(*a)))
    _same(lambda *a: a[1].treedef_tuple([a[0].tree_structure([1]), other(*a)]))
    _same(lambda *a: a[1].treedef_tuple([other(*a)]))


KEYS = {"attribute_keys": lambda lib, i: lib.GetAttrKey(f"f{i}"),
        "unhashable_dict_keys": lambda lib, i: lib.DictKey([i]),
        "dict_keys": lambda lib, i: lib.DictKey(f"k{i}")}


@pytest.mark.parametrize("key", KEYS.values(), ids=KEYS.keys())
def test_the_children_count_message_names_the_keys_only_as_jax_does(key):
    out = {}
    for name, (lib, _, _, equality_errors) in LIBS.items():
        kind = type("Custom", (), {"__init__": lambda self, *v: setattr(self, "v", v)})
        lib.register_pytree_with_keys(
            kind, lambda c, lib=lib: ([(key(lib, i), x) for i, x in enumerate(c.v)], None),
            lambda _, ch, kind=kind: kind(*ch))
        out[name] = [e[1:] for e in equality_errors(kind(1), kind(1, 2))]
    assert out["ours"] == out["jax"] and out["jax"]
