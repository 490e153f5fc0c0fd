"""`make check-exercises`: every exercise is real, and wrong answers to it fail a test.

For each built stage:

1. its docs page has every exercise's anchor, and the copy with every exercise stubbed imports;
2. the tests that reach each exercise, quickest first, are read from `shared/exercise_map.json`;
   with `--remap`, a copy with the reference code instead runs the stage's tests under the
   exercise trace (`shared/exercise_report.py`), which records which exercises each test
   reaches: the run must pass, every exercise must be reached by some test, and the map file is
   written anew. The map only orders the work: a test it names that is gone is skipped;
3. each exercise stubbed alone makes a test fail by reaching its stub (the map's tests first,
   then all the stage's): this is what proves the exercise is reached;
4. each wrong answer of `shared/exercise_mutants.py` makes one of those tests fail; one that
   passes them is tried once more on all the stage's tests before it is called a survivor.

Steps 3 and 4 first run alone the test that caught the same stub or wrong answer last time
(`shared/exercise_catches.json`, which `--remap` also rewrites): one test file to collect and one
test to run, a couple of seconds, where the map's tests take several. A catch that no longer
fails (the test changed, or the mistake did) only costs that one run before the map's tests.

Runs stop at the first failure (-x), use a fixed hypothesis seed, and go two at a time. Each is
a fresh process forked from one that has already imported pytest, hypothesis, jax and torch
(seconds a run otherwise), compiled the course's files and frozen what it holds out of the
garbage collector's sight, so it imports the stage code of its own copy. A wrong answer's run
is not traced: which test fails first is all it reports.
"""

from __future__ import annotations

import compileall
import gc
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from shared.exercise_mutants import Mutant, MutantError, apply, mutants_of
from shared.exercises import (
    ROOT,
    Exercise,
    copy_regions,
    docs_page,
    forget_bytecode,
    parse_stage,
    stage_dir,
    write_workspace,
)

TIMEOUT = 900  # seconds for one pytest run; a hang is reported, not waited on forever
WORKERS = 2
MAP_FILE = ROOT / "shared" / "exercise_map.json"
CATCH_FILE = ROOT / "shared" / "exercise_catches.json"
MAP_TESTS = 25  # the quickest tests kept per exercise in the map file
NO_TESTS = 5  # pytest's exit code when no test was collected (the map names only gone tests)


@dataclass
class Run:
    returncode: int
    output: str
    reached: dict[str, list[str]]  # test -> exercises it reached
    failed: dict[str, dict[str, list[str]]]  # test -> {"stubs": [...], "reached": [...]}
    durations: dict[str, float]  # test -> seconds


def run_tests(stage: Path, workspace: Path, select: list[str] | None = None,
              stop_first: bool = True, trace: bool = True) -> Run:
    """The stage's tests against `workspace` (or only the `select`ed ones), traced unless
    `trace` is False: then only stubs named by exceptions are seen, and the runs are faster."""
    with tempfile.TemporaryDirectory() as tmp:
        record = Path(tmp) / "reached.json"
        env = {"WORKSPACE": "1", "UNDER_API_WORKSPACE_DIR": str(workspace),
               "UNDER_API_EXERCISE_MAP": str(record),
               "UNDER_API_EXERCISE_TRACE": "1" if trace else "0"}
        if select is not None:
            chosen = Path(tmp) / "select.txt"
            chosen.write_text("\n".join(select))
            env["UNDER_API_SELECT"] = str(chosen)
        # only the test files that hold the selected tests: collecting the rest costs seconds
        paths = sorted({t.split("::")[0] for t in select}) if select else [f"tests/{stage.name}"]
        args = [*paths, "-q", "-p", "no:cacheprovider", "--hypothesis-seed=0", "--tb=line",
                "-rN", "-W", "ignore::pytest.PytestAssertRewriteWarning"]
        if stop_first:
            args.append("-x")
        returncode, output = _forked_pytest(args, env, Path(tmp) / "output.txt")
        data = json.loads(record.read_text()) if record.exists() else {}
        return Run(returncode, output, data.get("reached", {}), data.get("failed", {}),
                   data.get("durations", {}))


