"""The exercise tool: strip marked blocks out of a stage, and find them again in a learner's copy.

A block in a stage's reference source reads

    # EXERCISE 1.3 (unflatten): rebuild the container from its treedef
    ...reference code...
    # END EXERCISE

`strip` copies stage N into workspace/stages/ with the code of every block (or only of the blocks
named by `--only`) replaced by a `raise NotImplementedError(...)` that names the exercise and its
docs anchor; the two marker lines stay, so the learner writes their answer between them and the
test run can tell which exercises are still stubs (`shared/exercise_report.py`). `check`
(`shared/exercise_check.py`) proves every exercise is real.

    python -m shared.exercises list
    python -m shared.exercises strip --stage 1 [--only 1.2,1.4] [--force]
    python -m shared.exercises check [--stage 1] [--no-mutants]
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import re
import shutil
import sys
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


def stub_text(ex: Exercise, page: str) -> str:
    """The message a stub raises: the exercise and its docs anchor."""
    return f"exercise {ex.number} ({ex.name}): see {page}#{ex.anchor}"


def stub_line(ex: Exercise, indent: str, page: str) -> str:
    return f"{indent}raise NotImplementedError({stub_text(ex, page)!r})"


def strip_text(text: str, exercises: list[Exercise], page: str) -> str:
    """Replace the code of each listed block of `text` (one file) by a raise; keep the markers."""
    lines = text.splitlines()
    for ex in sorted(exercises, key=lambda e: e.start, reverse=True):
        indent = START.match(lines[ex.start - 1])["indent"]
        lines[ex.start : ex.end - 1] = [stub_line(ex, indent, page)]
    return "\n".join(lines) + "\n"


def write_workspace(stage: Path, dest: Path, only: set[str] | None = None,
                    bytecode: bool = False) -> list[Exercise]:
    """Copy `stage` to dest/stages/<stage>, stripping all exercises (or just those in `only`);
    with `bytecode`, its compiled files too (still valid for the files left as they are)."""
    exercises = [e for e in parse_stage(stage) if only is None or e.number in only]
    target = dest / "stages" / stage.name
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(stage, target,
                    ignore=None if bytecode else shutil.ignore_patterns("__pycache__"))
    page = docs_page(stage)
    by_file: dict[Path, list[Exercise]] = {}
    for ex in exercises:
        by_file.setdefault(ex.path, []).append(ex)
    for rel, exs in by_file.items():
        copy = dest / rel
        copy.write_text(strip_text(copy.read_text(), exs, page))
        forget_bytecode(copy)
    record_stripped(target, {e.number for e in exercises})
    return exercises


def forget_bytecode(source: Path) -> None:
    """Remove the compiled file of a source just rewritten: Python would trust it if the new
    text had the old one's size and modification second."""
    Path(importlib.util.cache_from_source(str(source))).unlink(missing_ok=True)


STRIPPED = ".stripped"  # in a learner's copy: the exercises `strip` took out, one a line


def record_stripped(copy: Path, numbers: set[str]) -> None:
    """Add `numbers` to the copy's list of stripped exercises: those are the learner's to write;
    the others keep the reference code (`make exercise ONLY=...`)."""
    known = stripped_numbers(copy) or set()
    (copy / STRIPPED).write_text("".join(f"{n}\n" for n in sorted(known | numbers)))


def stripped_numbers(copy: Path) -> set[str] | None:
    """The exercises stripped from a copy; None for a copy made before the list was kept."""
    path = copy / STRIPPED
    return set(path.read_text().split()) if path.exists() else None


def code_lines(lines: list[str]) -> list[str]:
    """The code of a block, ignoring indentation, blank lines and comment lines."""
    stripped = (line.strip() for line in lines)
    return [line for line in stripped if line and not line.startswith("#")]


def reference_body(ex: Exercise) -> list[str]:
    """The reference code between an exercise's markers."""
    return (ROOT / ex.path).read_text().splitlines()[ex.start : ex.end - 1]


# A learner's copy: the markers of `strip` (and the older "# Exercise N.K (name): ..." line that
# stood alone, without an END marker), read leniently, because the learner edits this file.
COPY_START = re.compile(r"^(?P<indent>[ \t]*)# (?:EXERCISE|Exercise) (?P<number>\d+\.\d+) "
                        r"\((?P<name>[\w-]+)\)")


@dataclass(frozen=True)
class Region:
    """Where exercise `number` sits in a learner's copy (1-based lines, markers included)."""

    number: str
    path: Path  # under the copy's folder, spelled as that folder was given
    start: int  # the EXERCISE marker
    end: int  # the END EXERCISE marker, or the last line of the enclosing function without one
    stub: int | None  # the line of its NotImplementedError stub, while the stub is there
    closed: bool  # whether the END EXERCISE marker is there

    @property
    def first(self) -> int:
        """The line to point a learner at: the stub while there is one, else the marker."""
        return self.stub or self.start


def _enclosing_end(source: str, line: int) -> int:
    """The last line of the innermost function or class around `line` (or `line` itself)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return line
    best = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.lineno <= line <= (node.end_lineno or node.lineno):
                if best is None or node.lineno >= best.lineno:
                    best = node
    return best.end_lineno if best is not None and best.end_lineno else line


def copy_regions(copy: Path) -> dict[str, Region]:
    """Every exercise region in a learner's copy of one stage, by number."""
    found: dict[str, Region] = {}
    for path in sorted(copy.rglob("*.py")):
        source = path.read_text()
        lines = source.splitlines()
        starts = [(i + 1, m) for i, line in enumerate(lines) if (m := COPY_START.match(line))]
        for k, (start, m) in enumerate(starts):
            stop = starts[k + 1][0] if k + 1 < len(starts) else len(lines) + 1
            end = next((i for i in range(start + 1, stop) if END.match(lines[i - 1])), None)
            closed = end is not None
            if end is None:
                end = min(_enclosing_end(source, start), stop - 1)
            marker = f"NotImplementedError('exercise {m['number']} ("
            stub = next((i for i in range(start + 1, end + 1)
                         if marker in lines[i - 1] or marker.replace("'", '"') in lines[i - 1]),
                        None)
            found.setdefault(m["number"], Region(m["number"], path, start, end, stub, closed))
    return found


