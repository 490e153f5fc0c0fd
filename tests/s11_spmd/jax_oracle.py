"""JAX's side of shared/spmd_programs.py, in a process of its own (the number of CPU devices
is fixed when JAX's backend starts): `python jax_oracle.py N` prints JSON."""

from __future__ import annotations

import contextlib
import io
import json
import sys
import types

import jax

N = int(sys.argv[1])
jax.config.update("jax_num_cpu_devices", N)
jax.config.update("jax_platforms", "cpu")

import jax.numpy as jnp  # noqa: E402
from jax.sharding import AxisType, NamedSharding, PartitionSpec  # noqa: E402

from shared.spmd_programs import run_all  # noqa: E402


@contextlib.contextmanager
def use_shardy(flag: bool):
    prev = jax.config.jax_use_shardy_partitioner
    jax.config.update("jax_use_shardy_partitioner", flag)
    try:
        yield
    finally:
        jax.config.update("jax_use_shardy_partitioner", prev)


def sharding_text(shape, sharding) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        jax.debug.visualize_sharding(shape, sharding, use_color=False)
    return out.getvalue().rstrip("\n") + "\n"


api = types.SimpleNamespace(
    sharding_text=sharding_text,
    jit=jax.jit, P=PartitionSpec, NamedSharding=NamedSharding,
    make_mesh=lambda shape, names: jax.make_mesh(shape, names,
                                                 axis_types=(AxisType.Auto,) * len(names)),
    with_sharding_constraint=jax.lax.with_sharding_constraint, device_put=jax.device_put,
    np=jnp, value_and_grad=jax.value_and_grad, grad=jax.grad, tree_map=jax.tree_util.tree_map,
    vmap=jax.vmap, make_jaxpr=jax.make_jaxpr, lax=jax.lax,
    shard_map=jax.shard_map, collectives=jax.lax, use_shardy=use_shardy,
    explicit_mesh=jax.make_mesh, set_mesh=jax.set_mesh, reshard=jax.sharding.reshard,
    typeof=jax.typeof)

if __name__ == "__main__":
    print(json.dumps(run_all(api, N)))
