"""jax.tree_util as the system sees it: stage 1's module under the name learners import."""

from stages.s01_pytrees import (
    DictKey,
    GetAttrKey,
    Partial,
    PyTreeDef,
    SequenceKey,
    all_leaves,
    keystr,
    register_dataclass,
    register_pytree_node,
    register_pytree_node_class,
    tree_all,
    tree_flatten,
    tree_flatten_with_path,
    tree_leaves,
    tree_leaves_with_path,
    tree_map,
    tree_map_with_path,
    tree_reduce,
    tree_structure,
    tree_transpose,
    tree_unflatten,
)

__all__ = ["DictKey", "GetAttrKey", "Partial", "PyTreeDef", "SequenceKey", "all_leaves",
           "keystr", "register_dataclass", "register_pytree_node", "register_pytree_node_class",
           "tree_all", "tree_flatten", "tree_flatten_with_path", "tree_leaves",
           "tree_leaves_with_path", "tree_map", "tree_map_with_path", "tree_reduce",
           "tree_structure", "tree_transpose", "tree_unflatten"]
