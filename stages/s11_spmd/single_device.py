"""jit whose shardings name one device, and arrays stage 9 committed to one device.

JAX: pjit.py (`_resolve_in_shardings`) and pxla.py (`_get_and_check_device_assignment`). A
SingleDeviceSharding in jit's in_shardings or out_shardings, or an argument committed to its
device (stage 9's `device_put(x, device)`), places the program on that device. There is nothing
to partition then: it runs as stage 9 runs a jit, its arguments put on the device first
(committed, so the results are too). A NamedSharding beside it names other devices: jit refuses
the two with `check_devices`'s message.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stages.s01_pytrees import tree_map
from stages.s02_tracing import core
from stages.s07_caches.xla_bridge import Device
from stages.s09_pjrt import array as s09_array

from .array import ArrayImpl, device_put
from .pjit_checks import jaxpr_meshes, static_positions
from .sharding_impls import SingleDeviceSharding
from .sharding_in_types import committed_sharding


def arg_sharding(given: Any, x: Any) -> Any:
    """The sharding an argument runs with: a laid-out array's own (jit's must match it), a
    committed one-device array's device (a one-device sharding of jit's moves it there, as
    JAX's does), else the one jit gives (None: the compiler chooses)."""
    if isinstance(x, ArrayImpl):
        return committed_sharding(given, x)
    if isinstance(x, s09_array.ArrayImpl) and x.committed:
        if given is None or isinstance(given, SingleDeviceSharding):
            return given or SingleDeviceSharding(x.device)
        return committed_sharding(given, x)  # a mesh's: JAX's "does not match" error
    return given


def one_device(ins: Sequence[Any], outs: Sequence[Any], closed: core.ClosedJaxpr
               ) -> Device | None:
    """The device every given sharding names when each is a SingleDeviceSharding (and no
    equation inside names a mesh); else None. `check_devices` has made sure they agree."""
    given = [s for s in [*ins, *outs] if s is not None]
    if given and all(isinstance(s, SingleDeviceSharding) for s in given) \
            and not jaxpr_meshes(closed.jaxpr):
        (device,) = given[0].device_set
        return device
    return None


def put_on(device: Device | None, args: tuple, kwargs: dict, static_argnums: Sequence[int],
           static_argnames: Sequence[str]) -> tuple[tuple, dict]:
    """The dynamic arguments committed to `device` (None: left as they are), so that stage 9's
    jit runs there; the static ones as they are."""
    if device is None:
        return args, kwargs
    static = static_positions(len(args), static_argnums)

    def put(x: Any) -> Any:
        return tree_map(lambda leaf: device_put(leaf, device), x)
    return (tuple(a if i in static else put(a) for i, a in enumerate(args)),
            {k: v if k in static_argnames else put(v) for k, v in kwargs.items()})
