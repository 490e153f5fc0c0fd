"""The same sharding checks for JAX and for stage 11: the messages of a spec longer than the
value's rank (device_put, jit's arguments and outputs, with_sharding_constraint), each device's
slice of an array with a size-0 dimension, and what `is_equivalent_to` returns.

`python sharding_checks.py N` runs them on JAX with N CPU devices and prints JSON; the tests run
them on ours (`run(OURS)`) and compare.
"""

from __future__ import annotations

import json
import sys
import types
from typing import Any

import numpy as np


def _error(f: Any) -> list[str] | None:
    try:
        f()
    except Exception as e:  # noqa: BLE001 (the oracle's exception, whatever it is)
        return [type(e).__name__, str(e)]
    return None


def messages(api: Any) -> dict[str, Any]:
    mesh = api.make_mesh((2, 2), ("x", "y"))
    s = api.NamedSharding(mesh, api.P("x", "y"))
    x = np.ones((8, 4), np.float32)
    return {
        "device_put": _error(lambda: api.device_put(np.ones(8, np.float32), s)),
        "device_put scalar": _error(lambda: api.device_put(np.float32(1), s)),
        "jit output": _error(lambda: api.jit(lambda a: a.sum(0), out_shardings=s)(x)),
        "jit outputs": _error(lambda: api.jit(lambda a: (a, a.sum(0)), out_shardings=(s, s))(x)),
        "jit output dict": _error(lambda: api.jit(lambda a: {"a": a.sum(0)},
                                                  out_shardings=s)(x)),
        "jit argument": _error(lambda: api.jit(lambda a: a, in_shardings=s)(np.ones(8))),
        "jit second argument": _error(lambda: api.jit(lambda a, b: a, in_shardings=(s, s))(
            x, np.ones(8, np.float32))),
        "jit output indivisible": _error(lambda: api.jit(lambda a: a[:6], out_shardings=s)(x)),
        "with_sharding_constraint": _error(lambda: api.with_sharding_constraint(
            np.ones(8, np.float32), s)),
    }


def _slices(index: tuple) -> list[list[Any]]:
    return [[sl.start, sl.stop] for sl in index]


def index_maps(api: Any) -> dict[str, Any]:
    """Each device's slice, in mesh order, for shapes with a size-0 dimension."""
    mesh = api.make_mesh((2, 2), ("x", "y"))
    thin = api.make_mesh((1, 4), ("a", "b"))
    out: dict[str, Any] = {}
    for m, spec, shape in [(mesh, ("x", "y"), (0, 4)), (mesh, ("x", None), (0, 4)),
                           (mesh, (None, "y"), (0, 4)), (mesh, ("x",), (2, 0)),
                           (mesh, (("x", "y"),), (0, 3)), (thin, ("a", "b"), (0, 4)),
                           (thin, ("a",), (0,)), (mesh, (), (0,))]:
        sharding = api.NamedSharding(m, api.P(*spec))
        index = sharding.devices_indices_map(shape)
        out[f"{spec} {shape}"] = [_slices(index[d]) for d in m.devices.flat]
    s = api.NamedSharding(mesh, api.P("x"))
    kinds = [type(s.is_equivalent_to(api.NamedSharding(mesh, p), 2)) for p in (api.P("x", None),
                                                                             api.P("y"))]
    out["is_equivalent_to"] = [f"{t.__module__}.{t.__qualname__}" for t in kinds]
    return out


def properties(api: Any) -> dict[str, Any]:
    """What a sharding and an array placed with it say about replication, addressability and
    memory, for split, partly split and replicated specs."""
    mesh = api.make_mesh((2, 2), ("x", "y"))
    out: dict[str, Any] = {}
    for spec in [("x", "y"), ("x",), (None, "y"), (), (("x", "y"),)]:
        s = api.NamedSharding(mesh, api.P(*spec))
        x = api.device_put(np.ones((4, 4), np.float32), s)
        out[str(spec)] = [s.is_fully_replicated, s.is_fully_addressable, s.memory_kind,
                          s.num_devices, len(s.addressable_devices), x.is_fully_replicated,
                          x.is_fully_addressable, x.sharding.is_fully_addressable]
    return out


def run(api: Any) -> dict[str, Any]:
    return {"messages": messages(api), "index_maps": index_maps(api),
            "properties": properties(api)}


if __name__ == "__main__":
    import jax

    jax.config.update("jax_num_cpu_devices", int(sys.argv[1]))
    jax.config.update("jax_platforms", "cpu")
    from jax.sharding import AxisType, NamedSharding, PartitionSpec

    api = types.SimpleNamespace(
        jit=jax.jit, P=PartitionSpec, NamedSharding=NamedSharding, device_put=jax.device_put,
        with_sharding_constraint=jax.lax.with_sharding_constraint,
        make_mesh=lambda shape, names: jax.make_mesh(shape, names,
                                                     axis_types=(AxisType.Auto,) * len(names)))
    print(json.dumps(run(api)))
