"""Timing helpers and the Row every stage's benchmark module returns."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class Row:
    stage: int
    what: str  # e.g. "flatten+unflatten, 10k leaves"
    ours_s: float  # best time of ours, seconds
    ref_s: float | None  # best time of the real library, seconds (None: no counterpart)
    ref_name: str = ""  # e.g. "jax.tree_util"
    note: str = ""

    @property
    def ratio(self) -> float | None:
        return None if self.ref_s is None else self.ours_s / self.ref_s


def best_time(fn: Callable[[], object], *, repeat: int = 5, number: int = 1) -> float:
    """Best-of-`repeat` seconds per call of `fn`, each sample averaging `number` calls."""
    return best_times(fn, repeat=repeat, number=number)[0]


def best_times(*fns: Callable[[], object], repeat: int = 5, number: int = 1) -> list[float]:
    """Best-of-`repeat` seconds per call for each of `fns`, measured in turns (a, b, a, b, ...).

    Taking turns means a slow spell of the machine (another process, a frequency change) hits
    every side alike, so a ratio of two of these is steadier than two `best_time` runs in a row.
    """
    for fn in fns:
        fn()  # warm up every side before any is measured
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            gc.collect()
            gc.disable()
            try:
                start = time.perf_counter()
                for _ in range(number):
                    fn()
                best[i] = min(best[i], (time.perf_counter() - start) / number)
            finally:
                gc.enable()
    return best
