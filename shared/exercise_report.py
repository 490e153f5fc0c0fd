"""What a WORKSPACE=1 test run tells a learner: every exercise of the stage, done or not, and why.

A pytest plugin (the root conftest.py loads it), active only with WORKSPACE=1. It watches the
exercise regions of the learner's copies in workspace/stages/ (the lines between `# EXERCISE N.K`
and `# END EXERCISE`, `shared.exercises.copy_regions`) with a trace function restricted to those
files, so it knows which regions each test ran. A failing test is then attributed:

- to the exercises whose stub it reached (the stub's NotImplementedError, in its exception or
  its traceback, or a stub region it ran): those are "to do";
- else to the learner's exercises (those `make exercise` stripped, or any other whose code no
  longer reads as the reference's) that its tracebacks pass through, or to the only one whose
  code it ran: those are "wrong"; when it ran several and raised in none, each is "maybe wrong";
- else it is "not an exercise", listed by name.

The run ends with one line per exercise of the stage (`shared/exercise_table.py`): to do, wrong,
done, not yet reached by a passing test, or reference (kept by ONLY=...), with its place in the
workspace copy, its docs anchor and the failing tests under it; or, when everything passes, "all N
exercises of stage K pass". Failures that only reached a stub are left out of pytest's FAILURES
section (the table lists them), so the tracebacks shown are the ones from the learner's own code.
Hypothesis runs at most WORKSPACE_EXAMPLES examples a test, the same ones every run, does not
shrink (a stub fails every example) and saves none (the reference run must not replay a stub's
failure).

`make check-exercises` reuses the trace: with UNDER_API_EXERCISE_MAP=file the run writes, per
test, the exercises it reached; with UNDER_API_SELECT=file only the tests listed there run;
UNDER_API_EXERCISE_TRACE=0 turns the trace off (a wrong answer's run needs only which test
failed, and stubs are still found by the messages of their exceptions).
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from shared.exercise_table import order, summary_lines
from shared.exercises import (
    ROOT,
    Region,
    code_lines,
    copy_regions,
    parse_stage,
    reference_body,
    shown,
    stripped_numbers,
)

STUB_MESSAGE = re.compile(r"exercise (\d+\.\d+) \([\w-]+\): see \S+#exercise-\d+-\d+")
FILE_LINE = re.compile(r"File \"([^\"]+)\", line (\d+)|([^\s:\"']+\.py):(\d+)")
NAMES_SHOWN = 8  # failing tests named under an exercise (--exercise-names changes it)
WORKSPACE_EXAMPLES = 20  # hypothesis examples per test at most, in a workspace run


def workspace_dir() -> Path:
    """The folder the root conftest.py puts first on sys.path (spelled the same way, so that
    code objects' file names match). UNDER_API_WORKSPACE_DIR: a scratch copy (check-exercises)."""
    return Path(os.environ.get("UNDER_API_WORKSPACE_DIR", str(ROOT / "workspace")))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--exercise-names", type=int, default=NAMES_SHOWN, metavar="N",
                     help="WORKSPACE=1: name at most N failing tests per exercise (0: all)")


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("WORKSPACE") != "1":
        return
    _workspace_hypothesis_profile()
    config.pluginmanager.register(ExerciseReport(config), "exercise-report")


def _workspace_hypothesis_profile() -> None:
    """Fail fast and forget: a stub fails every example, so shrinking one only costs minutes,
    and an example that failed on a stub must not be replayed by the reference run later."""
    from hypothesis import Phase, settings

    settings.register_profile(
        "workspace", database=None, deadline=None, max_examples=WORKSPACE_EXAMPLES,
        phases=[Phase.explicit, Phase.reuse, Phase.generate])
    settings.load_profile("workspace")


@dataclass
class Failure:
    nodeid: str
    stubs: set[str] = field(default_factory=set)  # exercises whose stub it reached
    reached: set[str] = field(default_factory=set)  # exercises whose code it ran
    tracebacks: list[list[str]] = field(default_factory=list)  # exercises each passes, outer first

    def blame(self, mine: set[str]) -> tuple[str, set[str]]:
        """("stub", exercises); ("wrong", the learner's exercises it raised in, or the only one
        it ran); ("maybe", the learner's exercises it ran, when it ran several and raised in none
        of them: one of them is wrong); or ("none", {})."""
        if self.stubs:
            return "stub", self.stubs
        raised = {next(n for n in reversed(tb) if n in mine)  # the innermost of each traceback
                  for tb in self.tracebacks if mine.intersection(tb)}
        if raised:
            return "wrong", raised
        written = self.reached & mine
        if len(written) > 1:
            return "maybe", written
        return ("wrong", written) if written else ("none", set())


