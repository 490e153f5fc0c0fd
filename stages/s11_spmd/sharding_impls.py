"""Shardings: which device holds which block of an array.

JAX: jax/_src/sharding.py (the `Sharding` interface), sharding_impls.py
(`SingleDeviceSharding`), named_sharding.py (`NamedSharding`, `named_sharding_to_xla_hlo_sharding`,
`check_pspec`). A NamedSharding is a mesh and a PartitionSpec; from those two follow the shape
of each device's block (`shard_shape`), the slice of the global array each device holds
(`devices_indices_map`), and the annotation the compiler reads (`_to_xla_hlo_sharding`, the
GSPMD form; `_to_sdy_sharding`, the Shardy form).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

from stages.s07_caches import sharding_impls as s07_sharding_impls
from stages.s07_caches.xla_bridge import Device

from .hlo_sharding import HloSharding
from .mesh import Mesh, show_axes
from .partition_spec import PartitionSpec
from .partition_spec import PartitionSpec as P

Index = tuple[slice, ...]


class IndivisibleError(ValueError):
    """A dimension that its split count does not divide (JAX: sharding.IndivisibleError)."""


class DuplicateSpecError(Exception):
    """A mesh axis used twice in one spec (JAX: named_sharding.DuplicateSpecError)."""


class Sharding:
    """What every sharding answers (JAX: jax.sharding.Sharding). One process holds every device
    of its meshes here, so every sharding is fully addressable, in device memory."""

    is_fully_addressable, memory_kind = True, "device"

    @property
    def addressable_devices(self) -> set[Device]:
        return self.device_set

    @property
    def device_set(self) -> set[Device]:
        raise NotImplementedError

    def devices_indices_map(self, global_shape: tuple[int, ...]) -> dict[Device, Index]:
        raise NotImplementedError

    def _to_xla_hlo_sharding(self, num_dimensions: int) -> HloSharding:
        raise NotImplementedError

    def shard_shape(self, global_shape: tuple[int, ...]) -> tuple[int, ...]:
        raise NotImplementedError

    @property
    def is_fully_replicated(self) -> bool:
        raise NotImplementedError

    @property
    def num_devices(self) -> int:
        return len(self.device_set)

    def is_equivalent_to(self, other: Sharding, ndim: int) -> bool:
        """The same devices holding the same blocks, however the two are written."""
        return bool(self._device_assignment == other._device_assignment and
                    self._to_xla_hlo_sharding(ndim).equivalent(other._to_xla_hlo_sharding(ndim)))


class SingleDeviceSharding(s07_sharding_impls.SingleDeviceSharding, Sharding):
    """Stage 7's whole array on one device, with its HLO form: replicated."""

    def _to_xla_hlo_sharding(self, num_dimensions: int) -> HloSharding:
        return HloSharding.replicate()


