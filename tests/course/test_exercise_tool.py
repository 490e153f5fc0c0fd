"""The exercise tool itself: stripping, and clear errors for malformed markers."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from shared.exercises import ROOT, ExerciseMarkerError, parse_stage, write_workspace

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


def test_strip_replaces_each_block_by_a_stub_naming_the_exercise_and_its_anchor(tmp_path):
    stage = _stage(tmp_path, GOOD)
    write_workspace(stage, tmp_path / "ws")
    copy = (tmp_path / "ws" / "stages" / "s09_toy" / "toy.py").read_text()
    assert "y = x + x" not in copy and "return 3 * x" not in copy
    assert '"""Twice x."""' in copy
    assert ("raise NotImplementedError('exercise 9.1 (double): "
            "see docs/stages/09-toy.md#exercise-9-1')") in copy
    assert "# Exercise 9.2 (triple): return three times x" in copy
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
