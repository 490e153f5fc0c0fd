"""Stage 10 demo: lazy tensors. The anchor's MLP trained lazily, its IR, its counts, its report."""

from __future__ import annotations

import time

import stages.s10_lazy_tensors as lt
from shared import torch_models
from stages.s10_lazy_tensors import metrics


def main() -> None:
    dev = lt.device()
    data = torch_models.batches("mlp", 20)
    _, cpu_loss = torch_models.train(torch_models.mlp(), data)
    start = time.perf_counter()
    model, loss = torch_models.train(torch_models.mlp(), data, dev, sync=lt.sync,
                                     on_ready=metrics.clear_all)
    elapsed = time.perf_counter() - start
    print(f"MLP 784-256-10, 20 SGD steps on {dev}: loss {float(loss.detach().cpu()):.6f} "
          f"(eager CPU torch: {float(cpu_loss.detach()):.6f}) in {elapsed:.2f} s")
    print(f"UncachedCompile {metrics.counter_value('UncachedCompile')}, CachedCompile "
          f"{metrics.counter_value('CachedCompile')} (torch_xla 2.9 on the same loop: 1 and 19)")
    x = data[0][0][:2].to(dev)
    print("\nthe first layer on two rows, pending:")
    print(lt.get_tensors_text([model[0](x)]))
    print(metrics.short_metrics_report())


if __name__ == "__main__":
    main()
