"""The finale's two further legs: the same model, initial params and batches as the jit run,
stepped through stage 10's lazy tensors and through stage 11's data-parallel SPMD.

- `lazy_leg`: the transformer written with torch ops (`torch_apply`), its params the jit run's
  initial values as lazy tensors, trained by `torch.optim.Adam` with the same settings as our
  `optim.adam`; every step ends with `sync()`, so stage 10 compiles one graph and replays it.
- `spmd_leg`: our training step itself, jitted by stage 11 with the batch split over a
  ("data",) mesh of CPU devices and the params and optimizer state replicated; the partitioner
  turns the mean over the batch into a cross-device sum.

Both return the losses of each step, to set beside the single-device jit run's.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

import stages.s12_system as ujax
from shared import char_transformer as ct


def leg_batches(data: np.ndarray, key: Any, config: ct.Config, steps: int
                ) -> list[tuple[np.ndarray, np.ndarray]]:
    """The first `steps` batches of the jit run: starts drawn from `key` (the run's data key)."""
    return [ct.get_batch(data, ct.batch_starts(ujax.random, key, k, len(data), config),
                         config.context) for k in range(steps)]


# ------------------------------------------------------------------ stage 10: lazy tensors

def torch_apply(p: dict, ids: Any, config: ct.Config) -> Any:
    """CharTransformer's forward pass in torch ops, over a nested dict of tensors."""
    import torch
    import torch.nn.functional as F

    c, length = config, ids.shape[-1]

    def dense(q: dict, x: Any) -> Any:
        return x @ q["kernel"] + q["bias"]

    def norm(q: dict, x: Any) -> Any:  # our LayerNorm's epsilon, 1e-6 (torch's is 1e-5)
        return F.layer_norm(x, (c.d_model,), q["scale"], q["bias"], eps=1e-6)

    def heads(y: Any) -> Any:  # (batch, length, d) -> (batch, heads, length, d / heads)
        return y.reshape(*y.shape[:-1], c.heads, c.d_model // c.heads).transpose(-2, -3)

    x = F.embedding(ids, p["embed"]["embedding"]) + p["pos"][:length]
    mask = torch.ones(length, length, dtype=torch.bool).tril().to(ids.device)
    for i in range(c.layers):
        b = p[f"block_{i}"]
        h = norm(b["ln1"], x)
        q, k, v = (heads(dense(b["attn"][n], h)) for n in ("query", "key", "value"))
        logits = q @ k.transpose(-1, -2) / math.sqrt(c.d_model // c.heads)
        logits = torch.where(mask, logits, torch.full_like(logits, -1e9))
        att = (torch.softmax(logits, -1) @ v).transpose(-2, -3)
        x = x + dense(b["attn"]["out"], att.reshape(*att.shape[:-2], c.d_model))
        x = x + dense(b["proj"], F.gelu(dense(b["fc"], norm(b["ln2"], x)), approximate="tanh"))
    return dense(p["head"], norm(p["ln_f"], x))


def torch_loss(p: dict, x: Any, y: Any, config: ct.Config) -> Any:
    """Mean negative log-likelihood of the next characters."""
    import torch

    log_p = torch.log_softmax(torch_apply(p, x, config), -1)
    return -log_p.gather(-1, y.unsqueeze(-1)).mean()


def lazy_leg(params: dict, batches: Sequence[tuple[np.ndarray, np.ndarray]],
             config: ct.Config) -> dict[str, Any]:
    """Train from `params` (numpy) on `batches` on stage 10's lazy device. Returns the losses,
    the timings, and stage 10's counters over the steps: compiles, cached compiles, syncs,
    and the ops that fell back to the CPU."""
    import torch

    from stages.s10_lazy_tensors import metrics, torch_xla

    start = time.perf_counter()
    dev = torch_xla.device()
    tparams = ujax.tree_util.tree_map(
        lambda a: torch.tensor(np.array(a)).to(dev).requires_grad_(), params)
    leaves = ujax.tree_util.tree_leaves(tparams)
    opt = torch.optim.Adam(leaves, lr=config.learning_rate, betas=(0.9, 0.999), eps=1e-8)
    # torch's Adam makes its moments as fresh zeros inside the first step(), which would make
    # the first step's graph differ from every later one; made here, as optax's init makes
    # them, and synced to device data, every step is one graph
    for p in leaves:
        opt.state[p] = {"step": torch.tensor(0.0), "exp_avg": torch.zeros_like(p),
                        "exp_avg_sq": torch.zeros_like(p)}
    torch_xla.sync()
    names = ("UncachedCompile", "CachedCompile", "MarkStep")
    before = {n: metrics.counter_value(n) or 0 for n in names}
    fallbacks = {n: metrics.counter_value(n) for n in metrics.executed_fallback_ops()}
    losses, times = [], []
    for x, y in batches:
        t0 = time.perf_counter()
        x = torch.from_numpy(x.astype(np.int64)).to(dev)
        y = torch.from_numpy(y.astype(np.int64)).to(dev)
        opt.zero_grad()
        loss = torch_loss(tparams, x, y, config)
        loss.backward()
        opt.step()
        torch_xla.sync(wait=True)
        losses.append(loss.detach())
        times.append(time.perf_counter() - t0)
    values = [float(v.cpu()) for v in losses]
    after = {n: metrics.counter_value(n) or 0 for n in names}
    return {"losses": values, "seconds": time.perf_counter() - start, "first_step_s": times[0],
            "step_ms": 1e3 * float(np.median(times[1:] or times)),
            "compiles": after["UncachedCompile"] - before["UncachedCompile"],
            "cached_compiles": after["CachedCompile"] - before["CachedCompile"],
            "syncs": after["MarkStep"] - before["MarkStep"],
            "fallbacks": [n for n in metrics.executed_fallback_ops()
                          if metrics.counter_value(n) != fallbacks.get(n)]}


# ------------------------------------------------------------------ stage 11: SPMD

def spmd_leg(model: ct.CharTransformer, params: dict,
             batches: Sequence[tuple[np.ndarray, np.ndarray]], config: ct.Config,
             devices: int = 4) -> dict[str, Any]:
    """Our training step jitted by stage 11 on a mesh of `devices` CPU devices: each batch
    split along its first axis over "data", params and optimizer state replicated. Runs on a
    client of its own, put back to the process's client at the end."""
    import stages.s09_pjrt as s09
    import stages.s11_spmd as s11
    from stages.s09_pjrt import runtime

    start = time.perf_counter()
    client = s11.cpu_client(devices)
    previous = runtime.set_computation_client(client)
    try:
        with s09.use_pjrt():
            mesh = s11.make_mesh((devices,), ("data",), (s11.AxisType.Auto,))  # propagated
            replicated = s11.NamedSharding(mesh, s11.P())
            split = s11.NamedSharding(mesh, s11.P("data", None))
            tx = ujax.optim.adam(config.learning_rate)
            step = s11.jit(ct.make_step(model, tx),
                           in_shardings=(replicated, replicated, split, split),
                           out_shardings=(replicated, replicated, replicated))
            state = s11.device_put((params, tx.init(params)), replicated)
            losses, times = [], []
            for x, y in batches:
                t0 = time.perf_counter()
                x, y = s11.device_put((x, y), split)
                *state, loss = step(*state, x, y)
                losses.append(float(loss))
                times.append(time.perf_counter() - t0)
            blocks = [(s.device.id, s.index[0].start, s.index[0].stop)
                      for s in x.addressable_shards]
    finally:
        runtime.set_computation_client(previous)
    return {"losses": losses, "seconds": time.perf_counter() - start, "first_step_s": times[0],
            "step_ms": 1e3 * float(np.median(times[1:] or times)), "batch_blocks": blocks}


def compare(reference: Sequence[float], other: Sequence[float]) -> float:
    """The largest absolute difference of two runs' losses, step by step."""
    return float(np.max(np.abs(np.asarray(reference) - np.asarray(other))))


def run_legs(run: dict[str, Any], config: ct.Config, steps: int = 8) -> dict[str, Any]:
    """Both legs for the first `steps` steps of a finale run (the dict `train` returns: its
    model, initial params, data and data key), beside that run's own losses."""
    batches = leg_batches(run["data"], run["data_key"], config, steps)
    return {"jit": list(run["losses"][:steps]),
            "lazy": lazy_leg(run["init_params"], batches, config),
            "spmd": spmd_leg(run["model"], run["init_params"], batches, config)}


def legs_report(legs: dict[str, Any], config: ct.Config) -> str:
    """The three runs' losses side by side, their largest differences, and what each leg took."""
    jit, lazy, spmd = legs["jit"], legs["lazy"], legs["spmd"]
    devices = len(spmd["batch_blocks"])
    lines = [f"  step  {'our jit, 1 device':>18}  {'lazy tensors (10)':>18}  "
             f"{f'SPMD, {devices} CPUs (11)':>19}"]
    lines += [f"  {k:>4}  {a:>18.6f}  {b:>18.6f}  {c:>19.6f}"
              for k, (a, b, c) in enumerate(zip(jit, lazy["losses"], spmd["losses"],
                                                strict=True))]
    lines.append(f"  largest |difference| from our jit: lazy {compare(jit, lazy['losses']):.1e}, "
                 f"SPMD {compare(jit, spmd['losses']):.1e}")
    fallbacks = ", ".join(lazy["fallbacks"]) or "none"
    lines += [
        "  lazy tensors: torch ops and torch.optim.Adam on torch's lazy device, a sync() per step",
        f"    {lazy['compiles']} compile{'s' * (lazy['compiles'] != 1)}, "
        f"{lazy['cached_compiles']} cached compiles, CPU "
        f"fallbacks: {fallbacks}",
        f"    first step {lazy['first_step_s']:.1f} s (trace, compile), then "
        f"{lazy['step_ms']:.0f} ms/step ({lazy['seconds']:.1f} s)",
        f"  SPMD: our step, the batch split {config.batch // devices} rows per device over a "
        f"('data',) mesh of {devices}",
        f"    params and Adam's state replicated, one program compiled for {devices} partitions",
        f"    first step {spmd['first_step_s']:.1f} s (trace, lower, compile), then "
        f"{spmd['step_ms']:.0f} ms/step ({spmd['seconds']:.1f} s)"]
    return "\n".join(lines)