def shown(path: Path) -> str:
    """A path as a learner reads it: relative to the repository when it is inside it."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _strip_in_place(stage: Path, copy: Path, wanted: list[Exercise], force: bool) -> None:
    """Stub the `wanted` exercises inside an existing copy, leaving everything else as it is."""
    page = docs_page(stage)
    regions = copy_regions(copy)
    for ex in wanted:
        region = regions.get(ex.number)
        if region is None or not region.closed:
            raise SystemExit(
                f"cannot find exercise {ex.number} between '# EXERCISE {ex.number} ...' and "
                f"'# END EXERCISE' in {shown(copy)}; run `make exercise STAGE={stage_number(stage)}"
                f" FORCE=1` for a fresh copy (it overwrites your work)")
        body = region.path.read_text().splitlines()[region.start : region.end - 1]
        if region.stub is not None or code_lines(body) == code_lines(reference_body(ex)):
            continue
        if not force:
            raise SystemExit(
                f"exercise {ex.number} in {shown(region.path)}:{region.start} holds your own "
                f"code; add FORCE=1 to replace it by the stub")
    for ex in sorted(wanted, key=lambda e: regions[e.number].start, reverse=True):
        region = regions[ex.number]
        if region.stub is not None:
            continue
        lines = region.path.read_text().splitlines()
        indent = COPY_START.match(lines[region.start - 1])["indent"]
        lines[region.start : region.end - 1] = [stub_line(ex, indent, page)]
        region.path.write_text("\n".join(lines) + "\n")
    record_stripped(copy, {ex.number for ex in wanted})


def stage_number(stage: Path) -> int:
    return int(stage.name[1:3])


def strip(n: int, force: bool, only: list[str] | None = None) -> None:
    """`make exercise STAGE=n [ONLY=n.k,...] [FORCE=1]`."""
    stage = stage_dir(n)
    exercises = parse_stage(stage)
    if only is not None:
        known = {e.number for e in exercises}
        unknown = [k for k in only if k not in known]
        if unknown:
            raise SystemExit(f"stage {n} has no exercise {', '.join(unknown)}; its exercises are "
                             f"{', '.join(e.number for e in exercises)}")
    wanted = [e for e in exercises if only is None or e.number in only]
    dest = ROOT / "workspace"
    target = dest / "stages" / stage.name
    if target.exists() and only is not None:
        _strip_in_place(stage, target, wanted, force)
        print(f"stubbed {_plural(len(wanted), 'exercise')} in {shown(target)}; everything else "
              "in your copy is as it was:")
    elif target.exists() and not force:
        raise SystemExit(
            f"{shown(target)} exists and may hold your work; run `make exercise STAGE={n} "
            "FORCE=1` to overwrite it, or add ONLY=N.K to stub single exercises in it"
        )
    else:
        write_workspace(stage, dest, only=None if only is None else set(only))
        rest = "" if only is None else " (the others keep the reference code)"
        print(f"wrote {shown(target)} with {_plural(len(wanted), 'exercise')} stripped{rest}:")
    regions = copy_regions(target)
    for ex in wanted:
        region = regions[ex.number]
        print(f"  {ex.number} ({ex.name}) {shown(region.path)}:{region.first}  {ex.task}")
    print(f"read {docs_page(stage)}#exercises, then run `make test-stage-{n} WORKSPACE=1`")


def built_stages() -> list[int]:
    return sorted(int(p.name[1:3]) for p in (ROOT / "stages").glob("s[0-9][0-9]_*") if p.is_dir())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m shared.exercises")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list every stage's exercises")
    p_strip = sub.add_parser("strip", help="copy a stage into workspace/ with exercises stripped")
    p_strip.add_argument("--stage", type=int, required=True)
    p_strip.add_argument("--only", help="comma-separated exercise numbers, e.g. 4.1,4.7")
    p_strip.add_argument("--force", action="store_true")
    p_check = sub.add_parser("check", help="prove each exercise is reached and tested")
    p_check.add_argument("--stage", type=int)
    p_check.add_argument("--no-mutants", action="store_true",
                         help="skip the wrong answers of shared/exercise_mutants.py")
    p_check.add_argument("--remap", action="store_true",
                         help="trace every test of the stage to find the tests that reach each "
                              "exercise, and rewrite shared/exercise_map.json and "
                              "shared/exercise_catches.json")
    args = parser.parse_args(argv)
    try:
        if args.command == "list":
            for n in built_stages():
                for ex in parse_stage(stage_dir(n)):
                    print(f"{ex.number:>5} ({ex.name}) {ex.path}:{ex.start}  {ex.task}")
            return 0
        if args.command == "strip":
            only = None
            if args.only:
                only = [k.strip() for k in args.only.split(",") if k.strip()]
            strip(args.stage, args.force, only)
            return 0
        from shared.exercise_check import check

        stages = [args.stage] if args.stage else built_stages()
        return check(stages, mutants=not args.no_mutants, remap=args.remap)
    except ExerciseMarkerError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