def _forked_pytest(args: list[str], env: dict[str, str], output: Path) -> tuple[int, str]:
    """pytest.main(args) in a forked child (this process must not run threads), its exit code
    and output; killed after TIMEOUT seconds."""
    import pytest

    pid = os.fork()
    if pid == 0:  # the child: never returns
        try:
            sys.dont_write_bytecode = False  # pytest keeps the test files it rewrote, for the next
            os.environ.update(env)
            os.chdir(ROOT)
            fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            code = int(pytest.main(args))
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:  # noqa: BLE001 (anything: the parent reads the exit code)
            code = 3
        os._exit(code)
    deadline = time.monotonic() + TIMEOUT
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            text = output.read_text() if output.exists() else ""
            return os.waitstatus_to_exitcode(status), text
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return -1, f"timed out after {TIMEOUT} s"
        time.sleep(0.05)


def _tail(run: Run) -> str:
    return "\n".join("      " + line for line in run.output.strip().splitlines()[-12:])


@dataclass
class StageCheck:
    stage: Path
    exercises: list[Exercise]
    problems: list[str]
    reached_by: dict[str, list[str]]  # exercise -> the tests that reach it
    caught: dict[str, list[str]]  # exercise -> its mutants that failed a test
    catches: dict[str, dict[str, str]]  # exercise -> stub or mistake -> the test that caught it

    @property
    def name(self) -> str:
        return self.stage.name


def prepare(stage: Path, tmp: Path, remap: bool = False) -> StageCheck:
    """Steps 1 and 2: anchors, the stubbed copy imports, and who reaches what."""
    exercises = parse_stage(stage)
    check = StageCheck(stage, exercises, [], {e.number: [] for e in exercises},
                       {e.number: [] for e in exercises}, read_catches().get(stage.name, {}))
    page = ROOT / docs_page(stage)
    page_text = page.read_text() if page.exists() else ""
    for ex in exercises:
        if "{#" + ex.anchor + "}" not in page_text:
            check.problems.append(f"{ex.number} ({ex.name}): {docs_page(stage)} has no "
                                  f"#{ex.anchor}")
    stubbed = tmp / stage.name / "stubbed"
    write_workspace(stage, stubbed, bytecode=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(stubbed), str(ROOT)]))
    probe = f"import stages.{stage.name} as m; print(m.__file__)"
    done = subprocess.run([sys.executable, "-c", probe], env=env, cwd=tmp, capture_output=True,
                          text=True)
    if done.returncode != 0 or str(stubbed) not in done.stdout:
        check.problems.append(f"the stubbed copy does not import:\n{done.stderr[-2000:]}")
    if remap:
        _trace_reached(check, tmp)
    else:
        known = read_map().get(stage.name, {})
        for ex in exercises:
            check.reached_by[ex.number] = list(known.get(ex.number, []))
    return check


def _trace_reached(check: StageCheck, tmp: Path) -> None:
    """Step 2 with --remap: the reference copy's tests, traced, say who reaches what."""
    stage = check.stage
    reference = tmp / stage.name / "reference"
    write_workspace(stage, reference, only=set(), bytecode=True)
    run = run_tests(stage, reference, stop_first=False)
    if run.returncode != 0:
        check.problems.append(f"the reference copy fails its tests:\n{_tail(run)}")
    # quickest tests first: with -x, a run ends at the first test that catches the mistake
    quickest = sorted(run.reached, key=lambda test: run.durations.get(test, 0.0))
    for test in quickest:
        for n in run.reached[test]:
            if n in check.reached_by:
                check.reached_by[n].append(test)
    for ex in check.exercises:
        if not check.reached_by[ex.number]:
            check.problems.append(f"{ex.number} ({ex.name}): no test reaches it")


def read_map() -> dict[str, dict[str, list[str]]]:
    """stage -> exercise -> the tests that reach it, quickest first (`--remap` writes it)."""
    if not MAP_FILE.exists():
        return {}
    data = json.loads(MAP_FILE.read_text())
    return {stage: {n: [f"tests/{stage}/{test}" for test in tests] for n, tests in known.items()}
            for stage, known in data.items()}


def write_map(checks: list[StageCheck]) -> None:
    """The file keeps each test's id below the stage's test folder."""
    data = {stage: {n: [test.removeprefix(f"tests/{stage}/") for test in tests]
                    for n, tests in known.items()} for stage, known in read_map().items()}
    for c in checks:
        data[c.name] = {n: [test.removeprefix(f"tests/{c.name}/") for test in tests[:MAP_TESTS]]
                        for n, tests in c.reached_by.items()}
    MAP_FILE.write_text(json.dumps(dict(sorted(data.items())), indent=1) + "\n")