class ExerciseReport:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.copies = {p.name: p for p in sorted((workspace_dir() / "stages").glob("s[0-9]*_*"))}
        self.regions: dict[str, Region] = {}
        self.names: dict[str, str] = {}  # exercise number -> name
        self.mine: set[str] = set()  # the learner's to write: stripped, or edited since
        for name, copy in self.copies.items():
            regions = copy_regions(copy)
            self.regions.update(regions)
            self.mine |= _learners(name, copy, regions)
            stage = ROOT / "stages" / name
            if stage.is_dir():
                self.names.update({e.number: e.name for e in parse_stage(stage)})
        # per file name (as imported, and resolved): (first line, last line, number) of each
        # region's code, the marker lines excluded
        self.spans: dict[str, list[tuple[int, int, str]]] = {}
        for r in self.regions.values():
            last = r.end - 1 if r.closed else r.end
            for name in {str(r.path), str(r.path.resolve())}:
                self.spans.setdefault(name, []).append((r.start + 1, last, r.number))
        self.here = config.invocation_params.dir
        self.by_code: dict[Any, list[tuple[int, int, str]]] = {}
        self.current: set[str] = set()
        self.reached: dict[str, set[str]] = {}
        self.failures: dict[str, Failure] = {}
        self.pending: dict[str, Failure] = {}  # the running test's exceptions, until reported
        self.passed: set[str] = set()
        self.durations: dict[str, float] = {}
        self.stages_run: set[str] = set()
        if os.environ.get("UNDER_API_EXERCISE_TRACE") != "0":  # check-exercises' wrong answers
            sys.settrace(self._call)  # read only which test failed first: they go untraced
            threading.settrace(self._call)

    # -- the trace: which exercise regions does a test run ---------------------------------

    def _call(self, frame: Any, event: str, arg: Any) -> Any:
        code = frame.f_code
        if code.co_filename not in self.spans:
            return None
        spans = self.by_code.get(code)
        if spans is None:
            lines = [line for _, _, line in code.co_lines() if line is not None] or [0]
            spans = [s for s in self.spans[code.co_filename]
                     if s[0] <= max(lines) and min(lines) <= s[1]]
            self.by_code[code] = spans
        return self._line_tracer(spans) if spans else None

    def _line_tracer(self, spans: list[tuple[int, int, str]]) -> Any:
        def on_line(frame: Any, event: str, arg: Any) -> Any:
            if event == "line":
                line = frame.f_lineno
                for first, last, number in spans:
                    if first <= line <= last:
                        self.current.add(number)
            return on_line

        return on_line

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        sys.settrace(None)
        threading.settrace(None)

    # -- collecting the outcome of each test -------------------------------------------------

    def pytest_collection_modifyitems(self, config: pytest.Config, items: list) -> None:
        select = os.environ.get("UNDER_API_SELECT")
        if select:  # only these tests, in this order
            wanted = {nodeid: k for k, nodeid in enumerate(Path(select).read_text().split("\n"))}
            keep = sorted((item for item in items if item.nodeid in wanted),
                          key=lambda item: wanted[item.nodeid])
            config.hook.pytest_deselected(items=[i for i in items if i.nodeid not in wanted])
            items[:] = keep
        for item in items:
            parts = Path(item.nodeid.split("::")[0]).parts
            if len(parts) > 1 and parts[0] == "tests":
                self.stages_run.add(parts[1])
            _fewer_examples(item)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: Any) -> Any:
        self.current = set()
        try:
            return (yield)
        finally:
            self.reached[item.nodeid] = self.current
            self.pending.pop(item.nodeid, None)
            if item.nodeid not in self.failures:
                self.passed.add(item.nodeid)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> Any:
        """A failure that reached a stub gets a one-line report, built here: pytest's own
        traceback report costs about 0.1 s a failure, minutes for a stage of stubs."""
        if call.excinfo is None or isinstance(call.excinfo.value, pytest.skip.Exception):
            return None
        # pending until pytest says it failed: an xfail test's exception is no failure
        failure = self.pending.setdefault(item.nodeid, Failure(item.nodeid))
        self._record(failure, "", call.excinfo.value, call.excinfo.tb)
        if not failure.stubs:
            return None
        first = min(failure.stubs, key=order)
        region = self.regions[first]
        report = pytest.TestReport(
            item.nodeid, item.location, {k: 1 for k in item.keywords}, "failed",
            f"reached the stub of exercise {first}: {shown(region.path)}:{region.first}",
            call.when, [], call.duration, call.start, call.stop,
            user_properties=item.user_properties)
        report._pdbshown = True  # pytest's FAILURES section skips these: the table lists them
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.durations[report.nodeid] = self.durations.get(report.nodeid, 0.0) + report.duration
        if report.failed:
            failure = self.failures.setdefault(
                report.nodeid, self.pending.get(report.nodeid) or Failure(report.nodeid))
            if not hasattr(report, "_pdbshown"):  # file:line places in its text
                self._record(failure, report.longreprtext, None, None)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            failure = self.failures.setdefault(report.nodeid, Failure(report.nodeid))
            self._record(failure, report.longreprtext, None, None)

    def _record(self, failure: Failure, text: str, exc: BaseException | None, tb: Any) -> None:
        """Note what a failure reached: stubs named in its exceptions or text, and the
        exercise regions it ran or that its tracebacks pass through."""
        texts = [text]
        places: list[list[tuple[str, int]]] = []  # one list per traceback, outer frame first
        seen: set[int] = set()
        while exc is not None and id(exc) not in seen:  # the whole chain: causes, contexts
            seen.add(id(exc))
            texts.append(str(exc))
            tb = exc.__traceback__ if tb is None else tb
            chain = []
            while tb is not None:
                chain.append((tb.tb_frame.f_code.co_filename, tb.tb_lineno))
                tb = tb.tb_next
            places.append(chain)
            exc, tb = exc.__cause__ or exc.__context__, None
        for t in texts:
            failure.stubs |= {n for n in STUB_MESSAGE.findall(t) if n in self.regions}
            if t is text:
                places.append([(m[1] or m[3], int(m[2] or m[4])) for m in FILE_LINE.finditer(t)])
        for chain in places:
            failure.tracebacks.append(self._regions_at(chain))
            failure.reached |= set(failure.tracebacks[-1])
        failure.reached |= self.current
        failure.stubs |= {n for n in failure.reached if self.regions[n].stub is not None}

    def _regions_at(self, places: list[tuple[str, int]]) -> list[str]:
        """The exercises whose code holds these (file, line) places, in the places' order."""
        found = []
        for filename, line in places:
            spans = self.spans.get(filename)
            if spans is None and not os.path.isabs(filename):  # as pytest prints it
                spans = self.spans.get(str((self.here / filename).resolve()))
            found += [number for first, last, number in spans or () if first <= line <= last]
        return found

    # -- the table -----------------------------------------------------------------------------

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        out = os.environ.get("UNDER_API_EXERCISE_MAP")
        if out:  # in the order the tests ran
            data = {
                "reached": {nodeid: sorted(hits) for nodeid, hits in self.reached.items()},
                "failed": {f.nodeid: {"stubs": sorted(f.stubs), "reached": sorted(f.reached)}
                           for f in self.failures.values()},
                "durations": self.durations,
            }
            Path(out).write_text(json.dumps(data, indent=0))

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        limit = self.config.getoption("exercise_names")
        lines = summary_lines(self, limit if limit > 0 else None)
        for line in lines:
            if line.startswith("="):
                terminalreporter.write_sep("=", line.strip("= "))
            else:
                terminalreporter.write_line(line)


