"""Pytrees: how every transform takes its arguments apart into leaves and puts them back.

JAX: jax/_src/tree_util.py (public as `jax.tree_util`). The core it calls, jaxlib's C++
`pytree.cc`, is `pytree.py` here. Names, signatures, defaults and error texts follow JAX.
"""

from __future__ import annotations

import difflib
import functools
import textwrap
from collections.abc import Callable, Hashable, Iterable
from typing import Any, TypeVar

from .keys import DictKey, FlattenedIndexKey, GetAttrKey, SequenceKey
from .pytree import tuple_treedef
from .registration import default_registry
from .treedef import PyTreeDef

T = TypeVar("T")
Typ = TypeVar("Typ", bound=type)
Leaf = Any
KeyEntry = Any  # SequenceKey, DictKey, GetAttrKey, FlattenedIndexKey, or a user's own key
KeyPath = tuple[KeyEntry, ...]


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None
                 ) -> tuple[list[Leaf], PyTreeDef]:
    """The leaves of `tree` (dict children in sorted key order) and its treedef."""
    return default_registry.flatten(tree, is_leaf)


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Leaf]) -> Any:
    """Rebuild a pytree of structure `treedef` from `leaves`."""
    return treedef.unflatten(leaves)


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[Leaf]:
    """The leaves of `tree`, in flatten order."""
    return default_registry.flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    """The treedef of `tree`."""
    return default_registry.flatten(tree, is_leaf)[1]


