"""The exercise loop as a learner meets it, end to end, on a temporary copy of the repository.

Strip one exercise, run the stage's tests with WORKSPACE=1 and see it listed as to do at its place
in `workspace/...`; paste the reference code back, run again, and see it done. Then every stage,
all exercises stubbed: the run lists every exercise, each as to do, and stays fast. Stage 1 runs
all its tests; the others run, per exercise, the quickest tests `shared/exercise_map.json` says
reach it (a test that reaches no exercise runs the same code stubbed or not). With every stub in
place, a test can stop at one stub before it reaches another: the run shows that even so, each
exercise is reached and listed as to do.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from shared.exercise_check import read_map
from shared.exercises import ROOT, docs_page, parse_stage, reference_body

STAGES = sorted(p for p in (ROOT / "stages").glob("s[0-9][0-9]_*") if p.is_dir())
PER_EXERCISE = 3  # the map's quickest tests run per exercise in the all-stubbed run
# A stubbed stage's first run should take well under a minute: shrinking the failures of
# hypothesis tests took minutes. No wall-clock bound here (a busy machine would fail it); the
# workspace profile that prevents it is tested below.


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    """A copy of the course (code, tests, tools), as a learner's clone."""
    copy = tmp_path_factory.mktemp("clone")
    skip = shutil.ignore_patterns("__pycache__", ".hypothesis", ".pytest_cache")
    for name in ("stages", "shared", "tests", "docs"):
        shutil.copytree(ROOT / name, copy / name, ignore=skip)
    for name in ("conftest.py", "pyproject.toml", "Makefile"):
        shutil.copy2(ROOT / name, copy / name)
    return copy


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("UNDER_API_WORKSPACE_DIR", "UNDER_API_SELECT", "UNDER_API_EXERCISE_MAP",
                        "PYTEST_ADDOPTS")}
    return dict(env, WORKSPACE="1")