class NamedSharding(Sharding):
    """A mesh and a PartitionSpec (JAX: jax.sharding.NamedSharding)."""

    def __init__(self, mesh: Mesh, spec: PartitionSpec):
        if not isinstance(spec, PartitionSpec):
            raise TypeError("NamedSharding's spec must be a PartitionSpec, got "
                            f"{type(spec).__name__}")
        self.mesh, self.spec = mesh, spec
        check_pspec(mesh, spec)

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, NamedSharding) and self.spec == other.spec
                                 and self.mesh == other.mesh)

    def __hash__(self) -> int:
        return hash((self.mesh, self.spec))

    def __repr__(self) -> str:
        return f"NamedSharding(mesh={self.mesh}, spec={self.spec!r}, memory_kind=device)"

    def update(self, spec: Any = None, mesh: Mesh | None = None) -> NamedSharding:
        return NamedSharding(mesh or self.mesh, self.spec if spec is None else P(*spec))

    @property
    def device_set(self) -> set[Device]:
        return set(self.mesh.devices.flat)

    @property
    def _device_assignment(self) -> tuple[Device, ...]:
        return tuple(self.mesh.devices.flat)

    @property
    def num_devices(self) -> int:
        return self.mesh.size

    @property
    def is_fully_replicated(self) -> bool:
        return all(self.mesh.shape[a] == 1 for a in self.spec.used_axes())

    def check_compatible_aval(self, aval_shape: Sequence[int]) -> None:
        if len(aval_shape) < len(self.spec):
            extra = " For scalars the PartitionSpec should be P()" if not aval_shape else ""
            raise ValueError(
                f"Sharding {self} is only valid for values of rank at least {len(self.spec)}, "
                f"but was applied to a value of rank {len(aval_shape)}.{extra}")

    def split_counts(self, ndim: int) -> list[int]:
        """How many blocks each dimension is cut into."""
        return [math.prod(self.mesh.shape[a] for a in self.spec.axes_of(d))
                for d in range(ndim)]

    # --8<-- [start:shard_shape]
    def shard_shape(self, global_shape: tuple[int, ...]) -> tuple[int, ...]:
        """The shape of one device's block: each dimension divided by its split count."""
        self.check_compatible_aval(global_shape)
        # EXERCISE 11.2 (shard-shape): divide each dimension by its split count, or say why not
        parts = self.split_counts(len(global_shape))
        out = []
        for dim, (size, p) in enumerate(zip(global_shape, parts, strict=True)):
            if size % p:
                raise IndivisibleError(
                    f"Sharding {self} implies that array axis {dim} is partitioned {p} times, "
                    f"but the dimension size is {size} (full shape: {tuple(global_shape)}, "
                    f"per-dimension tiling factors: {parts} should evenly divide the shape)")
            out.append(size // p)
        return tuple(out)
        # END EXERCISE
    # --8<-- [end:shard_shape]

    def devices_indices_map(self, global_shape: tuple[int, ...]) -> dict[Device, Index]:
        """Each device's slice of the global array: its coordinate along the axes that split
        a dimension, read major-first, picks the block."""
        block = self.shard_shape(global_shape)
        names = self.mesh.axis_names
        out = {}
        for coords in itertools.product(*(range(s) for s in self.mesh.axis_sizes)):
            at = dict(zip(names, coords, strict=True))
            index = []
            for dim in range(len(global_shape)):
                k = 0
                for a in self.spec.axes_of(dim):
                    k = k * self.mesh.shape[a] + at[a]
                whole = math.prod(self.mesh.shape[a] for a in self.spec.axes_of(dim)) == 1
                index.append(slice(None) if whole else  # JAX: an unsplit dimension
                             slice(k * block[dim], (k + 1) * block[dim]))
            out[self.mesh.devices[coords]] = tuple(index)
        return out

    # --8<-- [start:to_hlo]
    def _to_xla_hlo_sharding(self, num_dimensions: int) -> HloSharding:
        """The tile assignment: mesh axes reordered as the spec uses them (dimension by
        dimension, major first), then the unused ones, which become one trailing replica
        dimension (JAX: named_sharding_to_xla_hlo_sharding; torch_xla: _get_tile_assignment)."""
        # EXERCISE 11.1 (tile-assignment): the tile dims and the permutation of the mesh axes
        mesh = self.mesh
        sizes = dict(mesh.shape)
        names = [n for n in mesh.axis_names if sizes[n] != 1]  # size-1 axes split nothing
        used = [a for a in self.spec.used_axes() if sizes[a] != 1]
        if not used:
            return HloSharding.replicate()
        tile_dims = [math.prod(sizes[a] for a in self.spec.axes_of(d) if sizes[a] != 1)
                     for d in range(num_dimensions)]
        perm = [names.index(a) for a in used]
        replicated = [names.index(n) for n in names if n not in used]
        if replicated:
            tile_dims.append(math.prod(sizes[names[i]] for i in replicated))
            perm += replicated
        return HloSharding.iota_tile(tuple(tile_dims), tuple(sizes[n] for n in names),
                                     tuple(perm), replicate_on_last_tile_dim=bool(replicated))
        # END EXERCISE
    # --8<-- [end:to_hlo]

    def _to_sdy_sharding(self, num_dimensions: int, mesh_name: str = "mesh") -> str:
        """Shardy's form: per dimension, the axes that split it (`{"data"}`, `{}`)."""
        dims = ", ".join("{" + ", ".join(f'"{a}"' for a in self.spec.axes_of(d)) + "}"
                         for d in range(num_dimensions))
        return f"<@{mesh_name}, [{dims}]>"


def check_pspec(mesh: Mesh, spec: PartitionSpec, what: str = "NamedSharding spec") -> None:
    """JAX's checks, with its messages: each axis once, and only axes the mesh has."""
    used = spec.used_axes()
    dups = [a for a in dict.fromkeys(used) if used.count(a) > 1]
    if dups:
        raise DuplicateSpecError(
            f"A single {what} specification can map every mesh axis to at most one "
            f"positional dimension, but {spec} has duplicate entries for {show_axes(dups)}")
    for a in used:
        if a not in mesh.axis_names:
            raise ValueError(f"Resource axis: {a} of {spec} is not found in mesh: "
                             f"{tuple(mesh.shape.keys())}.")


def hlo_to_named_sharding(hlo: HloSharding, mesh: Mesh, ndim: int) -> NamedSharding:
    """A spec on `mesh` whose tile assignment is `hlo` (JAX: _gspmd_to_named_sharding): the
    shortest one, found by trying the ways of giving each mesh axis to a dimension or none."""
    names = mesh.axis_names
    for choice in itertools.product([ndim, *range(ndim)], repeat=len(names)):
        groups: list[list[str]] = [[] for _ in range(ndim)]
        for name, dim in zip(names, choice, strict=True):
            if dim < ndim:
                groups[dim].append(name)
        for orders in itertools.product(*(itertools.permutations(g) for g in groups)):
            entries: list[Any] = [None if not o else o[0] if len(o) == 1 else tuple(o)
                                  for o in orders]
            while entries and entries[-1] is None:
                entries.pop()
            candidate = NamedSharding(mesh, PartitionSpec(*entries))
            if candidate._to_xla_hlo_sharding(ndim).equivalent(hlo):
                return candidate
    raise ValueError(f"{hlo} is no sharding over {mesh}")
