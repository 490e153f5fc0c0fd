"""jax.tree: the short names (tree.map, tree.leaves, ...) for stage 1's functions, and `static`,
a dataclass field that register_dataclass keeps out of the leaves."""

import dataclasses
from typing import Any

from stages.s01_pytrees.key_paths import (
    tree_flatten_with_path as flatten_with_path,
)
from stages.s01_pytrees.key_paths import (
    tree_leaves_with_path as leaves_with_path,
)
from stages.s01_pytrees.key_paths import (
    tree_map_with_path as map_with_path,
)
from stages.s01_pytrees.tree_util import (
    tree_all as all,  # noqa: A004
)
from stages.s01_pytrees.tree_util import (
    tree_broadcast as broadcast,
)
from stages.s01_pytrees.tree_util import (
    tree_flatten as flatten,
)
from stages.s01_pytrees.tree_util import (
    tree_leaves as leaves,
)
from stages.s01_pytrees.tree_util import (
    tree_map as map,  # noqa: A004
)
from stages.s01_pytrees.tree_util import (
    tree_reduce as reduce,
)
from stages.s01_pytrees.tree_util import (
    tree_reduce_associative as reduce_associative,
)
from stages.s01_pytrees.tree_util import (
    tree_structure as structure,
)
from stages.s01_pytrees.tree_util import (
    tree_transpose as transpose,
)
from stages.s01_pytrees.tree_util import (
    tree_unflatten as unflatten,
)

__all__ = ["all", "broadcast", "flatten", "flatten_with_path", "leaves", "leaves_with_path", "map",
           "map_with_path", "reduce", "reduce_associative", "static", "structure", "transpose",
           "unflatten"]


def static(**kwargs: Any) -> Any:
    """`dataclasses.field(**kwargs)` marked `metadata["static"] = True` (a metadata given may
    override it, as in JAX): register_dataclass puts the field in the treedef, not the leaves."""
    metadata = {"static": True, **(kwargs.pop("metadata", {}) or {})}
    return dataclasses.field(metadata=metadata, **kwargs)
