"""Device arrays: an array whose values live in a PJRT buffer, and `device_put` to make one.

JAX: jax/_src/array.py (`ArrayImpl`, printed `Array(...)`) and api.py (`device_put`). An
`ArrayImpl` is an aval (shape, dtype, weak type) and a `Data` handle from the client. A jitted
call returns its outputs as ArrayImpls *before* the device has computed them (dispatch is
asynchronous); the first read of the values (`np.asarray`, `print`, `float`) waits, and so does
`block_until_ready()`. A buffer donated to a computation is gone: using the array then raises
JAX's error.

The class is stage 2's eager `Array` with another storage. `Array` needs of its storage only the
host values (`_value`): its operators and methods (through the primitives, as a tracer's),
conversions, printing and pickling all read that. This subclass keeps a PJRT `Data` handle
instead of a numpy array, fetches `_value` from the device once, and adds what a device has
(readiness, deletion and donation, devices, DLPack).

A *committed* array was put on its device on purpose (`device_put` with a device, `from_dlpack`)
or computed from one; a jitted call runs where its committed arguments are (backend.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from stages.s01_pytrees import broadcast_prefix, tree_flatten, tree_map, tree_unflatten
from stages.s02_tracing import core, dtypes
from stages.s02_tracing.api_util import check_not_masked
from stages.s02_tracing.array import Array
from stages.s02_tracing.core import ShapedArray
from stages.s07_caches.api_util import check_donate_alias
from stages.s07_caches.sharding_impls import SingleDeviceSharding
from stages.s07_caches.xla_bridge import Device

from . import runtime
from .computation_client import ComputationClient, Data


class ArrayImpl(Array):
    """An array on one device: `aval` plus a PJRT buffer handle."""

    __slots__ = ("_data", "_client", "_npy_value", "committed", "__weakref__")

    def __init__(self, aval: ShapedArray, data: Data, client: ComputationClient,
                 committed: bool = False):
        self.aval, self._data, self._client = aval, data, client
        self.committed = committed  # put on its device on purpose: jit runs there (JAX: same)
        self._npy_value: np.ndarray | None = None

    # --8<-- [start:state]
    def is_deleted(self) -> bool:
        return not self._data.has_value()

    def _check_if_deleted(self) -> None:
        if not self._data.has_value():  # deleted, or donated to a computation: JAX's words
            raise RuntimeError(f"Array has been deleted with shape={self.aval.str_short()}.")

    def delete(self) -> None:
        """Free the buffer now; every later use raises."""
        self._data.delete()
        self._npy_value = None

    def is_ready(self) -> bool:
        """Whether the computation producing the values has finished (never blocks)."""
        self._check_if_deleted()
        return self._data.is_ready()

    def block_until_ready(self) -> ArrayImpl:
        """Wait for the device to finish computing this array; return it. A deleted one: PJRT's
        own error (INVALID_ARGUMENT: BlockHostUntilReady() ...), as JAX lets it through."""
        self._data.block_until_ready()
        return self

    @property
    def _value(self) -> np.ndarray:
        """The values on the host, fetched once (a blocking TransferFromDevice) and kept."""
        # EXERCISE 9.7 (host-value): refuse a deleted array; fetch the values once, keep them
        self._check_if_deleted()
        if self._npy_value is None:
            (self._npy_value,) = self._client.transfer_from_device([self._data])
            self._npy_value.flags.writeable = False  # np.asarray(x)[0] = 5 must not change x
        return self._npy_value
        # END EXERCISE
    # --8<-- [end:state]

    def data_on(self, device: str) -> Data:
        """The handle to pass to a computation on `device`, copied there if it is elsewhere."""
        data = self._data
        if data.device == device and data.has_value():  # every jit call's question: one test
            return data
        self._check_if_deleted()
        return self._client.copy_to_device(data, device)

    device_name = property(lambda self: self._data.device)  # the client's name: "CPU:1"

    def devices(self) -> set[Device]:
        self._check_if_deleted()
        return {self.device}

    @property
    def is_fully_replicated(self) -> bool:
        return self.sharding.is_fully_replicated

    @property
    def is_fully_addressable(self) -> bool:
        return self.sharding.is_fully_addressable

    @property
    def sharding(self) -> SingleDeviceSharding:
        """The whole array on its one device (stage 11's arrays hold a layout instead)."""
        return SingleDeviceSharding(runtime.device_object(self._client, self._data.device))

    @property
    def device(self) -> Device:
        self._check_if_deleted()
        return runtime.device_object(self._client, self._data.device)

    def copy(self) -> ArrayImpl:
        """A new buffer with the same values, on the same device, as committed as this one."""
        return transfer(self._value, self.aval, self.device, self.committed)

    def __copy__(self) -> ArrayImpl:  # copy.copy and copy.deepcopy keep device and commitment
        return self.copy()

    def __deepcopy__(self, memo: Any) -> ArrayImpl:
        return self.copy()

    def __reduce__(self) -> tuple:  # pickled as its host values, unpickled onto the device
        return transfer, (self._value, self.aval)

    # ------------------------------------------------------------------ DLPack
    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, dl_device: Any = None,
                   copy: bool | None = None) -> Any:
        """A capsule aliasing the device buffer: `torch.from_dlpack(x)`, `np.from_dlpack(x)`."""
        self._check_if_deleted()
        self._npy_value = None  # the consumer may write the buffer: read it again next time
        given = {"stream": stream, "max_version": max_version, "dl_device": dl_device,
                 "copy": copy}
        return self._data.dlpack(**{k: v for k, v in given.items() if v is not None})

    def __dlpack_device__(self) -> tuple[Any, int]:
        self._check_if_deleted()
        return self._data.dlpack_device()


