"""Committed arrays against JAX on 4 CPU devices: which arrays are committed (device_put with a
device, from_dlpack, copy, a jit of a committed argument), where a jitted call runs (on its
committed arguments' device, the others moved there; eager ops, grad and vmap too), and JAX's
error for committed arguments on two devices.

`python test_committed.py jax|ours` runs the programs in a process of its own (JAX's CPU device
count is fixed when it starts) and prints JSON; the test compares the two.
"""

from __future__ import annotations

import functools
import json
import os
import pickle
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np

from tests.s09_pjrt.conftest import four_cpu_devices

ROOT = Path(__file__).resolve().parents[2]


def _run(f: Any) -> Any:
    """An array as [values, device id, committed]; an error as [its type, its message]."""
    try:
        out = f()
        (device,) = out.devices()
        return [np.asarray(out).tolist(), device.id, out.committed]
    except Exception as e:  # noqa: BLE001 (the oracle's exception, whatever it is)
        return [type(e).__name__, str(e)]


def programs(api: Any) -> dict[str, Any]:
    d, dp, jit = api.devices(), api.device_put, api.jit
    a = np.arange(3, dtype=np.float32)
    on1, on2, free = dp(a, d[1]), dp(a + 1, d[2]), dp(a * 2)

    def add(p, q):
        return p + q

    def twice(p):
        return p * 2

    cached = jit(add)
    jit2, jit3, jit4, jit5, jit6 = jit(twice), jit(twice), jit(twice), jit(add), jit(twice)
    on0 = dp(a, d[0])
    jit7 = jit(lambda p, q: p * 2)  # q unused: not passed to the program
    return {
        "device_put, a device": _run(lambda: on1),
        "device_put, the default device named": _run(lambda: dp(a, d[0])),
        "device_put, no device": _run(lambda: free),
        "device_put of an uncommitted array to its own device": _run(lambda: dp(free, d[0])),
        "device_put of a committed array, no device": _run(lambda: dp(on1)),
        "copy of a committed array": _run(lambda: on1.copy()),
        "copy of an uncommitted array": _run(lambda: free.copy()),
        "pickled committed array": _run(lambda: pickle.loads(pickle.dumps(on1))),
        "from_dlpack": _run(lambda: api.from_dlpack(np.ones(2, np.float32))),
        "jit of host values": _run(lambda: jit(twice)(a)),
        "jit of an uncommitted array": _run(lambda: jit(twice)(free)),
        "jit, committed and uncommitted": _run(lambda: jit(add)(on1, free)),
        "jit, committed and host": _run(lambda: jit(add)(a, on1)),
        "jit, the same function on two devices in turn": _run(
            lambda: [cached(on1, a), cached(on2, a), cached(a, a)][1]),
        "jit, then on the default device": _run(lambda: [cached(on1, a), cached(a, a)][1]),
        "jit, committed on two devices": _run(lambda: jit(add)(on1, on2)),
        # the same again with device arrays only: the second call is a cache hit (ours: the fast
        # path, unless a committed argument is on another device than the executable's)
        "jit of an uncommitted array, again": _run(lambda: [jit2(free), jit2(free)][1]),
        "jit of a committed array, again": _run(lambda: [jit3(on1), jit3(on1)][1]),
        "jit of an array committed to the default device, again": _run(
            lambda: [jit6(on0), jit6(on0)][1]),
        "jit, device arrays on two devices in turn": _run(
            lambda: [jit4(free), jit4(on2), jit4(free)][1]),
        "jit, back on the default device": _run(lambda: jit4(free)),
        "jit, an unused committed argument, again": _run(
            lambda: [jit7(free, on0), jit7(free, on0)][1]),
        "jit, committed and uncommitted device arrays, again": _run(
            lambda: [jit5(on1, free), jit5(on1, free)][1]),
        "jit, a host value between them": _run(lambda: jit(lambda p, q, r: p + q + r)(
            on1, a, on2)),
        "eager op on a committed array": _run(lambda: on1 + 1),
        "device_put, donated (a hint: the source stays)": _run(
            lambda: [dp(free, d[1], donate=True), free][1]),
        "device_put, donated and aliased": _run(lambda: dp(free, d[1], donate=True,
                                                           may_alias=True)),
        "grad on a committed array": _run(lambda: api.grad(lambda p: (p * p).sum())(on1)),
        "vmap on a committed array": _run(lambda: api.vmap(twice)(on1)),
    }


def _api(who: str) -> Any:
    if who == "jax":
        import jax

        jax.config.update("jax_num_cpu_devices", 4)
        jax.config.update("jax_platforms", "cpu")
        return types.SimpleNamespace(devices=jax.devices, device_put=jax.device_put,
                                     jit=jax.jit, grad=jax.grad, vmap=jax.vmap,
                                     from_dlpack=jax.dlpack.from_dlpack)
    import stages.s07_caches as s07
    import stages.s09_pjrt as s09
    from stages.s04_autodiff import grad
    from stages.s05_vmap import vmap

    s09.use_pjrt()  # left on: this process only runs the programs
    return types.SimpleNamespace(devices=s09.PjRtBackend().devices, device_put=s09.device_put,
                                 jit=s07.jit, grad=grad, vmap=vmap, from_dlpack=s09.from_dlpack)


@functools.cache
def _programs_in_a_process(who: str) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PJRT_DEVICE="CPU", CPU_NUM_DEVICES="4")
    got = subprocess.run([sys.executable, __file__, who], capture_output=True, text=True,
                         cwd=ROOT, env=env, timeout=600)
    assert got.returncode == 0, got.stderr[-3000:]
    return json.loads(got.stdout)


def test_committed_arrays_and_where_a_jitted_call_runs_are_jaxs():
    ours, theirs = _programs_in_a_process("ours"), _programs_in_a_process("jax")
    assert list(ours) == list(theirs)
    for key in theirs:
        assert ours[key] == theirs[key], key


def test_two_devices_are_named_in_jaxs_words():
    got = _programs_in_a_process("ours")["jit, committed on two devices"]
    add = "programs.<locals>.add"  # the function's qualified name, as JAX words it
    assert got == ["ValueError", "Received incompatible devices for jitted computation. Got "
                   f"argument p of {add} with shape float32[3] and with device ids [1] on "
                   f"platform CPU and argument q of {add} with shape float32[3] and with device "
                   "ids [2] on platform CPU"]


def test_an_executable_read_back_from_the_cache_compiles_again_for_a_committed_device():
    import stages.s07_caches as s07
    import stages.s09_pjrt as s09
    from stages.s07_caches.compiler import get_compile_options

    with four_cpu_devices():
        backend = s09.PjRtBackend()
        x = s09.device_put(np.arange(3, dtype=np.float32))
        written = s07.jit(lambda v: v * 2.0 + 1.0).lower(x).compile().runtime_executable()
        read = backend.deserialize(backend.serialize(written), get_compile_options(()))
        assert read.program.text == written.program.text  # the header keeps the module
        on2 = s09.device_put(np.arange(3, dtype=np.float32), "CPU:2")
        (out,) = read.call(on2)
        assert out.device_name == "CPU:2" and out.committed
        np.testing.assert_array_equal(out, [1.0, 3.0, 5.0])


if __name__ == "__main__":
    print(json.dumps(programs(_api(sys.argv[1]))))
