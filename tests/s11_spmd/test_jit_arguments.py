"""jit with shardings and the ways arguments arrive, against JAX on 8 CPU devices: static
arguments (left out of the program and of in_shardings), keyword arguments (laid out as they
are; refused beside in_shardings), in_shardings as a list, shardings that are no prefix of the
arguments or outputs, leaves that are no sharding, arguments (and equations inside) on
different devices, and device_put with a PartitionSpec.

`python test_jit_arguments.py jax|ours static|rest` runs the programs in a process of its own
(JAX's CPU device count is fixed when it starts; a program given the wrong buffers may crash
its process) and prints JSON; the tests compare the two.
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


def _result(out: Any) -> Any:
    s = out.sharding
    return [np.asarray(out).tolist(), repr(s.spec), list(s.mesh.axis_names),
            [[sh.device.id, [[i.start, i.stop] for i in sh.index], list(sh.data.shape)]
             for sh in out.addressable_shards]]


def _run(f: Any) -> Any:
    try:
        return _result(f())
    except Exception as e:  # noqa: BLE001 (the oracle's exception, whatever it is)
        return [type(e).__name__, str(e)]


def programs(api: Any, group: str) -> dict[str, Any]:
    """`group` "static": the static-argument cases (on the old code one crashed its process);
    any other: the rest, each key starting with its section's name."""
    P, NS, jit, dp = api.P, api.NamedSharding, api.jit, api.device_put
    d = api.devices()
    mesh = api.Mesh(np.array(d, dtype=object).reshape(4, 2), ("x", "y"))
    sub = api.Mesh(np.array(d[4:], dtype=object), ("x",))
    sh, rep = NS(mesh, P("x")), NS(mesh, P())
    a = np.arange(64, dtype=np.float32).reshape(8, 4 * 2) - 20
    x = dp(a, sh)

    def scale(k, v):
        return v * k

    def mid(v, k, w):
        return v * k + w

    def add(v, w):
        return v + w

    def add3(v, w, u):
        return v + w + u

    def with_key(v, k):
        return v * k

    def pair(t):
        return t[0] + t[1]

    def one(v):
        return v + 1

    def both(v):
        return v + 1, v * 2

    cached = jit(add)
    cases = {
        # static arguments are no leaves: not laid out, not in in_shardings
        "static first, committed": lambda: jit(scale, static_argnums=0)(3, x),
        "static first, in_shardings": lambda: jit(scale, static_argnums=0, in_shardings=sh)(3, a),
        "static first, in_shardings tuple": lambda: jit(
            scale, static_argnums=0, in_shardings=(sh,))(3, a),
        "static first, in_shardings too long": lambda: jit(
            scale, static_argnums=0, in_shardings=(rep, sh))(3, a),
        "static between": lambda: jit(mid, static_argnums=1, in_shardings=(
            sh, NS(mesh, P(None, "x"))))(a, 2, a),
        "static between, committed": lambda: jit(mid, static_argnums=1)(a, 2, x),
        "static by name": lambda: jit(with_key, static_argnames="k")(x, k=2),
        "static by name, in_shardings": lambda: jit(
            with_key, static_argnames="k", in_shardings=sh)(a, k=2),
        # keyword arguments: laid out as they are
        "keyword committed": lambda: jit(add)(a, w=x),
        "keywords only": lambda: jit(add)(v=x, w=a),
        "keyword, out_shardings": lambda: jit(add, out_shardings=sh)(a, w=a),
        "keyword, in_shardings None": lambda: jit(add, in_shardings=None)(x, w=a),
        "keyword, in_shardings": lambda: jit(add, in_shardings=sh)(a, w=a),
        "keyword, cached": lambda: [cached(x, w=x), cached(x, w=x)][1],
        # the trees of shardings
        "in_shardings a list": lambda: jit(add, in_shardings=[sh, rep])(a, a),
        "in_shardings too short": lambda: jit(add, in_shardings=(sh,))(a, a),
        "in_shardings too long": lambda: jit(add, in_shardings=(sh, rep, rep))(a, a),
        "in_shardings a dict": lambda: jit(pair, in_shardings={"a": sh})((a, a)),
        "in_shardings needs a tuple": lambda: jit(pair, in_shardings=(sh, sh))((a, a)),
        "in_shardings inner": lambda: jit(pair, in_shardings=((sh, sh, sh),))((a, a)),
        "out_shardings too long": lambda: jit(both, out_shardings=(sh, sh, sh))(a),
        "out_shardings a list": lambda: jit(both, out_shardings=[sh, rep])(a),
        "in_shardings leaf": lambda: jit(one, in_shardings=3)(a),
        "out_shardings leaf": lambda: jit(one, out_shardings="x")(a),
        # arguments and outputs on different devices
        "devices of two arguments": lambda: jit(add)(x, dp(a, NS(sub, P("x")))),
        "devices of three arguments": lambda: jit(add3)(x, dp(a, rep), dp(a, NS(sub, P()))),
        "devices of a keyword": lambda: jit(add)(x, w=dp(a, NS(sub, P("x")))),
        "devices of in_shardings": lambda: jit(add, in_shardings=(NS(sub, P("x")), sh))(a, a),
        "devices of an argument and in_shardings": lambda: jit(
            add, in_shardings=(None, NS(sub, P())))(x, a),
        "devices of an output": lambda: jit(one, out_shardings=NS(sub, P()))(x),
        "devices of in_ and out_shardings": lambda: jit(
            one, in_shardings=sh, out_shardings=NS(sub, P()))(a),
        # ... and an equation inside: named with the line it was traced at (this file's)
        "devices of a constraint inside": lambda: jit(
            lambda v: api.constrain(v * 2, NS(sub, P("x"))))(x),
        "devices of a shard_map inside": lambda: jit(lambda v: api.shard_map(
            lambda b: b * 2, mesh=sub, in_specs=P("x"), out_specs=P("x"))(v))(x),
        # device_put with a PartitionSpec: of the mesh set by set_mesh
        "device_put spec, no mesh": lambda: dp(a, P("x")),
    }
    if group == "static":
        return {k: _run(f) for k, f in cases.items() if k.startswith("static")}
    out = {k: _run(f) for k, f in cases.items() if not k.startswith("static")}
    with api.set_mesh(mesh):
        out["device_put specs in a tree"] = _run(lambda: dp((a, a), (P("x"), P(None, "y")))[1])
    return out


