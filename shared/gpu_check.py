"""`make gpu-check`: the course's jit on an NVIDIA GPU through our PJRT client, against jax.jit.

    python -m shared.gpu_check              PJRT_DEVICE=CUDA: the stage 2-6 corpus, an MLP
                                            784-512-512-10 training step and the finale's
                                            transformer training step, one table
    python -m shared.gpu_check --device CPU the same on the CPU client (to try the script)
    python -m shared.gpu_check --quick      a few programs and short timings

Each row: a program jitted by stage 7 and run through stage 9's client, and the same program
under jax.jit on the same device. "values" says whether the outputs are the same bits, or how
far apart they are (our StableHLO is JAX's for most programs, but JAX has GPU-only lowering
rules that ours has not); "ms/call" times a run of calls, waiting for the last.
Without a GPU this prints why and exits with status 0: there is nothing to check.
Exit status 1 means a program failed or disagreed with jax.jit.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

# two clients share the GPU (JAX's and ours): neither may take 75% of it up front
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax  # noqa: E402
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RTOL, ATOL = 1e-4, 1e-5


def _jax_device(device: str) -> Any:
    """JAX's first device of the platform, or None (with the reason printed) if there is none."""
    platform = {"CUDA": "gpu", "CPU": "cpu"}[device]
    try:
        return jax.devices(platform)[0]
    except RuntimeError as err:
        from stages.s09_pjrt import pjrt_registry

        found, searched = pjrt_registry.search_cuda_plugin()
        plugin = f"found at {found}" if found else "not installed (searched: " + \
            "; ".join(searched) + ")"
        print(f"\ngpu-check: SKIPPED, no NVIDIA GPU here. JAX says: {err}.\n"
              f"The CUDA PJRT plugin is {plugin}.\n"
              "Nothing to check on this machine; run `make gpu-check PYTHON=/path/to/python` "
              "on one with an NVIDIA GPU and `pip install jax[cuda13]`.")
        return None


