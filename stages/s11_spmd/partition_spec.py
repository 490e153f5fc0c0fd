"""A PartitionSpec: for each array dimension, the mesh axes it is split along.

JAX: jax/_src/partition_spec.py. `P('data', None)` splits dimension 0 across the mesh axis
"data" and keeps dimension 1 whole; `P(('data', 'model'))` splits dimension 0 across both axes
at once (data-major); dimensions past the spec's length are not split. torch_xla writes the
same thing as a tuple of axis names or indices (`mark_sharding(t, mesh, ('data', None))`).
"""

from __future__ import annotations

from typing import Any


class PartitionSpec(tuple):
    """A tuple of entries, one per leading array dimension: None, an axis name, or a tuple of
    axis names (JAX: jax.sharding.PartitionSpec, usually imported as P)."""

    def __new__(cls, *partitions: Any) -> PartitionSpec:
        return super().__new__(cls, map(_canonicalize_partition, partitions))

    @property
    def partitions(self) -> tuple[Any, ...]:
        return tuple(self)

    def __repr__(self) -> str:
        return "P" + tuple.__repr__(self)

    def __eq__(self, other: object) -> bool:  # a spec equals specs only, as JAX's (no tuple)
        return type(other) is type(self) and tuple.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = tuple.__hash__

    def __add__(self, other: Any) -> PartitionSpec:  # P('x') + P('y') is P('x', 'y'), as JAX's
        if not isinstance(other, tuple):
            raise NotImplementedError  # JAX's answer to a spec plus anything else
        return PartitionSpec(*self, *other)

    def __radd__(self, other: Any) -> PartitionSpec:
        if not isinstance(other, tuple):
            raise NotImplementedError
        return PartitionSpec(*other, *self)

    def __getnewargs__(self) -> tuple[Any, ...]:  # copy and pickle: the entries, not one tuple
        return tuple(self)

    def axes_of(self, dim: int) -> tuple[str, ...]:
        """The mesh axes dimension `dim` is split along, major first (none past the end)."""
        entry = self[dim] if dim < len(self) else None
        if entry is None:
            return ()
        return entry if isinstance(entry, tuple) else (entry,)

    def used_axes(self) -> list[str]:
        return [a for d in range(len(self)) for a in self.axes_of(d)]


def _canonicalize_partition(p: Any) -> Any:
    """JAX's canonical entry: a list is a tuple, () is None, ('x',) is 'x' (any hashable)."""
    if not isinstance(p, (tuple, list)):
        hash(p)  # JAX's specs are interned: an unhashable entry fails here
        return p
    for a in p:
        if isinstance(a, (tuple, list)):
            raise ValueError("A tuple inside PartitionSpec cannot contain a nested tuple. Got "
                             f"partition: {p!r} and the nested tuple: {a!r}")
    return None if not p else p[0] if len(p) == 1 else tuple(p)


P = PartitionSpec
