"""Stage 10 rows: a lazy training step against eager PyTorch on the CPU, in the same run.

1. Steady state: one SGD step of the live anchor's MLP (784-256-10, batch 64) lazily, `sync()`
   and wait included, against the same step in eager CPU torch.
2. The part of that step that is ours alone: tracing the step into IR (every aten op through
   our kernels) and folding the graph hash, measured without the run. Goal: under 1 ms.
torch_xla 2.9 on a 2-vCPU VM (the fact sheet's anchor): 1.60 ms per lazy step, 0.50 ms eager.
"""

from __future__ import annotations

import time

import torch

from shared import torch_models
from shared.benchmarks.harness import Row, best_time
from stages.s10_lazy_tensors import graph_executor, torch_xla
from stages.s10_lazy_tensors.tensor import DeviceContextArena


def _stepper(device, batch):
    model = torch_models.mlp().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = batch[0].to(device), batch[1].to(device)

    def step():
        opt.zero_grad()
        loss = torch_models.loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def rows(quick: bool = False) -> list[Row]:
    repeat, number = (3, 5) if quick else (5, 20)
    batch = torch_models.batches("mlp", 1)[0]
    dev = torch_xla.device()
    lazy_step = _stepper(dev, batch)
    eager_step = _stepper("cpu", batch)

    def lazy():
        lazy_step()
        torch_xla.sync(wait=True)
    lazy_t = best_time(lazy, repeat=repeat, number=number)
    eager_t = best_time(eager_step, repeat=repeat, number=number)

    def trace_and_hash() -> float:
        start = time.perf_counter()
        lazy_step()
        tensors = DeviceContextArena.get_live_tensors()
        coll = graph_executor.collect_sync_tensors(
            tensors, graph_executor.SyncTensorsConfig())
        graph_executor.run_post_order([tensors[i].ir_value for i in coll.indices])
        spent = time.perf_counter() - start
        torch_xla.sync(wait=True)  # run it, untimed
        return spent
    trace_t = min(min(trace_and_hash() for _ in range(number)) for _ in range(repeat))
    return [
        Row(10, "MLP 784-256-10 SGD step, lazy + sync (steady state)", lazy_t, eager_t,
            "eager torch CPU", note="torch_xla 2.9 anchor: 1.60 ms lazy, 0.50 ms eager"),
        Row(10, "  of which tracing + graph hash (no run)", trace_t, None,
            note=f"goal < 1 ms; {trace_t / lazy_t:.0%} of the lazy step"),
    ]
