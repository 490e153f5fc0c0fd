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
        for p in partitions:
            if not (p is None or isinstance(p, str) or
                    (isinstance(p, tuple) and all(isinstance(a, str) for a in p))):
                raise TypeError(f"PartitionSpec entries must be None, an axis name or a tuple "
                                f"of axis names, got {p!r}")
        return super().__new__(cls, partitions)

    @property
    def partitions(self) -> tuple[Any, ...]:
        return tuple(self)

    def __repr__(self) -> str:
        return "P" + tuple.__repr__(self)

    def axes_of(self, dim: int) -> tuple[str, ...]:
        """The mesh axes dimension `dim` is split along, major first (none past the end)."""
        entry = self[dim] if dim < len(self) else None
        if entry is None:
            return ()
        return (entry,) if isinstance(entry, str) else tuple(entry)

    def used_axes(self) -> list[str]:
        return [a for d in range(len(self)) for a in self.axes_of(d)]


P = PartitionSpec
