"""Where two pytrees differ, path by path: what error messages about mismatched trees list.

JAX: tree_util.equality_errors and equality_errors_pytreedef. jit's cache-miss explanations,
vjp's cotangent check, cond's branch check and the loops' carry check all phrase their
differences with these, as JAX's do.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from .tree_util import flatten_one_level_with_keys, tree_structure, tree_unflatten
from .treedef import PyTreeDef


def equality_errors(tree1: Any, tree2: Any, is_leaf: Callable[[Any], bool] | None = None
                    ) -> Iterator[tuple[tuple, str, str, str]]:
    """Where two pytrees differ: (key path, what tree1 has, what tree2 has, why they differ).

    JAX: tree_util.equality_errors. Leaves that are both leaves never differ here: this is
    about structure only. `is_leaf` decides only what counts as a leaf.
    """
    yield from _equality_errors((), tree1, tree2, is_leaf)


def _equality_errors(path: tuple, tree1: Any, tree2: Any, is_leaf: Callable[[Any], bool] | None
                     ) -> Iterator[tuple[tuple, str, str, str]]:
    def strict_leaf(t: Any) -> bool:
        treedef = tree_structure(t, is_leaf)
        return treedef.num_nodes == 1 and treedef.num_leaves == 1

    if strict_leaf(tree1) and strict_leaf(tree2):
        return
    if type(tree1) is not type(tree2):
        yield path, str(type(tree1)), str(type(tree2)), "their Python types differ"
        return
    if isinstance(tree1, (list, tuple)) and len(tree1) != len(tree2):
        yield (path, f"{type(tree1).__name__} of length {len(tree1)}",
               f"{type(tree2).__name__} of length {len(tree2)}", "the lengths do not match")
        return
    kids1, meta1 = flatten_one_level_with_keys(tree1)
    kids2, meta2 = flatten_one_level_with_keys(tree2)
    kids1, kids2 = list(kids1), list(kids2)
    if len(kids1) != len(kids2):
        try:  # JAX names the keys that differ only when each has a hashable `.key`
            diff = " ".join(repr(k.key) for k in {k for k, _ in kids1} ^ {k for k, _ in kids2})
        except (AttributeError, TypeError):
            diff = ""

        def children(t: Any, n: int) -> str:
            return f"{type(t)} with {n} child{'ren' if n > 1 else ''}"

        why = "the numbers of children do not match"
        if diff:
            why += f", with the symmetric difference of key sets: {{{diff}}}"
        yield path, children(tree1, len(kids1)), children(tree2, len(kids2)), why
        return
    if meta1 != meta2:
        yield (path, f"{type(tree1)} with pytree metadata {meta1}",
               f"{type(tree2)} with pytree metadata {meta2}",
               "the pytree node metadata does not match")
        return
    for (key, c1), (_, c2) in zip(kids1, kids2, strict=True):
        yield from _equality_errors((*path, key), c1, c2, is_leaf)


class _LeafMeta(type):
    def __repr__(cls) -> str:
        return "pytree leaf"  # what a leaf's type prints as in a tree difference


_LEAF = _LeafMeta("Leaf", (), {})()


def equality_errors_pytreedef(tree1: PyTreeDef, tree2: PyTreeDef
                              ) -> Iterator[tuple[tuple, str, str, str]]:
    """equality_errors of two treedefs, each filled with a stand-in leaf whose type prints as
    JAX's words, "pytree leaf"."""
    return equality_errors(tree_unflatten(tree1, [_LEAF] * tree1.num_leaves),
                           tree_unflatten(tree2, [_LEAF] * tree2.num_leaves))
