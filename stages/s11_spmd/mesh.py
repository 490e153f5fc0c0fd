"""A mesh: the devices laid out in an n-dimensional array whose axes have names.

JAX: jax/_src/mesh.py (`Mesh`, `AxisType`) and sharding_impls.py (`make_mesh`); torch_xla:
torch_xla/distributed/spmd/xla_sharding.py (`Mesh(device_ids, mesh_shape, axis_names)`). A
mesh says nothing about any array: it names the ways the devices can be split ("data",
"model"), and a PartitionSpec later says which array dimension is split along which name.
A device's *logical id* is its position in `devices.flat`; sharding annotations speak of
logical ids, and the compiled program's device assignment maps them to real devices.
"""

from __future__ import annotations

import enum
import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from stages.s07_caches.xla_bridge import Device
from stages.s09_pjrt import runtime


class AxisType(enum.Enum):
    """How the compiler may treat a mesh axis (JAX: mesh.AxisType).

    Auto: the compiler propagates shardings along it (the GSPMD / Shardy default). Explicit:
    the sharding is part of the type (sharding_in_types.py). Manual: inside shard_map."""

    Auto = enum.auto()
    Explicit = enum.auto()
    Manual = enum.auto()

    def __repr__(self) -> str:
        return self.name


def show_axes(axes: Sequence[str]) -> str:
    """`'x', 'y'` as JAX's messages list axes (JAX: mesh.show_axes)."""
    return ", ".join(f"`{a}`" for a in axes)


class Mesh:
    """`devices` (an array of Device) with one name per axis (JAX: mesh.Mesh)."""

    def __init__(self, devices: Any, axis_names: str | Sequence[str],
                 axis_types: tuple[AxisType, ...] | None = None):
        if isinstance(axis_names, str):
            axis_names = (axis_names,)
        devices = devices if isinstance(devices, np.ndarray) else np.array(devices, dtype=object)
        if devices.ndim != len(axis_names):
            raise ValueError(
                "Mesh requires the ndim of its first argument (`devices`) to equal the "
                "length of its second argument (`axis_names`), but got "
                f"devices.ndim == {devices.ndim} and len(axis_names) == {len(axis_names)}.")
        if len(set(axis_names)) != len(axis_names):
            raise ValueError(f"Mesh axis names must be unique, got: {tuple(axis_names)}")
        axis_types = (AxisType.Auto,) * len(axis_names) if axis_types is None \
            else tuple(axis_types)
        if len(axis_types) != len(axis_names):
            raise ValueError("Number of axis names should match the number of axis_types. "
                             f"Got axis_names={tuple(axis_names)} and axis_types={axis_types}")
        self.devices, self.axis_names, self.axis_types = devices, tuple(axis_names), axis_types
        self._hash: int | None = None

    @property
    def shape(self) -> dict[str, int]:
        """Axis name -> size, in axis order."""
        return dict(zip(self.axis_names, self.devices.shape, strict=True))

    @property
    def axis_sizes(self) -> tuple[int, ...]:
        return tuple(self.devices.shape)

    @property
    def size(self) -> int:
        return int(self.devices.size)

    @property
    def device_ids(self) -> np.ndarray:
        """The devices' runtime ids, in the mesh's shape."""
        return np.vectorize(lambda d: d.id, otypes=[int])(self.devices)

    @property
    def manual_axes(self) -> tuple[str, ...]:
        return tuple(n for n, t in zip(self.axis_names, self.axis_types, strict=True)
                     if t is AxisType.Manual)

    def update_axis_types(self, new: dict[str, AxisType]) -> Mesh:
        types = tuple(new.get(n, t) for n, t in zip(self.axis_names, self.axis_types, strict=True))
        return Mesh(self.devices, self.axis_names, types)

    def _key(self) -> tuple:
        return (tuple(self.devices.flat), self.devices.shape, self.axis_names, self.axis_types)

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, Mesh) and self._key() == other._key())

    def __hash__(self) -> int:
        if self._hash is None:  # a mesh never changes; jit's fast path hashes it every call
            self._hash = hash(self._key())
        return self._hash

    def __str__(self) -> str:  # how a jaxpr's params and a NamedSharding show it (JAX too)
        axes = ", ".join(f"'{n}': {s}" for n, s in self.shape.items())
        return f"Mesh({axes}, axis_types={self.axis_types!r})"

    def __repr__(self) -> str:
        return (f"Mesh(axis_sizes={self.axis_sizes!r}, axis_names={self.axis_names!r}, "
                f"axis_types={self.axis_types!r})")


def cpu_client(n: int) -> Any:
    """A client of `n` CPU devices (the registry's CPU branch with CPU_NUM_DEVICES=n), to hand
    to `runtime.set_computation_client` (JAX: jax_num_cpu_devices, set before JAX starts)."""
    from stages.s09_pjrt import initialize_pjrt

    saved = os.environ.get("CPU_NUM_DEVICES")
    os.environ["CPU_NUM_DEVICES"] = str(n)
    try:
        return initialize_pjrt("CPU")
    finally:
        if saved is None:
            del os.environ["CPU_NUM_DEVICES"]
        else:
            os.environ["CPU_NUM_DEVICES"] = saved


def devices() -> list[Device]:
    """Every device of the process's client, ordered by id (JAX: jax.devices())."""
    client = runtime.get_computation_client()
    return [runtime.device_object(client, d) for d in client.get_all_devices()]


def make_mesh(axis_shapes: Sequence[int], axis_names: Sequence[str],
              axis_types: tuple[AxisType, ...] | None = None, *,
              devices: Sequence[Device] | None = None) -> Mesh:
    """A mesh of the first prod(axis_shapes) devices in id order (JAX: jax.make_mesh, which
    on TPU also orders them along the physical torus; on CPU the order is the ids'). Its axes
    are Explicit unless `axis_types` says otherwise, as in JAX 0.10."""
    all_devices = list(globals()["devices"]() if devices is None else devices)
    size = math.prod(axis_shapes)
    if size > len(all_devices):
        raise ValueError(f"Number of devices {len(all_devices)} must be >= the product of "
                         f"mesh_shape {tuple(axis_shapes)}")
    grid = np.empty(size, dtype=object)
    grid[:] = all_devices[:size]
    if axis_types is None:
        axis_types = (AxisType.Explicit,) * len(axis_shapes)
    return Mesh(grid.reshape(tuple(axis_shapes)), tuple(axis_names), axis_types)