def _learners(name: str, copy: Path, regions: dict[str, Region]) -> set[str]:
    """The exercises of a copy that hold the learner's code: those `strip` took out, and any
    other whose code no longer reads as the reference's (ONLY=... keeps the reference)."""
    stage = ROOT / "stages" / name
    reference = {e.number: e for e in parse_stage(stage)} if stage.is_dir() else {}
    stripped = stripped_numbers(copy)
    mine = set()
    for number, r in regions.items():
        body = r.path.read_text().splitlines()[r.start : r.end - 1 if r.closed else r.end]
        ex = reference.get(number)
        if stripped is None or number in stripped or ex is None or \
                code_lines(body) != code_lines(reference_body(ex)):
            mine.add(number)
    return mine


def _fewer_examples(item: pytest.Item) -> None:
    """At most WORKSPACE_EXAMPLES hypothesis examples per test in a workspace run, the same ones
    every run: a learner's table does not change between two runs of the same code."""
    test = getattr(item, "obj", None)
    # set by @settings on a @given test; hypothesis reads it when the test runs
    current = getattr(test, "_hypothesis_internal_use_settings", None)
    if current is not None:
        from hypothesis import settings

        test._hypothesis_internal_use_settings = settings(
            current, max_examples=min(current.max_examples, WORKSPACE_EXAMPLES), derandomize=True)
