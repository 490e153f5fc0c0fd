"""The exercise tool itself: stripping (all, or ONLY some), finding exercises in a learner's copy,
and clear errors for malformed markers."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from shared.exercises import (
    ROOT,
    ExerciseMarkerError,
    copy_regions,
    parse_stage,
    stripped_numbers,
    write_workspace,
)

GOOD = textwrap.dedent('''\
    def double(x):
        """Twice x."""
        # EXERCISE 9.1 (double): return twice x
        y = x + x
        return y
        # END EXERCISE


    def triple(x):
        # EXERCISE 9.2 (triple): return three times x
        return 3 * x
        # END EXERCISE
''')


def _stage(tmp_path, source: str, name: str = "s09_toy"):
    stage = tmp_path / "stages" / name
    stage.mkdir(parents=True)
    (stage / "__init__.py").write_text("from .toy import double, triple\n")
    (stage / "toy.py").write_text(source)
    return stage


STRIPPED = textwrap.dedent('''\
    def double(x):
        """Twice x."""
        # EXERCISE 9.1 (double): return twice x
        raise NotImplementedError('exercise 9.1 (double): see docs/stages/09-toy.md#exercise-9-1')
        # END EXERCISE


    def triple(x):
        # EXERCISE 9.2 (triple): return three times x
        raise NotImplementedError('exercise 9.2 (triple): see docs/stages/09-toy.md#exercise-9-2')
        # END EXERCISE
''')


def test_strip_replaces_each_blocks_code_by_a_stub_between_the_markers(tmp_path):
    stage = _stage(tmp_path, GOOD)
    write_workspace(stage, tmp_path / "ws")
    copy = (tmp_path / "ws" / "stages" / "s09_toy" / "toy.py").read_text()
    assert copy == STRIPPED
    probe = "import stages.s09_toy as m; m.triple(1)"
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path / "ws",
                          capture_output=True, text=True)
    assert "NotImplementedError: exercise 9.2 (triple): see docs/stages/09-toy.md#exercise-9-2" \
        in done.stderr


def test_strip_only_one_exercise_leaves_the_others_working(tmp_path):
    stage = _stage(tmp_path, GOOD)
    write_workspace(stage, tmp_path / "ws", only={"9.2"})
    copy = (tmp_path / "ws" / "stages" / "s09_toy" / "toy.py").read_text()
    assert "y = x + x" in copy and "return 3 * x" not in copy
    assert stripped_numbers(tmp_path / "ws" / "stages" / "s09_toy") == {"9.2"}


def test_a_checks_copy_keeps_the_compiled_files_of_only_the_files_left_as_they_are(tmp_path):
    import compileall
    import importlib.util

    stage = _stage(tmp_path, GOOD)
    (stage / "other.py").write_text("ONE = 1\n")
    assert compileall.compile_dir(stage, quiet=1)

    def compiled(name: str, ws: str) -> bool:
        source = tmp_path / ws / "stages" / "s09_toy" / name
        return Path(importlib.util.cache_from_source(str(source))).exists()

    write_workspace(stage, tmp_path / "ws", only={"9.2"}, bytecode=True)  # check-exercises'
    assert compiled("other.py", "ws") and compiled("__init__.py", "ws")
    assert not compiled("toy.py", "ws")  # rewritten: its old bytecode would run the reference
    write_workspace(stage, tmp_path / "learner")  # a learner's copy: source only
    assert not (tmp_path / "learner" / "stages" / "s09_toy" / "__pycache__").exists()


def test_regions_are_found_in_a_learners_copy_with_its_own_line_numbers(tmp_path):
    stage = _stage(tmp_path, GOOD)
    write_workspace(stage, tmp_path / "ws")
    copy = tmp_path / "ws" / "stages" / "s09_toy"
    toy = copy / "toy.py"
    # the learner answers 9.1 with three lines; 9.2 moves down by two
    toy.write_text(toy.read_text().replace(
        "    raise NotImplementedError('exercise 9.1 (double): see docs/stages/09-toy.md"
        "#exercise-9-1')", "    y = x\n    y = y + x\n    return y"))
    regions = copy_regions(copy)
    assert (regions["9.1"].start, regions["9.1"].end, regions["9.1"].stub) == (3, 7, None)
    assert (regions["9.2"].start, regions["9.2"].end, regions["9.2"].stub) == (11, 13, 12)
    assert regions["9.2"].first == 12 and regions["9.1"].first == 3


def test_a_copy_without_end_markers_ends_each_region_with_its_function(tmp_path):
    copy = tmp_path / "s09_toy"
    copy.mkdir()
    (copy / "toy.py").write_text(
        "def f(x):\n    # Exercise 9.1 (f): do it\n    raise NotImplementedError("
        "'exercise 9.1 (f): see docs/stages/09-toy.md#exercise-9-1')\n\n\ndef g():\n"
        "    return 1\n")
    region = copy_regions(copy)["9.1"]
    assert (region.start, region.end, region.stub, region.closed) == (2, 3, 3, False)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("def f():\n    # EXERCISE 9.1 (f): do it\n    return 1\n",
         "stages/s09_toy/toy.py:2: EXERCISE 9.1 (f) is never closed"),
        ("def f():\n    return 1\n    # END EXERCISE\n",
         "stages/s09_toy/toy.py:3: END EXERCISE without an EXERCISE"),
        ("def f():\n    # EXERCISE 9.1 f: do it\n    return 1\n",
         "stages/s09_toy/toy.py:2: malformed exercise marker"),
        ("def f():\n    # EXERCISE 9.1 (f): a\n    # EXERCISE 9.2 (g): b\n",
         "stages/s09_toy/toy.py:3: EXERCISE 9.2 starts inside EXERCISE 9.1"),
        ("def f():\n    # EXERCISE 3.1 (f): a\n    return 1\n    # END EXERCISE\n",
         "stages/s09_toy/toy.py:2: exercise 3.1 is in stage 9"),
        (GOOD.replace("9.2", "9.1"),
         "stages/s09_toy/toy.py:10: duplicate exercise number 9.1 (already used at "
         "stages/s09_toy/toy.py:3)"),
    ],
    ids=["unclosed", "stray-end", "malformed", "nested", "wrong-stage", "duplicate"],
)
def test_malformed_markers_are_errors_naming_file_and_line(tmp_path, source, message):
    stage = _stage(tmp_path, source)
    with pytest.raises(ExerciseMarkerError) as err:
        parse_stage(stage)
    assert str(err.value).startswith(message)


def test_strip_refuses_to_overwrite_a_learners_workspace_without_force(tmp_path, monkeypatch):
    import shared.exercises as tool

    stage = _stage(tmp_path, GOOD)
    monkeypatch.setattr(tool, "ROOT", tmp_path)
    (tmp_path / "workspace" / "stages" / stage.name).mkdir(parents=True)
    with pytest.raises(SystemExit, match=r"exists and may hold your work; run `make exercise "
                                         r"STAGE=9 FORCE=1` to overwrite it"):
        tool.strip(9, force=False)
    tool.strip(9, force=True)
    assert "NotImplementedError" in (tmp_path / "workspace/stages/s09_toy/toy.py").read_text()


def test_every_reference_stage_parses():
    for stage in sorted((ROOT / "stages").glob("s[0-9][0-9]_*")):
        parse_stage(stage)


def test_strip_prints_workspace_paths_with_the_copys_line_numbers(tmp_path, monkeypatch, capsys):
    import shared.exercises as tool

    _stage(tmp_path, "\n" * 30 + GOOD)  # the stub line is far from the reference's block
    monkeypatch.setattr(tool, "ROOT", tmp_path)
    tool.strip(9, force=False)
    out = capsys.readouterr().out
    assert out.splitlines()[:3] == [
        "wrote workspace/stages/s09_toy with 2 exercises stripped:",
        "  9.1 (double) workspace/stages/s09_toy/toy.py:34  return twice x",
        "  9.2 (triple) workspace/stages/s09_toy/toy.py:40  return three times x",
    ]
    assert " stages/" not in out  # never the reference copy


def test_strip_only_stubs_named_exercises_in_place_and_keeps_the_learners_work(
        tmp_path, monkeypatch, capsys):
    import shared.exercises as tool

    _stage(tmp_path, GOOD)
    monkeypatch.setattr(tool, "ROOT", tmp_path)
    tool.strip(9, force=False, only=["9.1"])
    toy = tmp_path / "workspace/stages/s09_toy/toy.py"
    copy = toy.read_text()
    assert "exercise 9.1 (double)" in copy and "return 3 * x" in copy
    assert "1 exercise stripped (the others keep the reference code)" in capsys.readouterr().out
    toy.write_text(copy.replace("raise NotImplementedError('exercise 9.1 (double): see "
                                "docs/stages/09-toy.md#exercise-9-1')", "return x * 2  # mine"))
    tool.strip(9, force=False, only=["9.2"])  # in place: 9.1 stays the learner's
    copy = toy.read_text()
    assert "return x * 2  # mine" in copy and "exercise 9.2 (triple): see" in copy
    assert stripped_numbers(toy.parent) == {"9.1", "9.2"}
    assert "stubbed 1 exercise in workspace/stages/s09_toy" in capsys.readouterr().out
    with pytest.raises(SystemExit, match=r"exercise 9.1 in workspace/stages/s09_toy/toy.py:3 "
                                         r"holds your own code; add FORCE=1"):
        tool.strip(9, force=False, only=["9.1"])
    tool.strip(9, force=True, only=["9.1"])
    assert "return x * 2  # mine" not in toy.read_text()
    with pytest.raises(SystemExit, match=r"stage 9 has no exercise 9.7; its exercises are 9.1, "
                                         r"9.2"):
        tool.strip(9, force=False, only=["9.7"])


def test_a_mutant_replaces_text_on_one_line_or_whole_lines_reindented():
    from shared.exercise_mutants import Mutant, MutantError, apply

    lines = ["def f(x):", "    # EXERCISE 9.1 (f): do it", "    if x:", "        return 1",
             "    return 2", "    # END EXERCISE"]
    one = Mutant("9.1", "returns 3", "return 2", "return 3")
    assert apply(one, lines, 2, 5)[4] == "    return 3"
    block = Mutant("9.1", "no branch", """
        if x:
            return 1
        """, """
        return 1
        """)
    assert apply(block, lines, 2, 5) == ["def f(x):", "    # EXERCISE 9.1 (f): do it",
                                         "    return 1", "    return 2", "    # END EXERCISE"]
    with pytest.raises(MutantError, match="'return 1' occurs 0 times in the exercise's code"):
        apply(Mutant("9.1", "outside the region", "return 1", "return 0"), lines, 4, 5)
    with pytest.raises(MutantError, match="occurs 2 times"):
        apply(Mutant("9.1", "ambiguous", "return", "yield"), lines, 2, 5)


def test_every_exercise_has_wrong_answers_and_each_still_applies_to_its_code():
    from shared.exercise_mutants import MUTANTS, MutantError, apply, mutants_of

    exercises = {ex.number: ex for stage in sorted((ROOT / "stages").glob("s[0-9][0-9]_*"))
                 for ex in parse_stage(stage)}
    assert {m.exercise for m in MUTANTS} <= set(exercises), "a mutant names no exercise"
    problems = []
    for number, ex in exercises.items():
        if not mutants_of(number):
            problems.append(f"{number}: no wrong answers in shared/exercise_mutants.py")
        lines = (ROOT / ex.path).read_text().splitlines()
        for m in mutants_of(number):
            try:
                changed = apply(m, lines, ex.start, ex.end - 1)
            except MutantError as err:
                problems.append(f"{number} {m.mistake!r}: {err}")
                continue
            compile("\n".join(changed), str(ex.path), "exec")
            assert changed != lines
    assert not problems, "\n".join(problems)
