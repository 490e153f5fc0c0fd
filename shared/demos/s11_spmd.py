"""Stage 11 demo: SPMD. One jitted layer on a 4x2 mesh of CPU devices: where each block lives,
the annotations the compiler reads, the layout it chose; then a shard_map with its psum."""

from __future__ import annotations

import re

import numpy as np

import stages.s09_pjrt as s09
import stages.s11_spmd as s11
from stages.s02_tracing import numpy as jnp
from stages.s05_vmap.parallel import psum
from stages.s09_pjrt import runtime
from stages.s11_spmd import NamedSharding, P


def main() -> None:
    previous = runtime.set_computation_client(s11.cpu_client(8))  # a client of 8 CPU devices
    try:
        with s09.use_pjrt():
            _show()
    finally:
        runtime.set_computation_client(previous)


def _show() -> None:
    mesh = s11.make_mesh((4, 2), ("data", "model"), (s11.AxisType.Auto,) * 2)
    print(mesh)
    rows, cols = NamedSharding(mesh, P("data", None)), NamedSharding(mesh, P(None, "model"))
    layer = s11.jit(lambda x, w: jnp.tanh(jnp.dot(x, w)), in_shardings=(rows, cols))
    x = np.linspace(-1, 1, 16 * 6, dtype=np.float32).reshape(16, 6)
    w = np.linspace(-1, 1, 6 * 4, dtype=np.float32).reshape(6, 4)
    print("\nx is split by rows over 'data' (each block on the two devices of a 'model' row):")
    print(s11.visualize.sharding_text(x.shape, rows))
    text = layer.lower(x, w).as_text()
    print("what the compiler is told (Shardy's annotations in the module):")
    print("  " + re.search(r"sdy\.mesh @mesh = <[^>]*>", text).group(0))
    annotated = r"(%arg\d+: tensor<[^>]*>) \{sdy\.sharding = (#sdy\.sharding<.*?\]>)"
    for arg, sharding in re.findall(annotated, text):
        print(f"  {arg}  {sharding}")
    y = layer(x, w)
    print(f"\ny = tanh(x @ w): the partitioner chose {y.sharding.spec} for the output")
    print(f"  blocks: {sorted({s.data.shape for s in y.addressable_shards})} on "
          f"{len(y.addressable_shards)} devices; equal to numpy: "
          f"{np.allclose(np.asarray(y), np.tanh(x @ w), atol=1e-6)}")

    def block_sum(xb, w):  # one device's program: its rows only, then a sum over 'data'
        return psum(jnp.sum(jnp.dot(xb, w)), "data")

    total = s11.shard_map(block_sum, mesh=mesh, in_specs=(P("data", None), P()), out_specs=P())
    print(f"\nshard_map with psum over 'data': {float(total(x, w)):.5f} "
          f"(numpy: {float(np.sum(x @ w)):.5f})")
