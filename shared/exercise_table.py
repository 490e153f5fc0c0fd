"""The table that ends a WORKSPACE=1 run: every exercise of the stage and where it stands.

States: "to do" (its stub is still there), "wrong" (failing tests raise in its code, or run its
code and no other exercise's, and reach no stub), "maybe wrong" (failing tests run its code and
another exercise's, raising in neither), "done" (written, and only passing tests run it), "not
reached" (written, but no passing test has run it yet), "reference" (it keeps the reference
code: `make exercise ONLY=...` left it), and "missing" (its `# EXERCISE` marker line is gone from
the copy). `shared/exercise_report.py`
gathers what each test reached; this module only words it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shared.exercises import ROOT, docs_page, parse_stage, shown


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _names(nodeids: list[str], limit: int | None) -> list[str]:
    """The failing tests, in the order they ran; with a limit, one line per test function."""
    if limit is None:
        return [f"      {n}" for n in nodeids]
    groups: dict[str, list[str]] = {}
    for n in nodeids:
        groups.setdefault(n.split("[")[0], []).append(n)
    lines = []
    for cases in list(groups.values())[:limit]:
        more = f" (and {_plural(len(cases) - 1, 'more case')})" if len(cases) > 1 else ""
        lines.append(f"      {cases[0]}{more}")
    rest = sum(len(cases) for cases in list(groups.values())[limit:])
    if rest:
        lines.append(f"      ... and {rest} more (PYTEST_ARGS=--exercise-names=0 names them all)")
    return lines


def summary_lines(report: Any, limit: int | None) -> list[str]:
    """The closing table: each stage that ran with a workspace copy, every one of its exercises."""
    failing: dict[str, list[str]] = {}  # exercise -> failing tests blamed on it
    maybe: dict[str, list[str]] = {}  # exercise -> failing tests that ran it with others
    not_exercise: list[str] = []
    for failure in report.failures.values():
        kind, numbers = failure.blame(report.mine)
        if kind == "none":
            not_exercise.append(failure.nodeid)
        for n in numbers:
            (maybe if kind == "maybe" else failing).setdefault(n, []).append(failure.nodeid)
    passing: dict[str, int] = {}  # exercise -> passing tests that ran it
    for nodeid in report.passed:
        for n in report.reached.get(nodeid, ()):
            passing[n] = passing.get(n, 0) + 1
    table = Table(report, failing, passing, limit, maybe)
    lines: list[str] = []
    stage_names = sorted(report.stages_run & set(report.copies))
    for name in stage_names:
        lines += table.stage(name)
    # exercises of other copies (an earlier stage's) that failing tests reach
    numbers = {str(int(name[1:3])) for name in stage_names}
    others = sorted((n for n in {*failing, *maybe} if n.split(".")[0] not in numbers), key=order)
    if others:
        lines.append("= exercises of your other workspace copies that failing tests reach =")
        for n in others:
            lines += table.exercise(n, report.names.get(n, ""), table.state(n), None)
    if not_exercise:
        lines.append(f"not an exercise: {_plural(len(not_exercise), 'failing test')} that "
                     "ran none of your exercises' code")
        lines += _names(not_exercise, None)
    return lines


def order(number: str) -> tuple[int, int]:
    stage, k = number.split(".")
    return int(stage), int(k)


STATES = ("done", "to do", "wrong", "maybe wrong", "not reached", "reference", "missing")


@dataclass
class Table:
    report: Any
    failing: dict[str, list[str]]
    passing: dict[str, int]
    limit: int | None
    maybe: dict[str, list[str]]

    def state(self, number: str) -> str:
        region = self.report.regions.get(number)
        if region is None:
            return "missing"
        if region.stub is not None:
            return "to do"
        if number not in self.report.mine:
            return "reference"
        if number in self.failing:
            return "wrong"
        if number in self.maybe:
            return "maybe wrong"
        return "done" if self.passing.get(number) else "not reached"

    def stage(self, name: str) -> list[str]:
        stage = ROOT / "stages" / name
        exercises = parse_stage(stage) if stage.is_dir() else []
        states = [self.state(ex.number) for ex in exercises]
        number = int(name[1:3])
        if exercises and set(states) <= {"done", "reference"} and not self.report.failures:
            kept = states.count("reference")
            also = f" ({kept} of them keep the reference code)" if kept else ""
            return [f"= all {_plural(len(exercises), 'exercise')} of stage {number} pass{also} ="]
        lines = [f"= exercises of stage {number}: {shown(self.report.copies[name])} ="]
        for ex, state in zip(exercises, states, strict=True):
            lines += self.exercise(ex.number, ex.name, state, f"{docs_page(stage)}#{ex.anchor}")
        counts = [f"{states.count('done')} of {_plural(len(exercises), 'exercise')} done"]
        counts += [f"{states.count(s)} {s}" for s in STATES[1:] if states.count(s)]
        tests = [f for f in self.report.failures if f.startswith(f"tests/{name}/")]
        tail = f"; {_plural(len(tests), 'failing test')}" if tests else ""
        lines.append(f"stage {number}: {', '.join(counts)}{tail}")
        if "reference" in states:
            lines.append(f"(reference: keeps the reference code, as `make exercise STAGE={number} "
                         f"ONLY=...` left it; ONLY={number}.K stubs {number}.K in your copy)")
        return lines

    def exercise(self, number: str, name: str, state: str, anchor: str | None) -> list[str]:
        region = self.report.regions.get(number)
        where = f"{shown(region.path)}:{region.first}" if region else \
            f"its '# EXERCISE {number}' line is gone from your copy"
        label = f"{number} {name}".strip()
        lines = [f"  {label:<24} {state:<11} {where}"]
        if state == "reference":
            return lines
        if anchor:
            lines.append(f"      {anchor}")
        tests = self.failing.get(number, [])
        if state == "to do" and tests:
            verb = "reaches" if len(tests) == 1 else "reach"
            lines.append(f"    {_plural(len(tests), 'failing test')} {verb} its stub:")
        elif state == "to do":
            lines.append("    no test that ran reached it: those that need it fail earlier, or "
                         "were not selected")
        elif state == "wrong":
            verb = "runs its code and fails" if len(tests) == 1 else "run its code and fail"
            also = self.passing.get(number, 0)
            lines.append(f"    {_plural(len(tests), 'failing test')} {verb} (no stub reached; "
                         f"{_plural(also, 'passing test')} run it too):")
        elif state == "maybe wrong":
            tests = self.maybe[number]
            verb = "runs" if len(tests) == 1 else "run"
            lines.append(f"    {_plural(len(tests), 'failing test')} {verb} its code and another "
                         "exercise's, raising in neither (no stub reached): one of them is wrong:")
        elif state == "not reached":
            lines.append("    written, but no passing test has run it yet")
        failed = state in ("to do", "wrong", "maybe wrong")
        return lines + _names(tests, self.limit) if failed else lines
