"""`make bench` is not run by the tests (it times, and takes minutes), so this checks what can go
wrong without timing anything: every stage's benchmark module imports, and the script stage 9
hands a fresh process for its warm-start row is valid Python."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

MODULES = sorted(p.stem for p in (Path(__file__).resolve().parents[2] / "shared" / "benchmarks")
                 .glob("s[0-9][0-9]_*.py"))


@pytest.mark.parametrize("name", MODULES)
def test_each_benchmark_module_imports_and_has_rows(name):
    module = importlib.import_module(f"shared.benchmarks.{name}")
    assert callable(module.rows)


def test_the_warm_start_worker_is_valid_python():
    from shared.benchmarks import s09_pjrt

    ast.parse(s09_pjrt._WORKER)  # an indentation slip here only shows in a full bench run
