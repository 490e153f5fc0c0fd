"""Key paths: the leaves of a tree, each with the path of keys that reaches it.

JAX: jax/_src/tree_util.py (tree_flatten_with_path, tree_leaves_with_path, tree_map_with_path),
kept apart here from tree_util.py's tree_map, whose exercise this module would answer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .registration import default_registry
from .tree_util import KeyPath, structure_error
from .treedef import PyTreeDef


def tree_flatten_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                           is_leaf_takes_path: bool = False
                           ) -> tuple[list[tuple[KeyPath, Any]], PyTreeDef]:
    """Like tree_flatten, but each leaf comes with its key path: `[(path, leaf), ...]`."""
    predicate = is_leaf
    if is_leaf is not None and not is_leaf_takes_path:
        predicate = lambda _path, x: is_leaf(x)
    return default_registry.flatten_with_path(tree, predicate)


def tree_leaves_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                          is_leaf_takes_path: bool = False) -> list[tuple[KeyPath, Any]]:
    """The `(path, leaf)` pairs of `tree`."""
    return tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


def tree_map_with_path(f: Callable[..., Any], tree: Any, *rest: Any,
                       is_leaf: Callable[..., bool] | None = None,
                       is_leaf_takes_path: bool = False) -> Any:
    """Like tree_map, but `f` gets each leaf's key path first: `f(path, x, *ys)`."""
    path_leaves, treedef = tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)
    per_tree = [[p for p, _ in path_leaves], [x for _, x in path_leaves]]
    for other in rest:
        try:
            per_tree.append(treedef.flatten_up_to(other))
        except Exception as err:
            raise structure_error(tree, other, is_leaf, "tree_map_with_path tree", err) from None
    return treedef.unflatten(f(*xs) for xs in zip(*per_tree, strict=True))
