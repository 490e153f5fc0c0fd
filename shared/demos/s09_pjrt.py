"""Stage 9 demo: jit on PJRT. One training step crossing the seam, then the metrics report."""

from __future__ import annotations

import jax
import jax.numpy as jjnp

import stages.s01_pytrees as s01
import stages.s07_caches as s07
import stages.s09_pjrt as s09
from shared import mlp
from shared.crossings import PJRT_CALLS, record_crossings
from stages.s02_tracing import numpy as jnp
from stages.s04_autodiff import value_and_grad


def main() -> None:
    client = s09.get_computation_client()
    print(f"PJRT_DEVICE={s09.device_type()}: {client!r}, devices {client.get_all_devices()}")
    print(f"platform version: {client.get_platform_version()}\n")
    sizes = (784, 128, 10)
    params, (x, y) = mlp.init_params(sizes), mlp.batch(32, sizes)
    with s09.use_pjrt():
        step = s07.jit(mlp.make_train_step(jnp, value_and_grad, s01.tree_map))
        for k in range(2):
            (params, loss), crossings = record_crossings(
                client, lambda p=params: step(p, x, y))
            print(f"step {k}: the call returned; loss ready: {loss.is_ready()}")
            value, reads = record_crossings(client, lambda v=loss: float(v))
            print(f"  loss = {value:.6f}; the seam was crossed {len(crossings + reads)} times:")
            for c in crossings + reads:
                print(f"    {c.method:<22} {PJRT_CALLS[c.method]:<30} {', '.join(c.stamped)}")
    theirs = jax.jit(mlp.make_train_step(jjnp, jax.value_and_grad, jax.tree_util.tree_map))
    q = mlp.init_params(sizes)
    for _ in range(2):
        q, jax_loss = theirs(q, x, y)
    print(f"\njax.jit after two steps: loss {float(jax_loss):.6f} (ours {float(loss):.6f})")
    print("\nmetrics_report(), the client's section:\n")
    print(s09.metrics.short_metrics_report())
