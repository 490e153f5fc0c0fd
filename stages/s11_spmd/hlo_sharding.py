"""The compiler's word for a sharding: tile dimensions and a tile assignment of devices.

XLA: xla/hlo/ir/hlo_sharding.h and tile_assignment.h (`HloSharding`, `IotaTileAssignment`);
JAX builds one with `xc.HloSharding.iota_tile` (named_sharding.py), torch_xla with an explicit
list of devices (xla_sharding.py, `_get_op_sharding_args`). A tiled array of shape (8, 6) with
tile dimensions [2, 2] is cut into 2x2 blocks; the tile assignment, an array of shape [2, 2],
says which logical device holds each block. With `last_tile_dim_replicate` the last tile
dimension is not an array dimension: the devices along it hold the same block (replicas).

The assignment is stored as XLA's V2 form, an iota reshaped and transposed
(`<=[2,2]T(1,0)`: arange(4).reshape(2,2).transpose(1,0)), which prints short and is what JAX
writes; `devices()` expands it to the explicit V1 list torch_xla prints (`0,2,1,3`).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .iota_search import iota_candidates


@dataclasses.dataclass(frozen=True)
class HloSharding:
    """`kind` is "replicated", "manual" or "tiled"; the rest describes a tiled sharding."""

    kind: str
    tile_dims: tuple[int, ...] = ()
    reshape_dims: tuple[int, ...] = ()  # the iota the assignment is made from, reshaped...
    transpose_perm: tuple[int, ...] = ()  # ...then transposed, then reshaped to tile_dims
    replicate_on_last_tile_dim: bool = False

    @staticmethod
    def replicate() -> HloSharding:
        return HloSharding("replicated")

    @staticmethod
    def manual() -> HloSharding:
        return HloSharding("manual")

    @staticmethod
    def iota_tile(dims: tuple[int, ...], reshape_dims: tuple[int, ...],
                  transpose_perm: tuple[int, ...], replicate_on_last_tile_dim: bool = False
                  ) -> HloSharding:
        return HloSharding("tiled", tuple(dims), tuple(reshape_dims), tuple(transpose_perm),
                           replicate_on_last_tile_dim)

    @staticmethod
    def from_devices(devices: np.ndarray, replicate_on_last_tile_dim: bool = False
                     ) -> HloSharding:
        """A tiled sharding from an explicit tile assignment (an array of logical ids)."""
        devices = np.asarray(devices)
        n = devices.size
        # find the iota it is: try the reshape/transpose XLA would print, else keep it flat
        for dims, perm in iota_candidates(devices):
            if (np.arange(n).reshape(dims).transpose(perm).reshape(devices.shape)
                    == devices).all():
                return HloSharding.iota_tile(devices.shape, dims, perm,
                                             replicate_on_last_tile_dim)
        raise ValueError(f"not an iota tile assignment: {devices.ravel().tolist()}")

    def is_replicated(self) -> bool:
        return self.kind == "replicated" or (
            self.kind == "tiled" and self.replicate_on_last_tile_dim and
            math.prod(self.tile_dims[:-1]) == 1)

    def num_tiles(self) -> int:
        """Tiles along the array's own dimensions (not the replicas)."""
        dims = self.tile_dims[:-1] if self.replicate_on_last_tile_dim else self.tile_dims
        return math.prod(dims)

    # --8<-- [start:devices]
    def devices(self) -> np.ndarray:
        """The explicit tile assignment: logical device ids in the shape `tile_dims`."""
        n = math.prod(self.tile_dims)
        return np.arange(n).reshape(self.reshape_dims).transpose(self.transpose_perm) \
            .reshape(self.tile_dims)
    # --8<-- [end:devices]

    def __str__(self) -> str:
        """XLA's text, with the assignment in the short iota form (what JAX writes)."""
        if self.kind != "tiled":
            return "{" + self.kind + "}"
        dims, perm = canonical_iota(self.reshape_dims, self.transpose_perm)
        iota = f"<=[{','.join(map(str, dims))}]"
        if list(perm) != sorted(perm):
            iota += f"T({','.join(map(str, perm))})"
        return self._text(iota)

    def to_string_v1(self) -> str:
        """XLA's text with the explicit device list (what torch_xla's sharding spec shows)."""
        if self.kind != "tiled":
            return "{" + self.kind + "}"
        return self._text(",".join(str(int(d)) for d in self.devices().ravel()))

    def _text(self, assignment: str) -> str:
        last = " last_tile_dim_replicate" if self.replicate_on_last_tile_dim else ""
        return f"{{devices=[{','.join(map(str, self.tile_dims))}]{assignment}{last}}}"

    def equivalent(self, other: HloSharding) -> bool:
        """The same blocks on the same devices (JAX: are_hlo_shardings_equal, roughly)."""
        if self.is_replicated() and other.is_replicated():
            return True
        if self.kind != "tiled" or other.kind != "tiled":
            return self.kind == other.kind
        return (self.tile_dims == other.tile_dims and
                self.replicate_on_last_tile_dim == other.replicate_on_last_tile_dim and
                bool((self.devices() == other.devices()).all()))


def canonical_iota(dims: tuple[int, ...], perm: tuple[int, ...]
                   ) -> tuple[list[int], list[int]]:
    """The shortest reshape+transpose of an iota with the same result, as XLA prints it:
    size-1 dimensions dropped, dimensions that stay adjacent after the transpose merged."""
    # XLA: CanonicalizeIotaDims in tile_assignment.cc
    dims, perm = list(dims), list(perm)
    keep = [i for i, d in enumerate(dims) if d != 1]
    renumber = {old: new for new, old in enumerate(keep)}
    dims = [dims[i] for i in keep]
    perm = [renumber[p] for p in perm if p in renumber]
    merged = True
    while merged:
        merged = False
        for k in range(len(perm) - 1):
            a, b = perm[k], perm[k + 1]
            if b == a + 1:  # source dims a and a+1 stay next to each other: one dimension
                dims[a] *= dims[b]
                del dims[b]
                perm = [p if p < b else p - 1 for p in perm if p != b]
                merged = True
                break
    if not dims:
        dims, perm = [1], [0]
    return dims, perm
