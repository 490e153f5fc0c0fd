"""Stage 1: pytrees. Flatten any nest of containers into leaves plus a treedef, and back.

Reading path (the lesson, in order):
  1. pytree.py        the registry and flatten: a walk that collects leaves and node records
  2. treedef.py       PyTreeDef: unflatten, flatten_up_to, equality and printing
  3. tree_util.py     the public API: tree_flatten, tree_map, key paths, prefix errors
  4. keys.py          the keys of a key path: SequenceKey, DictKey, GetAttrKey, ...
  5. registration.py  how a type becomes a node: register_pytree_node, register_dataclass

Beside it:
  key_paths.py        tree_flatten_with_path and tree_map_with_path: each leaf with its path
  equality.py         where two pytrees differ, path by path: what mismatch errors list
  partial.py          Partial: a functools.partial whose arguments are the leaves

JAX: jax.tree_util (jax/_src/tree_util.py over jaxlib's C++ pytree.cc).
"""

from .equality import equality_errors, equality_errors_pytreedef
from .key_paths import tree_flatten_with_path, tree_leaves_with_path, tree_map_with_path
from .keys import DictKey, FlattenedIndexKey, GetAttrKey, SequenceKey
from .partial import Partial
from .pytree import PyTreeRegistry
from .registration import (
    default_registry,
    none_leaf_registry,
    register_dataclass,
    register_pytree_node,
    register_pytree_node_class,
    register_pytree_with_keys,
    register_pytree_with_keys_class,
    register_static,
)
from .tree_util import (
    KeyEntry,
    KeyPath,
    all_leaves,
    broadcast_prefix,
    flatten_one_level,
    flatten_one_level_with_keys,
    is_tree_node,
    keystr,
    prefix_errors,
    tree_all,
    tree_broadcast,
    tree_flatten,
    tree_leaves,
    tree_map,
    tree_reduce,
    tree_reduce_associative,
    tree_structure,
    tree_transpose,
    tree_unflatten,
    treedef_children,
    treedef_is_leaf,
    treedef_tuple,
)
from .treedef import PyTreeDef, PyTreeKind

__all__ = [
    "DictKey",
    "FlattenedIndexKey",
    "GetAttrKey",
    "KeyEntry",
    "KeyPath",
    "Partial",
    "PyTreeDef",
    "PyTreeKind",
    "PyTreeRegistry",
    "SequenceKey",
    "all_leaves",
    "broadcast_prefix",
    "default_registry",
    "equality_errors",
    "equality_errors_pytreedef",
    "flatten_one_level",
    "flatten_one_level_with_keys",
    "is_tree_node",
    "keystr",
    "none_leaf_registry",
    "prefix_errors",
    "register_dataclass",
    "register_pytree_node",
    "register_pytree_node_class",
    "register_pytree_with_keys",
    "register_pytree_with_keys_class",
    "register_static",
    "tree_all",
    "tree_broadcast",
    "tree_flatten",
    "tree_flatten_with_path",
    "tree_leaves",
    "tree_leaves_with_path",
    "tree_map",
    "tree_map_with_path",
    "tree_reduce",
    "tree_reduce_associative",
    "tree_structure",
    "tree_transpose",
    "tree_unflatten",
    "treedef_children",
    "treedef_is_leaf",
    "treedef_tuple",
]