def exercise(repo: Path, *args: str) -> str:
    """`make exercise STAGE=... [ONLY=...] [FORCE=1]`, as its recipe runs it."""
    done = subprocess.run([sys.executable, "-m", "shared.exercises", "strip", *args], cwd=repo,
                          env=_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def run_stage(repo: Path, *paths: str, select: list[str] | None = None) -> tuple[int, str]:
    """`make test-stage-N WORKSPACE=1`, as its recipe runs it, on some of its test files (and
    of those, with `select`, only these tests, as check-exercises chooses them)."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tb=short", "-rN",
           *paths]
    env = _env()
    if select is not None:
        chosen = repo / "workspace" / "select.txt"  # gone with the workspace
        chosen.write_text("\n".join(select))
        env["UNDER_API_SELECT"] = str(chosen)
    done = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_the_makefile_passes_only_through(repo):
    (repo / ".venv" / "bin").mkdir(parents=True)  # make -n needs only the names
    dry = subprocess.run(["make", "-n", "-o", ".venv/.installed", "exercise", "STAGE=4",
                          "ONLY=4.1,4.7"], cwd=repo, capture_output=True, text=True)
    assert "-m shared.exercises strip --stage 4 --only 4.1,4.7" in dry.stdout, dry.stderr
    shutil.rmtree(repo / ".venv")


@pytest.fixture
def clean(repo):
    """Each test leaves no workspace copy behind for the next."""
    yield repo
    shutil.rmtree(repo / "workspace", ignore_errors=True)


def test_strip_one_see_it_to_do_paste_the_reference_back_see_it_done(clean):
    repo = clean
    stage = ROOT / "stages" / "s01_pytrees"
    ex = next(e for e in parse_stage(stage) if e.number == "1.2")
    out = exercise(repo, "--stage", "1", "--only", "1.2")
    listed = re.search(r"1\.2 \(dict-order\) (workspace/stages/s01_pytrees/\S+):(\d+)", out)
    assert listed, out
    copy_file, stub_line = repo / listed[1], int(listed[2])
    assert "NotImplementedError('exercise 1.2" in copy_file.read_text().splitlines()[stub_line - 1]

    code, out = run_stage(repo, "tests/s01_pytrees/test_flatten.py", "--exercise-names=0")
    assert code == 1
    row = next(line for line in out.splitlines() if line.strip().startswith("1.2 dict-order"))
    assert row.split()[2:] == ["to", "do", f"{listed[1]}:{stub_line}"]
    assert f"{docs_page(stage)}#exercise-1-2" in out
    assert "tests/s01_pytrees/test_flatten.py::test_dict_keys_are_sorted" in out
    assert "not an exercise" not in out
    assert "FAILURES" not in out  # a failure that only reached a stub is in the table only

    lines = copy_file.read_text().splitlines()
    indent = lines[stub_line - 1][: len(lines[stub_line - 1]) - len(lines[stub_line - 1].lstrip())]
    # the reference's code, with its own relative indentation, moved to the stub's
    ref_indent = min(len(x) - len(x.lstrip()) for x in reference_body(ex) if x.strip())
    body = [indent + x[ref_indent:] if x.strip() else "" for x in reference_body(ex)]
    copy_file.write_text("\n".join(lines[: stub_line - 1] + body + lines[stub_line:]) + "\n")

    code, out = run_stage(repo, "tests/s01_pytrees/test_flatten.py")
    assert code == 0, out
    assert "all 6 exercises of stage 1 pass (5 of them keep the reference code)" in out

    # a wrong answer: the keys left unsorted; the table says wrong and names the tests
    copy_file.write_text(copy_file.read_text().replace("keys.sort()", "keys = list(keys)"))
    code, out = run_stage(repo, "tests/s01_pytrees/test_flatten.py")
    assert code == 1
    row = next(line for line in out.splitlines() if line.strip().startswith("1.2 dict-order"))
    assert row.split()[2] == "wrong"
    assert "FAILURES" in out and "test_dict_keys_are_sorted_one_level_down_too" in out


@pytest.mark.slow
@pytest.mark.parametrize("stage", STAGES, ids=[p.name for p in STAGES])
def test_the_all_stubbed_run_lists_every_exercise_as_to_do(clean, stage):
    repo = clean
    n = int(stage.name[1:3])
    exercise(repo, "--stage", str(n), "--force")
    if stage.name == "s01_pytrees":  # all of the stage's tests, as a learner runs them
        code, out = run_stage(repo, f"tests/{stage.name}")
    else:  # the tests that reach an exercise (the map's): the others run no stubbed line
        tests = list(dict.fromkeys(t for ts in read_map()[stage.name].values()
                                   for t in ts[:PER_EXERCISE]))
        code, out = run_stage(repo, *sorted({t.split("::")[0] for t in tests}), select=tests)
    assert code == 1
    for ex in parse_stage(stage):
        row = next((line for line in out.splitlines()
                    if line.strip().startswith(f"{ex.number} {ex.name} ")), None)
        assert row is not None, f"exercise {ex.number} missing from the table:\n{out[-3000:]}"
        assert row.split()[2:4] == ["to", "do"], row
        assert f"workspace/stages/{stage.name}/" in row, row
    assert f"stage {n}: 0 of {len(parse_stage(stage))} exercises done" in out
    assert "not an exercise" not in out, out[-3000:]
    # hypothesis keeps no example from a workspace run: the reference run must not replay one
    assert not (repo / ".hypothesis" / "examples").exists()


@pytest.mark.parametrize("stage", STAGES, ids=[p.name for p in STAGES])
def test_exercise_texts_point_at_the_workspace_copy(stage):
    text = (ROOT / docs_page(stage)).read_text()
    exercises = text[text.index("## Exercises"):]
    for path in re.findall(r"`((?:workspace/)?stages/s\d\d_\w+/[\w/]+\.py)`", exercises):
        assert path.startswith("workspace/"), (
            f"{docs_page(stage)}: an exercise names `{path}`; the learner edits "
            f"`workspace/{path}`")


def test_a_workspace_run_never_shrinks_or_saves_hypothesis_examples():
    from hypothesis import Phase, settings

    from shared import exercise_report

    before = settings.default
    try:
        exercise_report._workspace_hypothesis_profile()
        profile = settings.default
        assert Phase.shrink not in profile.phases and Phase.generate in profile.phases
        assert profile.database is None
        assert profile.max_examples == exercise_report.WORKSPACE_EXAMPLES
    finally:
        settings.register_profile("_restored", before)
        settings.load_profile("_restored")
