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
    fn()  # warm up (imports, caches) outside the measurement
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            for _ in range(number):
                fn()
            best = min(best, (time.perf_counter() - start) / number)
        finally:
            gc.enable()
    return best