def treedef_tuple(treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
    """The treedef of a tuple whose children have the given treedefs."""
    return tuple_treedef(default_registry, treedefs)


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
    """The treedefs of the root's children."""
    return treedef.children()


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    """True for a one-node treedef: a leaf, but also `None` or `()` (JAX checks only that)."""
    return treedef.num_nodes == 1


def _is_strict_leaf(treedef: PyTreeDef) -> bool:
    return treedef.num_nodes == 1 and treedef.num_leaves == 1


def is_tree_node(typ: type) -> bool:
    """True if `typ` is a node type: registered (built in or custom) or a namedtuple class."""
    return default_registry.is_node(typ)


def all_leaves(iterable: Iterable[Any], is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """True if no element of `iterable` is a pytree node."""
    if is_leaf is None:
        return all(default_registry.lookup(x) is None for x in iterable)
    items = list(iterable)
    leaves = tree_leaves(items, is_leaf)
    return len(leaves) == len(items) and all(a is b for a, b in zip(items, leaves, strict=True))


# --8<-- [start:tree-map]
def tree_map(f: Callable[..., Any], tree: Any, *rest: Any,
             is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Apply `f` leafwise; `tree`'s structure must be a prefix of each tree in `rest`."""
    # EXERCISE 1.5 (tree-map): flatten tree, split each of rest at its leaves, map, unflatten
    leaves, treedef = tree_flatten(tree, is_leaf)
    per_tree = [leaves]
    for other in rest:
        try:
            per_tree.append(treedef.flatten_up_to(other))
        except Exception as err:  # explain the mismatch by key path, as JAX does
            raise structure_error(tree, other, is_leaf, "tree_map tree", err) from None
    return treedef.unflatten(f(*xs) for xs in zip(*per_tree, strict=True))
    # END EXERCISE
# --8<-- [end:tree-map]


def structure_error(prefix: Any, full: Any, is_leaf: Callable | None, name: str,
                     original: Exception) -> Exception:
    """The first key-path error between the two trees, else the original exception."""
    make_error = next(_prefix_error((), prefix, full, is_leaf), None)
    return original if make_error is None else make_error(name)


def tree_transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None,
                   pytree_to_transpose: Any) -> Any:
    """Turn an outer-of-inner pytree into an inner-of-outer one."""
    flat, treedef = tree_flatten(pytree_to_transpose)
    if inner_treedef is None:
        inner_treedef = tree_structure(outer_treedef.flatten_up_to(pytree_to_transpose)[0])
    inner_size, outer_size = inner_treedef.num_leaves, outer_treedef.num_leaves
    if treedef.num_leaves != inner_size * outer_size:
        expected = outer_treedef.compose(inner_treedef)
        raise TypeError(f"Mismatch\n{treedef}\n != \n{expected}")
    leaves = iter(flat)
    rows = [[next(leaves) for _ in range(inner_size)] for _ in range(outer_size)]
    return inner_treedef.unflatten(outer_treedef.unflatten(col) for col in zip(*rows, strict=True))


class Unspecified:
    """The default of tree_reduce's initializer: no initial value."""


def tree_reduce(function: Callable[[T, Any], T], tree: Any,
                initializer: T | Unspecified = Unspecified(),  # noqa: B008 -- JAX's default
                is_leaf: Callable[[Any], bool] | None = None) -> T:
    """functools.reduce over the leaves of `tree`."""
    if isinstance(initializer, Unspecified):
        return functools.reduce(function, tree_leaves(tree, is_leaf=is_leaf))
    return functools.reduce(function, tree_leaves(tree, is_leaf=is_leaf), initializer)


def tree_reduce_associative(operation: Callable[[T, T], T], tree: Any, *,
                            identity: T | Unspecified = Unspecified(),  # noqa: B008 -- as JAX
                            is_leaf: Callable[[Any], bool] | None = None) -> T:
    """Combine the leaves pairwise, as a balanced tree: `operation` must be associative."""
    leaves = tree_leaves(tree, is_leaf=is_leaf)
    if not leaves:
        if isinstance(identity, Unspecified):
            raise TypeError("Must specify identity for parallel reduction of empty sequence.")
        return identity

    def combine(lo: int, hi: int) -> T:  # leaves[lo:hi], halved until one is left
        if hi - lo == 1:
            return leaves[lo]
        mid = lo + (hi - lo) // 2
        return operation(combine(lo, mid), combine(mid, hi))

    return combine(0, len(leaves))


def tree_all(tree: Any, *, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """True if every leaf is truthy."""
    return all(tree_leaves(tree, is_leaf))


def flatten_one_level(tree: Any) -> tuple[Iterable[Any], Hashable]:
    """`(children, node_data)` of the root node of `tree`."""
    out = default_registry.flatten_one_level(tree)
    if out is None:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    return out


def flatten_one_level_with_keys(tree: Any) -> tuple[Iterable[tuple[KeyEntry, Any]], Hashable]:
    """`((key, child), ...), node_data` of the root node of `tree`."""
    out = default_registry.flatten_one_level_with_keys(tree)
    if out is None:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    return out


def broadcast_prefix(prefix_tree: Any, full_tree: Any,
                     is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
    """Each leaf of `prefix_tree` repeated once per leaf of the subtree of `full_tree` under it."""
    result: list[Any] = []

    def add_leaves(x: Any, subtree: Any) -> None:
        result.extend([x] * tree_structure(subtree).num_leaves)

    try:
        tree_map(add_leaves, prefix_tree, full_tree, is_leaf=is_leaf)
    except ValueError:
        make_error, *_ = prefix_errors(prefix_tree, full_tree)
        raise make_error("broadcast_prefix prefix_tree") from None
    return result


def tree_broadcast(prefix_tree: Any, full_tree: Any,
                   is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """`prefix_tree` grown to `full_tree`'s structure: each of its leaves copied to every leaf
    of the subtree of `full_tree` under it."""
    leaves = broadcast_prefix(prefix_tree, full_tree, is_leaf=is_leaf)
    return tree_structure(full_tree).unflatten(leaves)


# --8<-- [start:keystr]
def keystr(keys: KeyPath, *, simple: bool = False, separator: str = "") -> str:
    """A key path as text: `['a'][0].x`, or with simple=True and separator='/', `a/0/x`."""
    # EXERCISE 1.1 (keystr): join each key's text; simple=True uses the bare key, index or name
    if not simple:
        return separator.join(str(key) for key in keys)
    parts = []
    for key in keys:
        match key:
            case SequenceKey(idx=inner) | DictKey(key=inner) | FlattenedIndexKey(key=inner):
                parts.append(str(inner))
            case GetAttrKey(name=inner):
                parts.append(inner)
            case _:
                parts.append(str(key))
    return separator.join(parts)
    # END EXERCISE
# --8<-- [end:keystr]


def _child_keys(tree: Any) -> KeyPath:
    return tuple(key for key, _ in flatten_one_level_with_keys(tree)[0])


def prefix_errors(prefix_tree: Any, full_tree: Any,
                  is_leaf: Callable[[Any], bool] | None = None
                  ) -> list[Callable[[str], ValueError]]:
    """Every place `prefix_tree` fails to be a prefix of `full_tree`, as error makers."""
    return list(_prefix_error((), prefix_tree, full_tree, is_leaf))


# --8<-- [start:prefix-error]
def _prefix_error(key_path: KeyPath, prefix_tree: Any, full_tree: Any,
                  is_leaf: Callable[[Any], bool] | None = None
                  ) -> Iterable[Callable[[str], ValueError]]:
    """Yield, for each subtree where the prefix fails, a function of the tree's name that
    makes the error. Same checks and texts as JAX's; `is_leaf` is passed down the recursion."""
    if _is_strict_leaf(tree_structure(prefix_tree, is_leaf)):
        return  # a leaf is a prefix of anything
    where = keystr(key_path)
    if type(prefix_tree) is not type(full_tree):
        yield lambda name: ValueError(
            "pytree structure error: different types at key path\n"
            f"    {name}{where}\n"
            f"At that key path, the prefix pytree {name} has a subtree of type\n"
            f"    {type(prefix_tree)}\n"
            "but at the same key path the full pytree has a subtree of different type\n"
            f"    {type(full_tree)}.")
        return
    prefix_children, prefix_meta = flatten_one_level(prefix_tree)
    full_children, full_meta = flatten_one_level(full_tree)
    prefix_children, full_children = tuple(prefix_children), tuple(full_children)
    prefix_keys, full_keys = _child_keys(prefix_tree), _child_keys(full_tree)
    if isinstance(prefix_tree, (list, tuple)):
        if len(prefix_tree) != len(full_tree):
            kind = type(prefix_tree).__name__
            yield lambda name: ValueError(
                f"pytree structure error: different lengths of {kind} at key path\n"
                f"    {name}{where}\n"
                f"At that key path, the prefix pytree {name} has a subtree of type {kind} of "
                f"length {len(prefix_tree)}, but the full pytree has a subtree of the same type "
                f"but of length {len(full_tree)}.")
            return
    elif len(prefix_children) != len(full_children):
        yield lambda name: _children_count_error(name, where, prefix_tree, prefix_keys, full_keys)
        return
    if prefix_meta != full_meta:
        yield lambda name: _metadata_error(name, where, prefix_tree, prefix_meta, full_meta)
        return
    for key, prefix_child, full_child in zip(prefix_keys, prefix_children, full_children,
                                             strict=True):
        yield from _prefix_error((*key_path, key), prefix_child, full_child, is_leaf)
# --8<-- [end:prefix-error]


def _children_count_error(name: str, where: str, prefix_tree: Any, prefix_keys: KeyPath,
                          full_keys: KeyPath) -> ValueError:
    def names(keys: Iterable[KeyEntry]) -> str:
        return " ".join(keystr((k,), simple=True) for k in keys)

    try:
        # JAX prints a set here (in hash order); ours keeps the keys in order of appearance.
        full_set, prefix_set = set(full_keys), set(prefix_keys)
        diff = [k for k in prefix_keys if k not in full_set]
        diff += [k for k in full_keys if k not in prefix_set]
        diff_text = f"so the symmetric difference on key sets is\n    {names(diff)}"
    except TypeError:  # unhashable keys
        diff_text = ""
    return ValueError(
        "pytree structure error: different numbers of pytree children at key path\n"
        f"    {name}{where}\n"
        f"At that key path, the prefix pytree {name} has a subtree of type\n"
        f"    {type(prefix_tree)}\n"
        f"with {len(prefix_keys)} child keys\n"
        f"    {names(prefix_keys)}\n"
        "but at the same key path the full pytree has a subtree of the same type but with "
        f"{len(full_keys)} child keys\n"
        f"    {names(full_keys)}\n" + diff_text)


def _metadata_error(name: str, where: str, prefix_tree: Any, prefix_meta: Any,
                    full_meta: Any) -> ValueError:
    prefix_text, full_text = str(prefix_meta), str(full_meta)
    diff = "\n".join(difflib.ndiff(prefix_text.splitlines(), full_text.splitlines()))
    return ValueError(
        "pytree structure error: different pytree metadata at key path\n"
        f"    {name}{where}\n"
        f"At that key path, the prefix pytree {name} has a subtree of type\n"
        f"    {type(prefix_tree)}\n"
        "with metadata\n"
        f"    {prefix_text}\n"
        "but at the same key path the full pytree has a subtree of the same type but with "
        "metadata\n"
        f"    {full_text}\n"
        "so the diff in the metadata at these pytree nodes is\n"
        f"{textwrap.indent(diff, prefix='    ')}")
