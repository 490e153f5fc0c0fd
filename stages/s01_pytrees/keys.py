"""Key-path entries: how a leaf's position inside its parent is named.

JAX: SequenceKey, DictKey, GetAttrKey, FlattenedIndexKey in jaxlib's pytree.cc, re-exported by
jax.tree_util. Frozen and hashable; `str` is the key-path text, `repr` names the field. An
index is stored as an int, as jaxlib's constructors convert it.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Hashable
from typing import Any


def _index(owner: str, field: str, value: Any) -> int:
    """An int field as jaxlib stores it (True is 1, np.int64(3) is 3); anything else refused."""
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{owner}'s {field} must be an int, got {value!r}") from None


# --8<-- [start:keys]
@dataclasses.dataclass(frozen=True)
class SequenceKey:
    """The position of a child in a tuple or list: prints as `[0]`."""

    idx: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "idx", _index("SequenceKey", "idx", self.idx))

    def __hash__(self) -> int:  # the kind of key counts: [0] is not <flat index 0>
        return hash(("SequenceKey", self.idx))

    def __str__(self) -> str:
        return f"[{self.idx!r}]"


@dataclasses.dataclass(frozen=True)
class DictKey:
    """The key of a child in a dict, OrderedDict or defaultdict: prints as `['a']`."""

    key: Hashable

    def __hash__(self) -> int:  # the kind of key counts: [0] is not <flat index 0>
        return hash(("DictKey", self.key))

    def __str__(self) -> str:
        return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    """The attribute holding a child (namedtuple or dataclass field): prints as `.x`."""

    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise TypeError(f"GetAttrKey's name must be a str, got {self.name!r}")

    def __hash__(self) -> int:  # the kind of key counts: [0] is not <flat index 0>
        return hash(("GetAttrKey", self.name))

    def __str__(self) -> str:
        return f".{self.name}"


@dataclasses.dataclass(frozen=True)
class FlattenedIndexKey:
    """The index of a child of a custom node registered without keys."""

    key: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", _index("FlattenedIndexKey", "key", self.key))

    def __hash__(self) -> int:  # the kind of key counts: [0] is not <flat index 0>
        return hash(("FlattenedIndexKey", self.key))

    def __str__(self) -> str:
        return f"[<flat index {self.key}>]"
# --8<-- [end:keys]
