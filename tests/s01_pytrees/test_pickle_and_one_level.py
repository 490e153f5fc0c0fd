"""Treedefs pickle as JAX's do; flatten_one_level, key hashes and the registries agree with JAX."""

from __future__ import annotations

import collections
import pickle

import jax.tree_util as jtu
import pytest
from jax._src import tree_util as jax_tree_util

import stages.s01_pytrees as tu
from stages.s01_pytrees import registration

from .conftest import Point

TREES = {
    "tuple": (1, 2),
    "nested": [1, (2, None)],
    "dict": {"a": 1, "b": [2]},
    "namedtuple": Point(1, 2),
    "none": None,
    "leaf": 1,
    "ordered_dict": collections.OrderedDict(b=1, a=2),
    "defaultdict": collections.defaultdict(list, {"z": 1, "y": 2}),
}


@pytest.mark.parametrize("name", list(TREES))
def test_a_treedef_pickles_and_unpickles_equal(name):
    tree = TREES[name]
    ours = tu.tree_structure(tree)
    theirs = jtu.tree_structure(tree)
    ours_again = pickle.loads(pickle.dumps(ours))
    theirs_again = pickle.loads(pickle.dumps(theirs))
    assert ours_again == ours and theirs_again == theirs
    assert str(ours_again) == str(theirs_again)
    assert ours_again.unflatten(range(ours.num_leaves)) == \
        theirs_again.unflatten(range(theirs.num_leaves))


def test_a_registered_node_type_pickles_by_reference(nodes):
    box = nodes.Box(1, (2, 3), meta="m")
    ours = pickle.loads(pickle.dumps(tu.tree_structure({"x": box})))
    theirs = pickle.loads(pickle.dumps(jtu.tree_structure({"x": box})))
    assert str(ours) == str(theirs)
    assert ours.unflatten([4, 5, 6]) == {"x": nodes.Box(4, (5, 6), meta="m")}


def test_a_none_leaf_treedef_unpickles_into_its_registry():
    treedef = registration.none_leaf_registry.flatten((None, 1))[1]
    again = pickle.loads(pickle.dumps(treedef))
    assert again == treedef and again.num_leaves == 2


@pytest.mark.parametrize("name", ["tuple", "namedtuple", "dict", "ordered_dict", "none"])
def test_flatten_one_level_gives_jaxs_children_and_node_data(name):
    tree = TREES[name]
    ours_children, ours_data = tu.flatten_one_level(tree)
    theirs_children, theirs_data = jtu.flatten_one_level(tree)
    assert type(ours_children) is type(theirs_children)
    assert list(ours_children) == list(theirs_children) and ours_data == theirs_data


def test_flatten_one_level_of_a_leaf_is_jaxs_error():
    with pytest.raises(ValueError) as ours:
        tu.flatten_one_level(1)
    with pytest.raises(ValueError) as theirs:
        jtu.flatten_one_level(1)
    assert str(ours.value) == str(theirs.value)


def test_keys_of_different_kinds_hash_differently():
    for lib in (tu, jtu):
        assert hash(lib.FlattenedIndexKey(1)) != hash(lib.SequenceKey(1))
        assert lib.FlattenedIndexKey(1) != lib.SequenceKey(1)
        assert hash(lib.SequenceKey(1)) == hash(lib.SequenceKey(1))
        assert len({lib.DictKey(0), lib.SequenceKey(0), lib.FlattenedIndexKey(0)}) == 3


def test_every_registry_flattens_a_registered_node_to_equal_treedefs(nodes):
    box = nodes.Box(1, 2)
    ours = [r.flatten(box)[1] for r in (registration.default_registry,
                                        registration.none_leaf_registry,
                                        registration.dispatch_registry)]
    theirs = [r.flatten(box)[1] for r in (jax_tree_util.default_registry,
                                          jax_tree_util.none_leaf_registry,
                                          jax_tree_util.dispatch_registry)]
    assert [ours[0] == t for t in ours] == [theirs[0] == t for t in theirs] == [True] * 3
