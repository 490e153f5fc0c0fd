"""Stage 11 rows: a data-parallel MLP training step on 1, 2 and 4 CPU devices, ours against
jax.jit with the same shardings, timed in a process of their own (_spmd_worker.py), since JAX
fixes its CPU device count when its backend starts. Goal: within 1.1x of JAX per row."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from shared.benchmarks.harness import Row

ROOT = Path(__file__).resolve().parents[2]


def rows(quick: bool = False) -> list[Row]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-m", "shared.benchmarks._spmd_worker",
                          "1" if quick else "0"], capture_output=True, text=True, env=env,
                         cwd=ROOT, check=True, timeout=1800)
    found = json.loads(out.stdout.strip().splitlines()[-1])
    return [Row(11, f"data-parallel MLP step {'-'.join(map(str, r['sizes']))}, batch "
                    f"{r['batch']}, {r['n']} CPU device{'s' if r['n'] > 1 else ''}",
                r["ours"], r["jax"], "jax.jit, same shardings",
                note=("goal <= 1.1x" if r["same"] else "LOSSES DIFFER") +
                "; the CPU devices share this machine's cores")
            for r in found]
