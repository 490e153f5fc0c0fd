"""The sharding a jit parameter has when the user gave none, and an array's on one device.

JAX: jax/_src/sharding_impls.py (`UnspecifiedValue`, `UNSPECIFIED`, `SingleDeviceSharding`).
jit's equation carries one sharding per input and output (`in_shardings`, `out_shardings`);
without a mesh every one is `UNSPECIFIED`, the printer hides them, and the compile log prints
them as JAX does (`Argument mapping: (UnspecifiedValue,).`). The SPMD stage puts real shardings
there.
"""

from __future__ import annotations

from .xla_bridge import Device


class UnspecifiedValue:
    """No sharding was asked for: the compiler chooses."""

    def __repr__(self) -> str:
        return "UnspecifiedValue"


UNSPECIFIED = UnspecifiedValue()


class SingleDeviceSharding:
    """The whole array on one device: what a device array without a mesh reports as its
    `.sharding` (JAX: SingleDeviceSharding). The SPMD stage adds its HLO form."""

    is_fully_replicated = is_fully_addressable = True
    memory_kind = "device"

    def __init__(self, device: Device):
        self._device = device

    @property
    def device_set(self) -> set[Device]:
        return {self._device}

    @property
    def addressable_devices(self) -> set[Device]:  # one process sees every device here
        return self.device_set

    @property
    def _device_assignment(self) -> tuple[Device, ...]:
        return (self._device,)

    @property
    def num_devices(self) -> int:
        return 1

    def devices_indices_map(self, global_shape: tuple[int, ...]) -> dict[Device, tuple]:
        return {self._device: (slice(None),) * len(global_shape)}

    def shard_shape(self, global_shape: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(global_shape)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SingleDeviceSharding) and other._device == self._device

    def __hash__(self) -> int:
        return hash(self._device)

    def __repr__(self) -> str:
        return f"SingleDeviceSharding(device={self._device!r}, memory_kind={self.memory_kind})"
