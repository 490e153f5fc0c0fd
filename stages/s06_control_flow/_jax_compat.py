"""What this stage does only so that its error messages match JAX 0.10.2's exactly.

None of it is part of the mechanism: each function is named where it is used, so a reader can
skip it. The tests compare our error messages with JAX's character for character.
"""

from __future__ import annotations

from collections.abc import Iterator

from stages.s01_pytrees import PyTreeDef, tree_unflatten

from .util import equality_errors


def equality_errors_pytreedef(tree1: PyTreeDef, tree2: PyTreeDef
                              ) -> Iterator[tuple[tuple, str, str, str]]:
    """equality_errors of two treedefs, on a stand-in leaf whose *type* prints as JAX's words,
    "pytree leaf" (equality_errors prints a leaf's type; JAX: tree_util's function of the same
    name builds this metaclass too, with a TODO to avoid it)."""
    leaf = type("LeafMeta", (type,), dict(__repr__=lambda _: "pytree leaf"))("Leaf", (), {})()
    return equality_errors(tree_unflatten(tree1, [leaf] * tree1.num_leaves),
                           tree_unflatten(tree2, [leaf] * tree2.num_leaves))
