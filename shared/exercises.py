"""The exercise tool: strip marked blocks out of a stage, and prove every exercise is real.

A block in a stage's reference source reads

    # EXERCISE 1.3 (unflatten): rebuild the container from its treedef
    ...reference code...
    # END EXERCISE

`strip` copies stage N into workspace/stages/ with every block replaced by a `raise
NotImplementedError(...)` that names the exercise and its docs anchor. `check` proves, for each
built stage, that the stripped copy imports, and that stripping any one exercise alone makes at
least one of the stage's tests fail by reaching that exercise's stub.

    python -m shared.exercises list
    python -m shared.exercises strip --stage 1 [--force]
    python -m shared.exercises check [--stage 1]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
START = re.compile(
    r"^(?P<indent>[ \t]*)# EXERCISE (?P<number>\d+\.\d+) \((?P<name>[\w-]+)\): (?P<task>\S.*)$"
)
END = re.compile(r"^[ \t]*# END EXERCISE\s*$")
LOOSE = re.compile(r"#\s*(END\s+)?EXERCISE\b")  # anything that looks like a marker


class ExerciseMarkerError(ValueError):
    """A malformed marker; the message starts with `file:line:`."""


@dataclass(frozen=True)
class Exercise:
    number: str  # "1.3"
    name: str  # "unflatten"
    task: str  # the one-line description after the colon
    path: Path  # source file, relative to the stage's parent folder
    start: int  # 1-based line of the START marker
    end: int  # 1-based line of the END marker

    @property
    def anchor(self) -> str:
        return "exercise-" + self.number.replace(".", "-")


def stage_dir(n: int) -> Path:
    """The reference folder `stages/sNN_<name>` of stage n; a clear error if it is not built."""
    found = sorted((ROOT / "stages").glob(f"s{n:02d}_*"))
    if not found:
        raise SystemExit(f"stage {n} is not built yet (no stages/s{n:02d}_<name>/ folder)")
    return found[0]


def docs_page(stage: Path) -> str:
    """`docs/stages/NN-<name>.md` for `stages/sNN_<name>`, e.g. 03-partial-eval.md."""
    return f"docs/stages/{stage.name[1:3]}-{stage.name[4:].replace('_', '-')}.md"


def parse_file(path: Path, display: str) -> list[Exercise]:
    """All exercise blocks of one source file, checking that markers are well formed."""
    found: list[Exercise] = []
    open_block: tuple[re.Match, int] | None = None
    for lineno, line in enumerate(path.read_text().splitlines(), start=1):
        start, end = START.match(line), END.match(line)
        if start:
            if open_block is not None:
                raise ExerciseMarkerError(
                    f"{display}:{lineno}: EXERCISE {start['number']} starts inside EXERCISE "
                    f"{open_block[0]['number']} (opened at line {open_block[1]}); close it first"
                )
            open_block = (start, lineno)
        elif end:
            if open_block is None:
                raise ExerciseMarkerError(f"{display}:{lineno}: END EXERCISE without an EXERCISE")
            m, first = open_block
            found.append(Exercise(m["number"], m["name"], m["task"], Path(display), first, lineno))
            open_block = None
        elif LOOSE.search(line):
            raise ExerciseMarkerError(
                f"{display}:{lineno}: malformed exercise marker {line.strip()!r}; expected "
                "'# EXERCISE N.K (name): what to do' or '# END EXERCISE'"
            )
    if open_block is not None:
        m, first = open_block
        raise ExerciseMarkerError(
            f"{display}:{first}: EXERCISE {m['number']} ({m['name']}) is never closed "
            "(no '# END EXERCISE' before the end of the file)"
        )
    return found


def parse_stage(stage: Path) -> list[Exercise]:
    """Every exercise of a stage, numbered N.K for stage N with no number used twice."""
    n = int(stage.name[1:3])
    exercises: list[Exercise] = []
    seen: dict[str, Exercise] = {}
    for path in sorted(stage.rglob("*.py")):
        display = str(path.relative_to(stage.parent.parent))
        for ex in parse_file(path, display):
            if ex.number.split(".")[0] != str(n):
                raise ExerciseMarkerError(
                    f"{display}:{ex.start}: exercise {ex.number} is in stage {n}; "
                    f"number it {n}.K"
                )
            if ex.number in seen:
                first = seen[ex.number]
                raise ExerciseMarkerError(
                    f"{display}:{ex.start}: duplicate exercise number {ex.number} "
                    f"(already used at {first.path}:{first.start})"
                )
            seen[ex.number] = ex
            exercises.append(ex)
    return sorted(exercises, key=lambda e: int(e.number.split(".")[1]))


def stub_line(ex: Exercise, indent: str, page: str) -> str:
    message = f"exercise {ex.number} ({ex.name}): see {page}#{ex.anchor}"
    return f"{indent}raise NotImplementedError({message!r})"


def strip_text(text: str, exercises: list[Exercise], page: str) -> str:
    """Replace each listed block of `text` (one file) by its task comment and a raise."""
    lines = text.splitlines()
    for ex in sorted(exercises, key=lambda e: e.start, reverse=True):
        indent = START.match(lines[ex.start - 1])["indent"]
        lines[ex.start - 1 : ex.end] = [
            f"{indent}# Exercise {ex.number} ({ex.name}): {ex.task}",
            stub_line(ex, indent, page),
        ]
    return "\n".join(lines) + "\n"


def write_workspace(stage: Path, dest: Path, only: set[str] | None = None) -> list[Exercise]:
    """Copy `stage` to dest/stages/<stage>, stripping all exercises (or just those in `only`)."""
    exercises = [e for e in parse_stage(stage) if only is None or e.number in only]
    target = dest / "stages" / stage.name
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(stage, target, ignore=shutil.ignore_patterns("__pycache__"))
    page = docs_page(stage)
    by_file: dict[Path, list[Exercise]] = {}
    for ex in exercises:
        by_file.setdefault(ex.path, []).append(ex)
    for rel, exs in by_file.items():
        copy = dest / rel
        copy.write_text(strip_text(copy.read_text(), exs, page))
    return exercises


def strip(n: int, force: bool) -> None:
    stage = stage_dir(n)
    dest = ROOT / "workspace"
    target = dest / "stages" / stage.name
    if target.exists() and not force:
        raise SystemExit(
            f"{target.relative_to(ROOT)} exists and may hold your work; "
            f"run `make exercise STAGE={n} FORCE=1` to overwrite it"
        )
    exercises = write_workspace(stage, dest)
    print(f"wrote {target.relative_to(ROOT)} with {len(exercises)} exercises stripped:")
    for ex in exercises:
        print(f"  {ex.number} ({ex.name}) {ex.path}:{ex.start}  {ex.task}")
    print(f"read {docs_page(stage)}#exercises, then run `make test-stage-{n} WORKSPACE=1`")


def _pytest(stage: Path, workspace: Path, stop_first: bool) -> subprocess.CompletedProcess:
    env = dict(os.environ, WORKSPACE="1", UNDER_API_WORKSPACE_DIR=str(workspace))
    tests = ROOT / "tests" / stage.name
    cmd = [sys.executable, "-m", "pytest", str(tests), "-q", "-p", "no:cacheprovider"]
    if stop_first:
        cmd.append("-x")
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)


def check_stage(stage: Path) -> list[str]:
    """Problems with a stage's exercises; an empty list means every exercise is real."""
    problems: list[str] = []
    exercises = parse_stage(stage)
    page = ROOT / docs_page(stage)
    page_text = page.read_text() if page.exists() else ""
    for ex in exercises:
        if "{#" + ex.anchor + "}" not in page_text:
            problems.append(f"{ex.number} ({ex.name}): {docs_page(stage)} has no #{ex.anchor}")

    with tempfile.TemporaryDirectory() as tmp:
        all_stripped = Path(tmp) / "all"
        write_workspace(stage, all_stripped)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(all_stripped), str(ROOT)]))
        probe = f"import stages.{stage.name} as m; print(m.__file__)"
        done = subprocess.run([sys.executable, "-c", probe], env=env, cwd=tmp,
                              capture_output=True, text=True)
        if done.returncode != 0 or str(all_stripped) not in done.stdout:
            problems.append(f"the stripped copy does not import:\n{done.stderr[-2000:]}")

        def one(ex: Exercise) -> str | None:
            ws = Path(tmp) / ex.anchor
            write_workspace(stage, ws, only={ex.number})
            run = _pytest(stage, ws, stop_first=True)
            reached = f"exercise {ex.number} ({ex.name})" in run.stdout + run.stderr
            if run.returncode == 0:
                return f"{ex.number} ({ex.name}): stripped alone, every test still passes"
            if not reached:
                tail = (run.stdout + run.stderr)[-1500:]
                return f"{ex.number} ({ex.name}): tests fail but never reach its stub:\n{tail}"
            return None

        with ThreadPoolExecutor(max_workers=2) as pool:
            problems += [p for p in pool.map(one, exercises) if p]
    return problems


