"""The table that ends a WORKSPACE=1 run, worded from what the run gathered: every state, one
line per exercise, singular and plural as they come."""

from __future__ import annotations

from types import SimpleNamespace

from shared.exercise_report import Failure
from shared.exercise_table import summary_lines
from shared.exercises import ROOT, Region

WS = ROOT / "workspace" / "stages" / "s01_pytrees"


def _report(**changes):
    regions = {
        "1.1": Region("1.1", WS / "tree_util.py", 194, 196, 195, True),  # still a stub
        "1.2": Region("1.2", WS / "pytree.py", 39, 45, None, True),
        "1.3": Region("1.3", WS / "pytree.py", 187, 200, None, True),
        "1.4": Region("1.4", WS / "treedef.py", 82, 104, None, True),
        "1.5": Region("1.5", WS / "tree_util.py", 110, 119, None, True),
        # 1.6: its marker line is gone
    }
    report = SimpleNamespace(
        failures={
            "tests/s01_pytrees/test_a.py::test_stub": Failure(
                "tests/s01_pytrees/test_a.py::test_stub", {"1.1"}, {"1.1", "1.3"}),
            "tests/s01_pytrees/test_a.py::test_wrong": Failure(
                "tests/s01_pytrees/test_a.py::test_wrong", set(), {"1.2", "1.4"}),
            "tests/s01_pytrees/test_b.py::test_other": Failure(
                "tests/s01_pytrees/test_b.py::test_other", set(), {"1.4"}),
        },
        mine={"1.1", "1.2", "1.3", "1.5"},  # 1.4 keeps the reference code
        passed={"tests/s01_pytrees/test_c.py::test_ok"},
        reached={"tests/s01_pytrees/test_c.py::test_ok": {"1.3", "1.4"}},
        stages_run={"s01_pytrees"}, copies={"s01_pytrees": WS}, regions=regions,
        names={})
    for key, value in changes.items():
        setattr(report, key, value)
    return report


def test_every_exercise_gets_one_line_in_its_state_with_its_workspace_place():
    lines = summary_lines(_report(), limit=8)
    rows = [line for line in lines if line.startswith("  1.")]
    assert [row.split()[:3] for row in rows] == [
        ["1.1", "keystr", "to"], ["1.2", "dict-order", "wrong"], ["1.3", "flatten", "done"],
        ["1.4", "unflatten", "reference"], ["1.5", "tree-map", "not"],
        ["1.6", "dataclass", "missing"]]
    assert rows[0].endswith("workspace/stages/s01_pytrees/tree_util.py:195")
    assert rows[1].endswith("workspace/stages/s01_pytrees/pytree.py:39")
    assert "1 failing test reaches its stub:" in "\n".join(lines)
    assert ("1 failing test runs its code and fails (no stub reached; 0 passing tests run it "
            "too):") in "\n".join(lines)
    assert "      tests/s01_pytrees/test_a.py::test_wrong" in lines
    # a failure that ran only reference code is nobody's exercise
    assert lines[-2:] == [
        "not an exercise: 1 failing test that ran none of your exercises' code",
        "      tests/s01_pytrees/test_b.py::test_other"]
    assert ("stage 1: 1 of 6 exercises done, 1 to do, 1 wrong, 1 not reached, 1 reference, "
            "1 missing; 3 failing tests") in lines
    anchors = [line.strip() for line in lines if "#exercise-" in line]
    assert anchors == [f"docs/stages/01-pytrees.md#exercise-1-{k}" for k in (1, 2, 3, 5, 6)]
    assert len(rows) == len(set(rows)) == 6


def test_a_green_run_says_all_exercises_pass():
    regions = {n: Region(n, WS / "x.py", 10 * k, 10 * k + 5, None, True)
               for k, n in enumerate(["1.1", "1.2", "1.3", "1.4", "1.5", "1.6"], start=1)}
    everything = {"1.1", "1.2", "1.3", "1.4", "1.5", "1.6"}
    report = _report(failures={}, regions=regions, mine=everything,
                     reached={"tests/s01_pytrees/test_c.py::test_ok": everything})
    assert summary_lines(report, limit=8) == ["= all 6 exercises of stage 1 pass ="]
    report.mine = {"1.1"}
    assert summary_lines(report, limit=8) == [
        "= all 6 exercises of stage 1 pass (5 of them keep the reference code) ="]


def test_a_failure_is_blamed_on_the_innermost_exercise_it_raised_in_or_else_on_all_it_ran():
    """A failing test that ran two of the learner's exercises: the one its traceback passes
    through last is wrong (an exception inside 1.5, called from 1.3's loop); with no exercise in
    the traceback (an assert in the test), either may be, and the table says so."""
    raised = Failure("tests/s01_pytrees/test_a.py::test_raised", set(), {"1.3", "1.5"},
                     [["1.3", "1.5"]])
    assert raised.blame({"1.3", "1.5"}) == ("wrong", {"1.5"})
    assert raised.blame({"1.3"}) == ("wrong", {"1.3"})  # 1.5 keeps the reference code
    asserted = Failure("tests/s01_pytrees/test_a.py::test_asserted", set(), {"1.3", "1.5"}, [[]])
    assert asserted.blame({"1.3", "1.5"}) == ("maybe", {"1.3", "1.5"})
    assert asserted.blame({"1.5"}) == ("wrong", {"1.5"})
    lines = summary_lines(_report(failures={f.nodeid: f for f in (asserted,)},
                                  mine={"1.2", "1.3", "1.5"}), limit=8)
    rows = {line.split()[0]: line.split()[2:4] for line in lines if line.startswith("  1.")}
    assert rows["1.3"] == rows["1.5"] == ["maybe", "wrong"] and rows["1.2"][0] == "not"
    assert ("    1 failing test runs its code and another exercise's, raising in neither (no stub "
            "reached): one of them is wrong:") in lines
    assert "stage 1: 0 of 6 exercises done, 1 to do, 2 maybe wrong, 1 not reached, 1 reference, " \
        "1 missing; 1 failing test" in lines
