"""`shared/exercise_map.json`, the tests that reach each exercise, and
`shared/exercise_catches.json`, the test that caught each stub and wrong answer (`make
check-exercises REMAP=1` writes both): the map names every exercise of every built stage, and
every test either names still exists. A stale file only makes `make check-exercises` slower;
this says when to rewrite them."""

from __future__ import annotations

import ast
from functools import cache

import pytest

from shared.exercise_check import CATCH_FILE, MAP_FILE, STUBBED, read_catches, read_map
from shared.exercise_mutants import mutants_of
from shared.exercises import ROOT, built_stages, parse_stage, stage_dir

REWRITE = "run `make check-exercises REMAP=1` to rewrite shared/exercise_map.json"
REWRITE_CATCHES = "run `make check-exercises REMAP=1` to rewrite shared/exercise_catches.json"


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


def _assert_exists(stage: str, number: str, nodeid: str, rewrite: str) -> None:
    path, *_, name = nodeid.split("::")
    assert path.startswith(f"tests/{stage}/"), (number, nodeid)
    assert (ROOT / path).exists(), f"{number}: {path} is gone: {rewrite}"
    assert name.split("[")[0] in _test_names(path), f"{number}: {nodeid} is gone: {rewrite}"


def test_every_test_the_map_names_exists():
    assert MAP_FILE.exists(), REWRITE
    for stage, exercises in read_map().items():
        for number, tests in exercises.items():
            for nodeid in tests:
                _assert_exists(stage, number, nodeid, REWRITE)


def test_every_catch_is_of_a_current_stub_or_wrong_answer_by_a_test_that_exists():
    assert CATCH_FILE.exists(), REWRITE_CATCHES
    for stage, exercises in read_catches().items():
        for number, caught in exercises.items():
            known = {STUBBED} | {m.mistake for m in mutants_of(number)}
            for what, nodeid in caught.items():
                assert what in known, f"{number}: no wrong answer {what!r}: {REWRITE_CATCHES}"
                _assert_exists(stage, number, nodeid, REWRITE_CATCHES)
