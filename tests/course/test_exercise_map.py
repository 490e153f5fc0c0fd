"""`shared/exercise_map.json`, the tests that reach each exercise (`make check-exercises REMAP=1`
writes it): it names every exercise of every built stage, and every test it names still exists.
A stale map only makes `make check-exercises` slower; this says when to rewrite it."""

from __future__ import annotations

import ast
from functools import cache

import pytest

from shared.exercise_check import MAP_FILE, read_map
from shared.exercises import ROOT, built_stages, parse_stage, stage_dir

REWRITE = "run `make check-exercises REMAP=1` to rewrite shared/exercise_map.json"


@cache
def _test_names(path: str) -> set[str]:
    """The test functions defined in a test file (module level or in classes)."""
    tree = ast.parse((ROOT / path).read_text())
    return {node.name for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}


@pytest.mark.parametrize("n", built_stages())
def test_the_map_names_every_exercise_with_tests(n):
    stage = stage_dir(n)
    known = read_map().get(stage.name, {})
    for ex in parse_stage(stage):
        assert known.get(ex.number), f"{ex.number} ({ex.name}) has no tests in the map: {REWRITE}"
    assert set(known) <= {ex.number for ex in parse_stage(stage)}, REWRITE


def test_every_test_the_map_names_exists():
    assert MAP_FILE.exists(), REWRITE
    for stage, exercises in read_map().items():
        for number, tests in exercises.items():
            for nodeid in tests:
                path, *_, name = nodeid.split("::")
                assert path.startswith(f"tests/{stage}/"), (number, nodeid)
                assert (ROOT / path).exists(), f"{number}: {path} is gone: {REWRITE}"
                assert name.split("[")[0] in _test_names(path), \
                    f"{number}: {nodeid} is gone: {REWRITE}"
