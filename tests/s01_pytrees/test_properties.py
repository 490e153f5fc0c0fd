"""Property tests: random pytrees of every node kind, flattened by ours and by jax side by side.

The trees (conftest.py) mix tuple, list, dict, None, namedtuple, OrderedDict, defaultdict and
three registered classes (register_pytree_node_class, register_dataclass, and with keys).
"""

from __future__ import annotations

import jax.tree_util as jtu
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stages.s01_pytrees as tu

# Hypothesis warns when it prints the (large, recursive) tree strategy; that is harmless here.
pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")
SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _paths(lib, tree, is_leaf=None):
    return [(lib.keystr(path), repr(path)) for path, _ in
            lib.tree_flatten_with_path(tree, is_leaf=is_leaf)[0]]


@SETTINGS
@given(data=st.data())
def test_flatten_equals_jax(trees, data):
    tree = data.draw(trees)
    leaves, treedef = tu.tree_flatten(tree)
    jax_leaves, jax_treedef = jtu.tree_flatten(tree)
    assert [id(x) for x in leaves] == [id(x) for x in jax_leaves]
    assert str(treedef) == str(jax_treedef)
    assert (treedef.num_leaves, treedef.num_nodes) == (
        jax_treedef.num_leaves, jax_treedef.num_nodes)
    assert len(treedef.children()) == len(jax_treedef.children())


@SETTINGS
@given(data=st.data())
def test_unflatten_round_trip_rebuilds_an_equal_tree(trees, data):
    tree = data.draw(trees)
    leaves, treedef = tu.tree_flatten(tree)
    rebuilt = tu.tree_unflatten(treedef, leaves)
    assert repr(rebuilt) == repr(jtu.tree_unflatten(jtu.tree_structure(tree), leaves))
    assert rebuilt == tree
    assert tu.tree_structure(rebuilt) == treedef
    assert hash(tu.tree_structure(rebuilt)) == hash(treedef)


@SETTINGS
@given(data=st.data())
def test_key_paths_equal_jax(trees, data):
    tree = data.draw(trees)
    assert _paths(tu, tree) == _paths(jtu, tree)
    with_path, treedef = tu.tree_flatten_with_path(tree)
    assert [leaf for _, leaf in with_path] == tu.tree_leaves(tree)
    assert treedef == tu.tree_structure(tree)


@SETTINGS
@given(data=st.data())
def test_tree_map_equals_jax(trees, data):
    tree = data.draw(trees)
    f = lambda x: [x]
    assert repr(tu.tree_map(f, tree)) == repr(jtu.tree_map(f, tree))
    g = lambda x, y: (x, y)
    assert repr(tu.tree_map(g, tree, tree)) == repr(jtu.tree_map(g, tree, tree))


@SETTINGS
@given(data=st.data())
def test_random_is_leaf_predicates_equal_jax(trees, leaf_predicates, data):
    tree, is_leaf = data.draw(trees), data.draw(leaf_predicates)
    leaves, treedef = tu.tree_flatten(tree, is_leaf=is_leaf)
    jax_leaves, jax_treedef = jtu.tree_flatten(tree, is_leaf=is_leaf)
    assert [id(x) for x in leaves] == [id(x) for x in jax_leaves]
    assert str(treedef) == str(jax_treedef)
    assert _paths(tu, tree, is_leaf) == _paths(jtu, tree, is_leaf)


@SETTINGS
@given(data=st.data())
def test_a_cut_tree_is_a_prefix_of_the_whole(trees, leaf_predicates, data):
    # Cutting a tree at is_leaf gives a prefix: tree_map pairs each cut leaf with its subtree.
    tree, is_leaf = data.draw(trees), data.draw(leaf_predicates)
    treedef = tu.tree_structure(tree, is_leaf=is_leaf)
    prefix = tu.tree_unflatten(treedef, range(treedef.num_leaves))
    jax_prefix = jtu.tree_unflatten(jtu.tree_structure(tree, is_leaf=is_leaf),
                                    range(treedef.num_leaves))
    pair = lambda i, sub: (i, sub)
    assert repr(tu.tree_map(pair, prefix, tree)) == repr(jtu.tree_map(pair, jax_prefix, tree))
    assert treedef.flatten_up_to(tree) == tu.tree_leaves(tree, is_leaf=is_leaf)
