"""Where a program runs and how its arguments are laid out, against JAX on 8 CPU devices: a
SingleDeviceSharding in in_shardings or out_shardings places the program on its device; a
committed argument takes it there; beside a mesh's sharding, or another device's, JAX's errors;
a sharded program with no outputs; an eager shard_map of an array laid out otherwise (laid out
anew); reshard to an Auto axis and shard_map of no function (JAX's refusals); a jit traced
under one set_mesh and called under another (traced again: the mesh is in the trace context).

`python test_placement.py jax|ours` runs the programs in a process of its own (JAX's CPU
device count is fixed when it starts) and prints JSON; the test compares the two.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def _run(f: Any) -> Any:
    """An array as [values, its sharding's repr, committed]; an error as [type, message]."""
    try:
        out = f()
        if isinstance(out, tuple):
            return ["tuple", len(out)]
        return [np.asarray(out).tolist(), repr(out.sharding), out.committed]
    except Exception as e:  # noqa: BLE001 (the oracle's exception, whatever it is)
        return [type(e).__name__, str(e)]


def programs(api: Any) -> dict[str, Any]:
    d, jit, dp, SDS, NS, P = api.devices(), api.jit, api.device_put, api.SDS, api.NS, api.P
    mesh = api.Mesh(np.array(d, dtype=object).reshape(4, 2), ("x", "y"))
    a = np.arange(16, dtype=np.float32).reshape(8, 2)
    on3, laid = dp(a, d[3]), dp(a, NS(mesh, P("x")))

    def twice(v):
        return v * 2

    def mul(v, w):
        return v * w

    return {
        "in_shardings one device": _run(lambda: jit(twice, in_shardings=SDS(d[3]))(a)),
        "out_shardings one device": _run(lambda: jit(twice, out_shardings=SDS(d[3]))(a)),
        "in_shardings moves a committed array": _run(
            lambda: jit(twice, in_shardings=SDS(d[2]))(on3)),
        "in_shardings takes an uncommitted array": _run(
            lambda: jit(twice, in_shardings=SDS(d[3]))(dp(a))),
        "out_shardings beside a committed array": _run(
            lambda: jit(twice, out_shardings=SDS(d[3]))(on3)),
        "a static argument stays as it is": _run(
            lambda: jit(mul, in_shardings=SDS(d[1]), static_argnums=1)(a, 3)),
        "committed and host": _run(lambda: jit(mul)(on3, a)),
        "committed beside a mesh's array": _run(lambda: jit(mul)(on3, laid)),
        "a mesh's in_sharding for a committed array": _run(
            lambda: jit(twice, in_shardings=NS(mesh, P("x")))(on3)),
        "one device in, the mesh out": _run(
            lambda: jit(twice, in_shardings=SDS(d[3]), out_shardings=NS(mesh, P("x")))(a)),
        "one device in, another out": _run(
            lambda: jit(twice, in_shardings=SDS(d[3]), out_shardings=SDS(d[2]))(a)),
        "no outputs": _run(lambda: jit(lambda v: (), keep_unused=True)(laid)),
        "an eager shard_map lays its argument out anew": _run(lambda: api.shard_map(
            twice, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(dp(a, NS(mesh, P(None, "y"))))),
        "reshard to an Auto axis": _run(lambda: jit(lambda v: api.reshard(v, NS(mesh, P("x"))))(a)),
        "shard_map of no function": _run(lambda: api.shard_map(3, mesh=mesh, in_specs=P("x"),
                                                                out_specs=P("x"))),
        "a jit traced under one set_mesh, called under another": _run(
            lambda: _under_two_meshes(api, d, a)),
    }


def _under_two_meshes(api: Any, d: list, a: np.ndarray) -> Any:
    """The context mesh is part of the trace context: a bare P names the mesh of the call."""
    line = api.Mesh(np.array(d[:4], dtype=object), ("x",), explicit=True)
    square = api.Mesh(np.array(d[:4], dtype=object).reshape(2, 2), ("x", "y"), explicit=True)
    g = api.jit(lambda v: api.reshard(v * 2.0, api.P("x")))
    with api.set_mesh(line):
        g(a)
    with api.set_mesh(square):
        return g(a)


def _api(who: str) -> Any:
    if who == "jax":
        import jax

        jax.config.update("jax_num_cpu_devices", 8)
        jax.config.update("jax_platforms", "cpu")
        from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec, SingleDeviceSharding

        return types.SimpleNamespace(
            devices=jax.devices, jit=jax.jit, device_put=jax.device_put, SDS=SingleDeviceSharding,
            NS=NamedSharding, P=PartitionSpec, shard_map=jax.shard_map,
            reshard=jax.sharding.reshard, set_mesh=jax.set_mesh,
            Mesh=lambda dv, n, explicit=False: Mesh(
                dv, n, axis_types=(AxisType.Explicit if explicit else AxisType.Auto,) * len(n)))
    import stages.s11_spmd as s11

    return types.SimpleNamespace(
        devices=s11.devices, jit=s11.jit, device_put=s11.device_put, SDS=s11.SingleDeviceSharding,
        NS=s11.NamedSharding, P=s11.P, shard_map=s11.shard_map, reshard=s11.reshard,
        set_mesh=s11.set_mesh, Mesh=lambda dv, n, explicit=False: s11.Mesh(
            dv, n, (s11.AxisType.Explicit if explicit else s11.AxisType.Auto,) * len(n)))


@functools.cache
def _programs_in_a_process(who: str) -> dict[str, Any]:
    got = subprocess.run([sys.executable, __file__, who], capture_output=True, text=True,
                         cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=600)
    assert got.returncode == 0, got.stderr[-3000:]
    return json.loads(got.stdout)


def test_placements_and_refusals_are_jaxs():
    ours, theirs = _programs_in_a_process("ours"), _programs_in_a_process("jax")
    assert list(ours) == list(theirs)
    for key in theirs:
        assert ours[key] == theirs[key], key


if __name__ == "__main__":
    if sys.argv[1] == "jax":
        print(json.dumps(programs(_api("jax"))))
    else:
        from tests.s11_spmd.conftest import cpu_devices

        with cpu_devices(8):
            print(json.dumps(programs(_api("ours"))))
