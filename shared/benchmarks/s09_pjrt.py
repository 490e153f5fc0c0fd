"""Stage 9 rows: jit on PJRT against jax.jit on the same kind of device (PJRT_DEVICE), in one run.

1. A cache hit of a tiny function, its argument already on the device: our whole jit call
   (the fast path, fastpath.py, then our client's execute), jax.jit's (its C++ fast path), and
   the floor both stand on: one raw `execute_sharded` of the same compiled program, its output
   made an array by jaxlib's C++ result handler (`consume_with_handlers`, as JAX's does); then
   the same call through stage 7's and 9's layers, the fast path off.
2. One training step of an MLP 784-512-512-10 at batch 128 (shared/mlp.py), parameters kept
   on the device between steps; both sides run the same StableHLO, so this is dispatch
   overhead against XLA's compute.
3. Cold start: trace, lower and compile that step from a fresh function, ours against JAX's.
4. Warm start: a new process whose persistent cache holds the step, against a new process
   whose cache is empty (both ours; first call, measured inside the process).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap

import jax
import jax.numpy as jjnp
import numpy as np

import stages.s01_pytrees as s01
import stages.s07_caches as s07
import stages.s09_pjrt as s09
from shared import mlp
from shared.benchmarks.harness import Row, best_time, best_times
from stages.s02_tracing import numpy as jnp
from stages.s04_autodiff import value_and_grad
from stages.s07_caches import api_util

X = np.ones(8, np.float32)


def _tiny(ns):
    return lambda x: ns.sin(x) * 2.0 + 1.0


def _dispatch_rows(repeat: int, number: int) -> list[Row]:
    ours = s07.jit(_tiny(jnp))
    x = s09.device_put(X)
    ours(x).block_until_ready()
    theirs = jax.jit(_tiny(jjnp))
    xj = jax.device_put(X)
    theirs(xj).block_until_ready()
    executable = ours.lower(x).compile().runtime_executable()  # the same program, compiled
    raw, buffers = executable.computation.executable, [x.data_on(x.device_name).buffer]
    out = raw.execute_sharded(buffers).disassemble_into_single_device_arrays()[0][0]
    handlers = [s09.pjrt_computation_client.result_handler(out)]

    def floor():
        return raw.execute_sharded(buffers).consume_with_handlers(handlers)

    ours_t, jax_t, floor_t = best_times(lambda: ours(x), lambda: theirs(xj), floor,
                                        repeat=repeat, number=number)
    previous = api_util.set_fastpath(None)  # the layers alone, against jax.jit again
    try:
        layers_t, jax_again = best_times(lambda: ours(x), lambda: theirs(xj), repeat=repeat,
                                         number=number)
    finally:
        api_util.set_fastpath(previous)
    return [
        Row(9, "jit cache hit through PJRT, argument on the device", ours_t, jax_t, "jax.jit",
            note=f"goal <= 2x; the fast path; the raw execute alone: {floor_t * 1e6:.1f} us"),
        Row(9, "  the same, against one raw execute_sharded (the floor)", ours_t, floor_t,
            "raw PJRT execute", note="what stages 7 and 9 add in Python"),
        Row(9, "  the same through the layers (no fast path)", layers_t, jax_again, "jax.jit",
            note="what fastpath.py folds away"),
    ]


def _steps():
    """The MLP's training step written on our stages and on JAX (fresh functions each call)."""
    ours = mlp.make_train_step(jnp, value_and_grad, s01.tree_map)
    theirs = mlp.make_train_step(jjnp, jax.value_and_grad, jax.tree_util.tree_map)
    return ours, theirs


def _training_rows(repeat: int, steps: int) -> list[Row]:
    params, (x, y) = mlp.init_params(), mlp.batch(128)
    ours_step, theirs_step = _steps()
    ours, theirs = s07.jit(ours_step), jax.jit(theirs_step)
    p = [s01.tree_map(s09.device_put, params)]
    q = [jax.device_put(params)]
    xd, yd, xj, yj = s09.device_put(x), s09.device_put(y), jax.device_put(x), jax.device_put(y)
    loss_ours = float(ours(p[0], xd, yd)[1])
    loss_jax = float(theirs(q[0], xj, yj)[1])
    assert loss_ours == loss_jax  # one program, one compiler: the same number

    def run_ours():
        for _ in range(steps):
            p[0], loss = ours(p[0], xd, yd)
        loss.block_until_ready()

    def run_jax():
        for _ in range(steps):
            q[0], loss = theirs(q[0], xj, yj)
        loss.block_until_ready()

    ours_t, jax_t = (t / steps for t in best_times(run_ours, run_jax, repeat=repeat))

    def cold_ours():  # a fresh step function: nothing cached for it
        s07.jit(_steps()[0]).lower(params, x, y).compile()

    def cold_jax():
        jax.jit(_steps()[1]).lower(params, x, y).compile()

    return [
        Row(9, "MLP 784-512-512-10 training step, batch 128", ours_t, jax_t, "jax.jit",
            note="goal <= 1.05x; same loss to the bit"),
        Row(9, "cold start of that step: trace + lower + compile", best_time(cold_ours, repeat=2),
            best_time(cold_jax, repeat=2), "jax.jit(...).lower().compile()",
            note="a fresh function each time"),
    ]


_WORKER = textwrap.dedent("""
    import json, sys, time
    t0 = time.perf_counter()
    import stages.s01_pytrees as s01, stages.s07_caches as s07, stages.s09_pjrt as s09
    from shared import mlp
    from stages.s02_tracing import config, numpy as jnp
    from stages.s04_autodiff import value_and_grad
    config.update("jax_compilation_cache_dir", sys.argv[1])
    config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    params, (x, y) = mlp.init_params(), mlp.batch(128)
    with s09.use_pjrt():
        start = time.perf_counter()
        p, loss = s07.jit(mlp.make_train_step(jnp, value_and_grad, s01.tree_map))(params, x, y)
        loss.block_until_ready()
        print(json.dumps({"first_call": time.perf_counter() - start}))
""")


def _first_call(cache: str) -> float:
    env = {"PJRT_DEVICE": "CPU", **os.environ,  # the device this run measures
           "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run([sys.executable, "-c", _WORKER, cache], env=env, capture_output=True,
                          text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return json.loads(done.stdout.splitlines()[-1])["first_call"]


def _warm_row(repeat: int) -> Row:
    cold = warm = float("inf")
    for _ in range(repeat):
        cache = tempfile.mkdtemp()
        cold = min(cold, _first_call(cache))  # empty: trace, lower, compile, write
        warm = min(warm, _first_call(cache))  # holds the executable: trace, lower, read
    return Row(9, "warm start in a new process: first training step", warm, cold,
               "ours, cache empty", note="our persistent cache holds the executable")


def rows(quick: bool = False) -> list[Row]:
    repeat, number = (3, 200) if quick else (7, 2000)
    with s09.use_pjrt(eager_ops=False):
        out = _dispatch_rows(repeat, number)
        out += _training_rows(3 if quick else 11, 5 if quick else 20)
    return out + [_warm_row(1 if quick else 2)]