STUBBED = "stubbed"  # the catches file's key for the exercise stubbed; a mistake is its own key


def read_catches() -> dict[str, dict[str, dict[str, str]]]:
    """stage -> exercise -> "stubbed" or a mistake -> the test that caught it (`--remap`)."""
    if not CATCH_FILE.exists():
        return {}
    data = json.loads(CATCH_FILE.read_text())
    return {stage: {n: {what: f"tests/{stage}/{test}" for what, test in by.items()}
                    for n, by in known.items()} for stage, known in data.items()}


def write_catches(checks: list[StageCheck]) -> None:
    data = {stage: {n: {what: test.removeprefix(f"tests/{stage}/") for what, test in by.items()}
                    for n, by in known.items()} for stage, known in read_catches().items()}
    for c in checks:
        data[c.name] = {n: {what: test.removeprefix(f"tests/{c.name}/")
                            for what, test in sorted(by.items())}
                        for n, by in sorted(c.catches.items()) if by}
    CATCH_FILE.write_text(json.dumps(dict(sorted(data.items())), indent=1) + "\n")


def _candidates(check: StageCheck, ex: Exercise, what: str) -> list[list[str] | None]:
    """The test selections to try in turn: the test that caught `what` last time, the map's
    tests for the exercise (those whose file is still there), then all."""
    def here(tests: list[str]) -> list[str]:
        return [t for t in tests if (ROOT / t.split("::")[0]).exists()]
    caught = here([t] if (t := check.catches.get(ex.number, {}).get(what)) else [])
    mapped = here(check.reached_by[ex.number])
    return [s for s in (caught, mapped) if s] + [None]


def _first_failure(run: Run) -> str | None:
    return next(iter(run.failed), None)


def stub_alone(check: StageCheck, ex: Exercise, tmp: Path) -> tuple[str | None, str | None]:
    """Step 3: the exercise stubbed alone fails a test that reaches it, at its stub. The problem
    or None, and the test that caught it."""
    ws = tmp / check.name / f"stub-{ex.anchor}"
    write_workspace(check.stage, ws, only={ex.number}, bytecode=True)
    for select in _candidates(check, ex, STUBBED):
        run = run_tests(check.stage, ws, select)
        if select is not None and run.returncode in (0, NO_TESTS):
            continue
        if run.returncode == 1:
            if any(ex.number in f.get("stubs", []) for f in run.failed.values()):
                return None, _first_failure(run)
            return (f"{ex.number} ({ex.name}): stubbed alone, tests fail but none reaches its "
                    f"stub:\n{_tail(run)}"), None
        if run.returncode != 0:
            return (f"{ex.number} ({ex.name}): stubbed alone, the tests do not run:\n"
                    f"{_tail(run)}"), None
    return f"{ex.number} ({ex.name}): stubbed alone, every test still passes", None


def mutant(check: StageCheck, ex: Exercise, index: int, m: Mutant,
           tmp: Path) -> tuple[str | None, str | None]:
    """Step 4: one wrong answer fails a test (None), or the problem; and the test."""
    label = f"{ex.number} ({ex.name}) wrong answer {m.mistake!r}"
    ws = tmp / check.name / f"mutant-{ex.anchor}-{index}"
    write_workspace(check.stage, ws, only=set(), bytecode=True)
    region = copy_regions(ws / "stages" / check.name).get(ex.number)
    if region is None or not region.closed:
        return f"{label}: exercise {ex.number} has no closed region in the stage's code", None
    lines = region.path.read_text().splitlines()
    try:
        new = apply(m, lines, region.start, region.end - 1)
    except MutantError as err:
        return (f"{label} no longer applies: {err}; exercise {ex.number} is at "
                f"{ex.path}:{ex.start}; update shared/exercise_mutants.py"), None
    text = "\n".join(new) + "\n"
    try:
        compile(text, str(region.path), "exec")
    except SyntaxError as err:
        return f"{label}: the mutated code does not compile ({err}); fix the mutant", None
    region.path.write_text(text)
    forget_bytecode(region.path)
    for select in _candidates(check, ex, m.mistake):
        run = run_tests(check.stage, ws, select, trace=False)  # any failing test will do
        if select is not None and run.returncode in (0, NO_TESTS):
            continue
        if run.returncode == 1:
            return None, _first_failure(run)
        if run.returncode != 0:
            return f"{label}: the tests do not run:\n{_tail(run)}", None
    return f"{label} passes every test of the stage: add a test that catches it", None


