"""Stage 12 demo, the course's finale: a character-level transformer trained on Shakespeare
through every stage, on the default PJRT device (PJRT_DEVICE=CUDA or TPU to move it).

Prints the device, the model, the size of the step's jaxpr and StableHLO with the time each
station took, a progress bar, jit's cache counters, the loss curve (and writes it as PNG and
SVG under build/finale/), and a sample of generated text. Then the first steps again from the
same params and batches, through PyTorch lazy tensors (stage 10) and through data-parallel
SPMD on 4 CPU devices (stage 11), their losses beside the jit run's (shared/finale_legs.py).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import stages.s12_system as ujax
from shared import char_transformer as ct
from shared import finale_legs
from shared.diagrams.curves import ascii_curve, loss_curve_svg, write_png
from stages.s07_caches import util

TARGET = 2.1  # mean loss of the last 20 steps, nats per character (uniform over 62: 4.13)
OUT = Path("build") / "finale"
LEG_STEPS = 8  # steps of the stage-10 and stage-11 legs


def count_equations(jaxpr: Any) -> int:
    """Equations of a jaxpr and of every jaxpr inside it (jit, cond, scan bodies)."""
    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
    total = 0
    for eqn in jaxpr.eqns:
        total += 1
        for value in eqn.params.values():
            for sub in value if isinstance(value, tuple | list) else [value]:
                if hasattr(sub, "eqns") or hasattr(getattr(sub, "jaxpr", None), "eqns"):
                    total += count_equations(sub)
    return total


def _bar(done: int, total: int, loss: float, ms: float, width: int = 30) -> str:
    filled = round(width * done / total)
    return (f"\r  [{'#' * filled}{'.' * (width - filled)}] {done:>4}/{total}  "
            f"loss {loss:6.3f}  {ms:6.1f} ms/step")


def _counters() -> dict[str, tuple[int, int]]:
    return {n: (c.hits, c.misses) for n, c in util.registry.items()}


def train(config: ct.Config, *, quiet: bool = False) -> dict[str, Any]:
    """The finale's run; returns what it measured (the test and the docs call it small)."""
    data, chars = ct.load_text()
    model = ct.CharTransformer(len(chars), config)
    key = ujax.random.PRNGKey(config.seed)
    say = (lambda *a, **k: None) if quiet else print
    start = time.perf_counter()
    params = model.init(key, np.zeros((1, config.context), np.int32))
    init_params = ujax.device_get(params)  # kept for the stage-10 and stage-11 legs
    tx = ujax.optim.adam(config.learning_rate)
    opt_state = tx.init(params)
    say(f"model: {ujax.nn.param_count(params):,} params; init {time.perf_counter() - start:.1f} s")
    for name in sorted(params):
        say(f"  {name:<9} {ujax.nn.param_count(params[name]):>7,}")

    step = ct.make_train_step(model, tx)
    data_key = ujax.random.fold_in(key, 1)
    x, y = ct.get_batch(data, ct.batch_starts(ujax.random, data_key, 0, len(data), config),
                        config.context)
    t0 = time.perf_counter()
    traced = step.trace(params, opt_state, x, y)
    t1 = time.perf_counter()
    lowered = traced.lower()
    t2 = time.perf_counter()
    lowered.compile()
    t3 = time.perf_counter()
    hlo = lowered.as_text()
    stats = {"equations": count_equations(traced.jaxpr), "stablehlo_lines": hlo.count("\n"),
             "stablehlo_chars": len(hlo), "trace_s": t1 - t0, "lower_s": t2 - t1,
             "compile_s": t3 - t2}
    say("\none training step (forward, backward, Adam) as a program:")
    say(f"  jaxpr      {stats['equations']:>6,} equations           traced in   "
        f"{stats['trace_s']:6.2f} s")
    say(f"  StableHLO  {stats['stablehlo_lines']:>6,} lines, {len(hlo) / 1024:,.0f} KiB"
        f"     lowered in  {stats['lower_s']:6.2f} s")
    say(f"  executable  compiled by XLA through PJRT          in  {stats['compile_s']:6.2f} s")

    # the data order, drawn before training so the counters below count only the step
    starts = [ct.batch_starts(ujax.random, data_key, k, len(data), config)
              for k in range(config.steps)]
    before = _counters()
    losses: list[float] = []
    say(f"\ntraining {config.steps} steps, batch {config.batch} x {config.context} characters:")
    tty = sys.stdout.isatty()
    t_train = time.perf_counter()
    for k in range(config.steps):
        x, y = ct.get_batch(data, starts[k], config.context)
        params, opt_state, loss = step(params, opt_state, x, y)
        losses.append(float(loss))
        last = k == config.steps - 1
        if not quiet and ((tty and k % 10 == 9) or k % 100 == 99 or last):
            ms = 1e3 * (time.perf_counter() - t_train) / (k + 1)
            bar = _bar(k + 1, config.steps, losses[-1], ms)
            sys.stdout.write(bar if tty else bar[1:] + "\n")
            sys.stdout.flush()
    stats["train_s"] = time.perf_counter() - t_train
    if tty and not quiet:
        print()
    after = _counters()
    stats["cache"] = {n: (after[n][0] - before[n][0], after[n][1] - before[n][1])
                      for n in ("signature", "trace", "lowering", "executable")}
    return {"losses": losses, "params": params, "model": model, "chars": chars,
            "data": data, "key": key, "data_key": data_key, "init_params": init_params,
            "stats": stats, "start": start}


def main() -> None:
    config = ct.Config(steps=int(os.environ.get("FINALE_STEPS", ct.Config.steps)))
    with ujax.use_pjrt():
        devices = ujax.devices()
        print(f"PJRT_DEVICE={os.environ.get('PJRT_DEVICE', 'CPU')}: {ujax.default_backend()}, "
              f"devices {devices}")
        run = train(config)
        losses, stats = run["losses"], run["stats"]
        print("jit's caches during training, (hits, misses):",
              ", ".join(f"{n} {v}" for n, v in stats["cache"].items()))
        print("\nloss per step:")
        print(ascii_curve(losses))
        OUT.mkdir(parents=True, exist_ok=True)
        png = write_png(losses, OUT / "loss_curve.png", target=TARGET)
        (OUT / "loss_curve.svg").write_text(loss_curve_svg(losses, "training loss",
                                                           target=TARGET))
        print(f"  saved {png} and {OUT / 'loss_curve.svg'}")
        index = {c: i for i, c in enumerate(run["chars"])}
        prompt = np.array([index[c] for c in "ROMEO:\n"], np.int32)
        ids = ct.sample(run["model"], run["params"], prompt, 200,
                        ujax.random.fold_in(run["key"], 2))
        print("\na sample, prompted with 'ROMEO:':\n")
        print("ROMEO:\n" + "".join(run["chars"][i] for i in ids))
    final = float(np.mean(losses[-20:]))
    total = time.perf_counter() - run["start"]
    verdict = "below" if final < TARGET else "NOT below"
    print(f"\nfinal loss {final:.3f} (mean of the last 20 steps), {verdict} the target {TARGET}; "
          f"{stats['train_s'] / config.steps * 1e3:.1f} ms/step; the finale took {total:.0f} s")
    steps = min(LEG_STEPS, config.steps)
    print(f"\nthe first {steps} steps again, from the same initial params and batches, through "
          f"PyTorch\nlazy tensors (stage 10) and data-parallel SPMD on 4 CPU devices (stage 11):")
    start = time.perf_counter()
    legs = finale_legs.run_legs(run, config, steps)
    print(finale_legs.legs_report(legs, config))
    print(f"  the two legs took {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