def check(stages: list[int]) -> int:
    failed = False
    for n in stages:
        stage = stage_dir(n)
        exercises = parse_stage(stage)
        problems = check_stage(stage)
        status = "ok" if not problems else "FAILED"
        print(f"stage {n} ({stage.name}): {len(exercises)} exercises, {status}")
        for ex in exercises:
            print(f"  {ex.number} ({ex.name})")
        for p in problems:
            print(f"  problem: {p}")
        failed = failed or bool(problems)
    return 1 if failed else 0


def built_stages() -> list[int]:
    return sorted(int(p.name[1:3]) for p in (ROOT / "stages").glob("s[0-9][0-9]_*") if p.is_dir())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m shared.exercises")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list every stage's exercises")
    p_strip = sub.add_parser("strip", help="copy a stage into workspace/ with exercises stripped")
    p_strip.add_argument("--stage", type=int, required=True)
    p_strip.add_argument("--force", action="store_true")
    p_check = sub.add_parser("check", help="prove each exercise is reached and tested")
    p_check.add_argument("--stage", type=int)
    args = parser.parse_args(argv)
    try:
        if args.command == "list":
            for n in built_stages():
                for ex in parse_stage(stage_dir(n)):
                    print(f"{ex.number:>5} ({ex.name}) {ex.path}:{ex.start}  {ex.task}")
            return 0
        if args.command == "strip":
            strip(args.stage, args.force)
            return 0
        return check([args.stage] if args.stage else built_stages())
    except ExerciseMarkerError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
