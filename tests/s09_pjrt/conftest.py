"""Stage 9's test helpers: every test module runs with jit on PJRT (`use_pjrt()`), and the
programs stage 8 lowers are reused, so each one now also runs through our client.

`use_pjrt()` is entered per module and left at its end: jit's default backend and this thread's
eager dispatch are back to stage 7's when the next directory's tests run, as importing stage 9
alone never changes them.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

import stages.s09_pjrt as s09
from stages.s09_pjrt import metrics


def _stage8_module() -> Any:
    """tests/s08_lowering/conftest.py, where the stage 2-6 corpora and compositions live: the
    module pytest loaded if stage 8's tests are in this run (its lowerings and JAX's compiled
    functions are then cached already), else loaded here by its path."""
    if "tests.s08_lowering.conftest" in sys.modules:
        return sys.modules["tests.s08_lowering.conftest"]
    path = Path(__file__).resolve().parent.parent / "s08_lowering" / "conftest.py"
    if "s08_corpus_for_s09" not in sys.modules:
        spec = importlib.util.spec_from_file_location("s08_corpus_for_s09", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    return sys.modules["s08_corpus_for_s09"]


S08 = _stage8_module()


@pytest.fixture(scope="module", autouse=True)
def pjrt():
    """jit compiles and runs through PJRT for the whole module; eager primitives dispatch."""
    with s09.use_pjrt():
        yield


class Delta:
    """A snapshot of the client's metrics; `samples(name)` / `count(name)` since then."""

    def __init__(self) -> None:
        self.samples0 = {n: m.count for n, m in metrics.all_metrics().items()}
        self.counts0 = {n: c.value for n, c in metrics.all_counters().items()}

    def samples(self, name: str) -> int:
        return metrics.all_metrics()[name].count - self.samples0.get(name, 0)

    def count(self, name: str) -> int:
        return metrics.all_counters()[name].value - self.counts0.get(name, 0)


@pytest.fixture
def delta() -> type[Delta]:
    return Delta


@contextlib.contextmanager
def four_cpu_devices():
    """A client of four CPU devices (CPU_NUM_DEVICES=4) as the process's, the old one back after."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CPU_NUM_DEVICES", "4")
        four = s09.initialize_pjrt("CPU")
    previous = s09.runtime.set_computation_client(four)
    try:
        yield four
    finally:
        s09.runtime.set_computation_client(previous)