def _prepare(task: tuple[int, Path, bool]) -> StageCheck:
    return prepare(stage_dir(task[0]), task[1], task[2])


def _job(task: tuple[StageCheck, Exercise, int, Mutant | None, Path]
         ) -> tuple[str | None, str | None, float]:
    """A stub check (no mutant) or a mutant check: its problem or None, the test that caught
    the stub or the mistake, and its seconds."""
    c, ex, index, m, tmp = task
    started = time.monotonic()
    problem, test = stub_alone(c, ex, tmp) if m is None else mutant(c, ex, index, m, tmp)
    return problem, test, time.monotonic() - started


def check(stages: list[int], mutants: bool = True, remap: bool = False) -> int:
    started = time.monotonic()
    import hypothesis.strategies  # noqa: F401  (imported once here, not in every run)
    import jax.numpy  # noqa: F401
    import pytest  # noqa: F401
    import torch._dynamo  # noqa: F401  (stage 10 on: seconds of every run, imported lazily)

    for folder in ("stages", "shared"):  # compiled once here, not in every run (and every copy)
        compileall.compile_dir(ROOT / folder, quiet=1)
    # pytest ends each run with gc.collect() calls, a third of a second each while they scan
    # jax's and torch's objects; frozen here, those are skipped (no run frees them anyway)
    gc.freeze()

    with tempfile.TemporaryDirectory() as name, \
            multiprocessing.get_context("fork").Pool(WORKERS) as pool:
        tmp = Path(name)
        checks = pool.map(_prepare, [(n, tmp, remap) for n in stages], chunksize=1)
        if remap:
            write_map(checks)
            print(f"wrote {MAP_FILE.relative_to(ROOT)} "
                  f"({time.monotonic() - started:.0f} s of traced runs)")
        tasks: list[tuple[StageCheck, Exercise, int, Mutant | None, Path]] = []
        for c in checks:
            for ex in c.exercises:
                if remap and not c.reached_by[ex.number]:
                    continue
                tasks.append((c, ex, 0, None, tmp))
                if not mutants:
                    continue
                wrong = mutants_of(ex.number)
                if not wrong:
                    c.problems.append(f"{ex.number} ({ex.name}): no wrong answers in "
                                      "shared/exercise_mutants.py")
                tasks += [(c, ex, i, m, tmp) for i, m in enumerate(wrong)]
        results = pool.map(_job, tasks, chunksize=1)
    if remap:  # what caught each stub and wrong answer in this run, and nothing older
        for c in checks:
            c.catches = {ex.number: {} for ex in c.exercises}
    for (c, ex, _, m, _), (problem, test, _) in zip(tasks, results, strict=True):
        if problem:
            c.problems.append(problem)
        elif m is not None:
            c.caught[ex.number].append(m.mistake)
        if remap and test is not None:
            c.catches[ex.number][STUBBED if m is None else m.mistake] = test
    if remap:
        write_catches(checks)
        print(f"wrote {CATCH_FILE.relative_to(ROOT)}")
    failed = False
    for c in checks:
        status = "ok" if not c.problems else "FAILED"
        total = sum(len(v) for v in c.caught.values())
        extra = f", {total} wrong answers caught" if mutants else ""
        print(f"stage {int(c.name[1:3])} ({c.name}): {len(c.exercises)} exercises{extra}, "
              f"{status}")
        for ex in c.exercises:
            reached = len(c.reached_by[ex.number])
            caught = f"; wrong answers caught: {len(c.caught[ex.number])}" if mutants else ""
            plural = "" if reached == 1 else "s"
            tests = (f"reached by {reached} test{plural}" if remap
                     else f"{reached} test{plural} in the map")
            print(f"  {ex.number} ({ex.name}): {tests}{caught}")
        for p in c.problems:
            print(f"  problem: {p}")
        failed = failed or bool(c.problems)
    labels = [f"{ex.number} {'stubbed' if m is None else repr(m.mistake)}"
              for _, ex, _, m, _ in tasks]
    slowest = sorted(zip(results, labels, strict=True), key=lambda r: -r[0][2])[:5]
    print("slowest runs: " + "; ".join(f"{label} {seconds:.0f} s"
                                       for (_, _, seconds), label in slowest))
    print(f"check-exercises took {time.monotonic() - started:.0f} s")
    return 1 if failed else 0
