"""Stage 11's timings in a process of their own (JAX's CPU device count is fixed when its
backend starts): `python -m shared.benchmarks._spmd_worker QUICK` prints JSON rows.

A data-parallel MLP step (shared/mlp.py) on 1, 2 and 4 CPU devices: parameters replicated, the
batch split over the devices, the same shardings on both sides; parameters stay on the devices
between steps.
"""

from __future__ import annotations

import json
import sys

import jax

jax.config.update("jax_num_cpu_devices", 4)
jax.config.update("jax_platforms", "cpu")

import jax.numpy as jjnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import AxisType  # noqa: E402
from jax.sharding import NamedSharding as JNS  # noqa: E402
from jax.sharding import PartitionSpec as JP  # noqa: E402

import stages.s01_pytrees as s01  # noqa: E402
import stages.s09_pjrt as s09  # noqa: E402
import stages.s11_spmd as s11  # noqa: E402
from shared import mlp  # noqa: E402
from shared.benchmarks.harness import best_times  # noqa: E402
from stages.s02_tracing import numpy as jnp  # noqa: E402
from stages.s04_autodiff import value_and_grad  # noqa: E402
from stages.s09_pjrt import runtime  # noqa: E402


def _row(n: int, params: list, x: np.ndarray, y: np.ndarray, repeat: int, number: int
         ) -> dict:
    mesh = s11.make_mesh((n,), ("data",), (s11.AxisType.Auto,))  # as JAX's below
    rep, split = s11.NamedSharding(mesh, s11.P()), s11.NamedSharding(mesh, s11.P("data"))
    ours = s11.jit(mlp.make_train_step(jnp, value_and_grad, s01.tree_map),
                   in_shardings=(rep, split, split), out_shardings=(rep, rep))
    p = [s11.device_put(params, rep)]
    xd, yd = s11.device_put(x, split), s11.device_put(y, split)
    jmesh = jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,),
                          devices=jax.devices()[:n])
    jrep, jsplit = JNS(jmesh, JP()), JNS(jmesh, JP("data"))
    theirs = jax.jit(mlp.make_train_step(jjnp, jax.value_and_grad, jax.tree_util.tree_map),
                     in_shardings=(jrep, jsplit, jsplit), out_shardings=(jrep, jrep))
    q = [jax.device_put(params, jrep)]
    xj, yj = jax.device_put(x, jsplit), jax.device_put(y, jsplit)

    def step_ours() -> None:
        p[0], loss = ours(p[0], xd, yd)
        loss.block_until_ready()

    def step_jax() -> None:
        q[0], loss = theirs(q[0], xj, yj)
        loss.block_until_ready()

    ours_t, jax_t = best_times(step_ours, step_jax, repeat=repeat, number=number)
    same = np.allclose(np.asarray(ours(p[0], xd, yd)[1]), np.asarray(theirs(q[0], xj, yj)[1]),
                       rtol=1e-4)
    return dict(n=n, ours=ours_t, jax=jax_t, same=bool(same))


def main(quick: bool) -> list[dict]:
    sizes = (64, 128, 128, 10) if quick else (784, 512, 512, 10)
    batch = 64 if quick else 512
    repeat, number = (3, 3) if quick else (5, 10)
    params, (x, y) = mlp.init_params(sizes), mlp.batch(batch, sizes)
    runtime.set_computation_client(s11.cpu_client(4))
    with s09.use_pjrt():
        return [dict(_row(n, params, x, y, repeat, number), sizes=sizes, batch=batch)
                for n in (1, 2, 4)]


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:] == ["1"])))