# stage 2's get_aval (and so jit, grad, vmap) knows a device array by its aval
core.pytype_aval_mappings[ArrayImpl] = lambda x: x.aval


def _device_name(client: ComputationClient, device: Any) -> str:
    if device is None:
        return client.get_default_device()
    if isinstance(device, SingleDeviceSharding):  # device_put(x, y.sharding), as in JAX
        (device,) = device.device_set
    if isinstance(device, Device):
        return runtime.device_name(client, device)
    return str(device)


def device_put(x: Any, device: Any = None, *, donate: Any = False, may_alias: Any = None) -> Any:
    """`x` on `device` (the default device if None): a host value is transferred, a device array
    there is returned as it is, one elsewhere copied, leaf by leaf (JAX: jax.device_put); with a
    device, committed. `device` may be a pytree, a prefix of x's. `may_alias=False` asks for a
    buffer of its own; `donate=True` for a new array, on the same buffer: JAX's CPU client
    deletes nothing."""
    check_donate_alias(donate, may_alias)
    new = "copy" if may_alias is False else "array" if donate else None
    if device is None or isinstance(device, (Device, SingleDeviceSharding, str)):
        return tree_map(lambda leaf: _device_put_leaf(leaf, device, new), x)
    devices = broadcast_prefix(device, x, is_leaf=lambda d: d is None)
    leaves, tree = tree_flatten(x)
    return tree_unflatten(tree, [_device_put_leaf(leaf, d, new)
                                 for leaf, d in zip(leaves, devices, strict=True)])


def _device_put_leaf(x: Any, device: Any, new: str | None) -> Any:
    if isinstance(x, ArrayImpl):
        if device is None and new is None:  # the array stays where it is, as in JAX
            return x
        client = runtime.get_computation_client()
        committed = x.committed if device is None else True
        name = _device_name(client, device) if device is not None else x.device_name
        if new == "copy":  # a buffer of its own (through the host: a copy on the CPU anyway)
            return transfer(x._value, x.aval, name, committed)
        return ArrayImpl(x.aval, x.data_on(name), client, committed)  # a new array, as JAX's
    check_not_masked(x)
    aval = core.get_aval(x)
    if aval.dtype == dtypes.float0:  # a float0 holds nothing to place: zeros on the host
        return np.zeros(aval.shape, dtypes.float0)  # as a jit's float0 output (backend.py)
    return transfer(x, aval, device, committed=device is not None)


def transfer(x: Any, aval: ShapedArray, device: Any = None,
             committed: bool = False) -> ArrayImpl:
    """Host values `x` of `aval`, transferred to `device` (the default device if None)."""
    client = runtime.get_computation_client()
    (data,) = client.transfer_to_device([np.asarray(x, dtype=aval.dtype)],
                                        [_device_name(client, device)])
    return ArrayImpl(aval, data, client, committed)
