"""tree_broadcast against jax.tree_util.tree_broadcast: the trees, and the error text."""

from __future__ import annotations

import jax.tree_util as jtu
import pytest

import stages.s01_pytrees as ours

CASES = [
    ([1, {"a": 2}], [(1, 2), {"a": [3, 4]}]),
    (1, {"a": None, "b": [1, 2]}),
    ({"x": 0, "y": (1, 2)}, {"x": [[5], 6], "y": ([7], {"z": 8})}),
    (None, None),
]


@pytest.mark.parametrize(("prefix", "full"), CASES, ids=range(len(CASES)))
def test_tree_broadcast_matches_jax(prefix, full):
    assert ours.tree_broadcast(prefix, full) == jtu.tree_broadcast(prefix, full)


def test_tree_broadcast_with_is_leaf_matches_jax():
    prefix, full = [(1, 2), 3], [[(4,), 5], [6, 7]]
    is_leaf = lambda x: isinstance(x, tuple)  # noqa: E731
    assert ours.tree_broadcast(prefix, full, is_leaf=is_leaf) == \
        jtu.tree_broadcast(prefix, full, is_leaf=is_leaf)


@pytest.mark.parametrize(("prefix", "full"), [([1, 2], (1, 2)), ({"a": 1}, {"b": 2}),
                                              ([1, 2, 3], [1, 2])])
def test_a_prefix_that_does_not_fit_fails_as_in_jax(prefix, full):
    with pytest.raises(ValueError) as theirs:
        jtu.tree_broadcast(prefix, full)
    with pytest.raises(ValueError) as mine:
        ours.tree_broadcast(prefix, full)
    assert str(mine.value) == str(theirs.value)