def _api(who: str) -> Any:
    if who == "jax":
        import jax

        jax.config.update("jax_num_cpu_devices", 8)
        jax.config.update("jax_platforms", "cpu")
        from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec

        return types.SimpleNamespace(
            P=PartitionSpec, NamedSharding=NamedSharding, jit=jax.jit, device_put=jax.device_put,
            devices=jax.devices, set_mesh=jax.set_mesh, shard_map=jax.shard_map,
            constrain=jax.lax.with_sharding_constraint,
            Mesh=lambda d, n: Mesh(d, n, axis_types=(AxisType.Auto,) * len(n)))
    import stages.s11_spmd as s11

    return types.SimpleNamespace(
        P=s11.P, NamedSharding=s11.NamedSharding, jit=s11.jit, device_put=s11.device_put,
        devices=s11.devices, set_mesh=s11.set_mesh, shard_map=s11.shard_map,
        constrain=s11.with_sharding_constraint,
        Mesh=lambda d, n: s11.Mesh(d, n, (s11.AxisType.Auto,) * len(n)))


@functools.cache
def _programs_in_a_process(who: str, group: str) -> dict[str, Any]:
    got = subprocess.run([sys.executable, __file__, who, group], capture_output=True, text=True,
                         cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=600)
    assert got.returncode == 0, got.stderr[-3000:]
    return json.loads(got.stdout)


def _compare(group: str, section: str) -> None:
    ours, theirs = _programs_in_a_process("ours", group), _programs_in_a_process("jax", group)
    keys = [k for k in theirs if k.startswith(section)]
    assert keys and [k for k in ours if k.startswith(section)] == keys
    for key in keys:
        assert ours[key] == theirs[key], key


def test_static_arguments_are_no_leaves_of_the_program_or_in_shardings():
    _compare("static", "static")


def test_keyword_arguments_are_laid_out_as_they_are_and_refused_beside_in_shardings():
    _compare("rest", "keyword")


def test_trees_of_shardings_and_their_messages():
    _compare("rest", "in_shardings")
    _compare("rest", "out_shardings")


def test_arguments_and_outputs_on_different_devices_are_named_as_jax_names_them():
    _compare("rest", "devices")


def test_device_put_with_a_partition_spec():
    _compare("rest", "device_put")


if __name__ == "__main__":
    who, group = sys.argv[1:]
    if who == "jax":
        print(json.dumps(programs(_api("jax"), group)))
    else:
        from tests.s11_spmd.conftest import cpu_devices

        with cpu_devices(8):
            print(json.dumps(programs(_api("ours"), group)))