def _corpus() -> list[Any]:
    """The stage 2, 3 and 6 corpora, as stage 8's tests hold them (each written twice)."""
    path = ROOT / "tests" / "s08_lowering" / "conftest.py"
    spec = importlib.util.spec_from_file_location("s08_corpus_for_gpu_check", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.CORPUS


def _leaves(out: Any) -> list[np.ndarray]:
    return [np.asarray(x) for x in jax.tree_util.tree_leaves(out)]


def _time_ms(fn: Any, calls: int) -> float:
    jax.block_until_ready(fn())  # warm: compiled, caches filled
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(calls - 1):
            fn()
        jax.block_until_ready(fn())
        best = min(best, (time.perf_counter() - start) / calls)
    return best * 1e3


def _agreement(ours: list[np.ndarray], theirs: list[np.ndarray]) -> tuple[bool, str]:
    if len(ours) != len(theirs):
        return False, f"{len(ours)} outputs, jax.jit {len(theirs)}"
    worst = 0.0
    for a, e in zip(ours, theirs, strict=True):
        if a.shape != e.shape or a.dtype != e.dtype:
            return False, f"{a.dtype}{list(a.shape)} vs {e.dtype}{list(e.shape)}"
        if not np.allclose(a, e, rtol=RTOL, atol=ATOL, equal_nan=True):
            return False, f"differ by {np.max(np.abs(a.astype(float) - e)):.3g}"
        if a.size and a.dtype.kind in "fc":
            worst = max(worst, float(np.max(np.abs(a - e) / (np.abs(e) + ATOL))))
    same = all(np.array_equal(a, e, equal_nan=True) for a, e in zip(ours, theirs, strict=True))
    return True, "equal bits" if same else f"close (rel {worst:.1e})"


def _corpus_row(program: Any, device: Any, quick: bool) -> tuple[str, bool, str, float, float]:
    import stages.s07_caches as s07

    ours = s07.jit(program.ours, static_argnums=program.static_argnums)
    theirs = jax.jit(program.theirs, static_argnums=program.static_argnums)
    on_device = tuple(a if i in program.static_argnums else jax.device_put(a, device)
                      for i, a in enumerate(program.args))
    ok, values = _agreement(_leaves(ours(*program.args)), _leaves(theirs(*on_device)))
    calls = 5 if quick else 50
    return (program.name, ok, values, _time_ms(lambda: ours(*program.args), calls),
            _time_ms(lambda: theirs(*program.args), calls))


def _mlp_row(batch_size: int, device: Any, quick: bool) -> tuple[str, bool, str, float, float]:
    """One SGD step of the MLP, parameters and batch kept on the device between steps."""
    import stages.s01_pytrees as s01
    import stages.s07_caches as s07
    import stages.s09_pjrt as s09
    from shared import mlp
    from stages.s02_tracing import numpy as jnp
    from stages.s04_autodiff import value_and_grad

    ours_step = s07.jit(mlp.make_train_step(jnp, value_and_grad, s01.tree_map))
    theirs_step = jax.jit(mlp.make_train_step(jax.numpy, jax.value_and_grad,
                                              jax.tree_util.tree_map))
    params, (x, y) = mlp.init_params(), mlp.batch(batch_size)
    xd, yd = s09.device_put(x), s09.device_put(y)
    xj, yj = jax.device_put((x, y), device)
    p, q = [params], [jax.device_put(params, device)]
    (p1, l1), (q1, m1) = ours_step(params, xd, yd), theirs_step(q[0], xj, yj)
    ok, values = _agreement(_leaves((p1, l1)), _leaves((q1, m1)))

    def ours_run():
        p[0], loss = ours_step(p[0], xd, yd)
        return loss

    def theirs_run():
        q[0], loss = theirs_step(q[0], xj, yj)
        return loss

    calls = 5 if quick else 100
    return (f"MLP 784-512-512-10 train step, batch {batch_size}", ok, values,
            _time_ms(ours_run, calls), _time_ms(theirs_run, calls))


def _finale_row(_: Any, device: Any, quick: bool) -> tuple[str, bool, str, float, float]:
    """The course's finale: the character-level transformer's training step (stage 12)."""
    from shared import char_transformer as ct

    run_ours, run_jax = ct.both_steps(ct.Config(), device)
    first_ours, first_jax = np.asarray(run_ours()), np.asarray(run_jax())
    ok, values = _agreement([first_ours], [first_jax])
    calls = 5 if quick else 50
    return ("finale: char transformer train step", ok, values, _time_ms(run_ours, calls),
            _time_ms(run_jax, calls))


def _rows(device: Any, quick: bool) -> list[tuple[str, bool, str, float, float]]:
    programs = _corpus()
    todo = [(p.name, _corpus_row, p) for p in (programs[:4] if quick else programs)]
    todo += [(f"MLP, batch {b}", _mlp_row, b) for b in ((128,) if quick else (128, 4096))]
    todo += [("finale", _finale_row, None)]
    rows = []
    for i, (name, make_row, what) in enumerate(todo, 1):
        start = time.perf_counter()
        try:
            rows.append(make_row(what, device, quick))
        except Exception as err:  # noqa: BLE001 - one broken program must not hide the others
            traceback.print_exc()
            rows.append((name, False, f"{type(err).__name__}: {err}"[:70], 0.0, 0.0))
        print(f"[{i}/{len(todo)}] {name}: {rows[-1][2]} ({time.perf_counter() - start:.1f} s)",
              flush=True)
    return rows


def _table(rows: list[tuple[str, bool, str, float, float]]) -> str:
    header = ("program", "values (ours vs jax.jit)", "ours ms/call", "jax.jit ms/call",
              "ours/jax")
    lines = [header]
    for name, _, values, ours, theirs in rows:
        ratio = f"{ours / theirs:.2f}x" if theirs else "-"
        lines.append((name, values, f"{ours:.3f}", f"{theirs:.3f}", ratio))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    out = ["  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
           for line in lines]
    out.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m shared.gpu_check")
    parser.add_argument("--device", default="CUDA", choices=["CUDA", "CPU"])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    device = _jax_device(args.device)  # JAX's backend first: it loads the CUDA plugin
    if device is None:
        return 0
    os.environ["PJRT_DEVICE"] = args.device
    import stages.s09_pjrt as s09

    client = s09.get_computation_client()
    default = client.get_default_device()
    print(f"\nours: {client!r}, {default} is a {client.get_device_kind(default)!r}; "
          f"{client.get_platform_version()}")
    print(f"jax {jax.__version__}: {device} ({device.device_kind})")
    with s09.use_pjrt(eager_ops=False):
        rows = _rows(device, args.quick)
    print()
    print(_table(rows))
    try:
        info = client.get_memory_info(default)
        print(f"\n{default} memory: {info.bytes_used / 2**20:.1f} MiB in use, peak "
              f"{info.peak_bytes_used / 2**20:.1f} MiB, limit {info.bytes_limit / 2**30:.1f} GiB")
    except RuntimeError as err:
        print(f"\n{err}")
    print("\n" + s09.metrics.short_metrics_report())
    failed = [name for name, ok, *_ in rows if not ok]
    print(f"{len(rows) - len(failed)} of {len(rows)} programs agree with jax.jit"
          + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
