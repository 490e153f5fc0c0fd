"""MkDocs hooks of the course site (mkdocs.yml: `hooks:`).

Spoiler-safe reading. A page includes reference source with pymdownx.snippets
(`--8<-- "stages/sNN_name/file.py:section"` inside a code fence). When an included section holds
an exercise block (`# EXERCISE N.K (name): ...` to `# END EXERCISE`), this hook rewrites the
fence before the snippets extension runs:

- the fence in plain view shows the section as `make exercise` leaves it in the workspace: each
  exercise block replaced by its task comment and a `raise NotImplementedError(...)`;
- the include itself moves, unchanged, into a collapsed `??? success "Show the reference
  solution ..."` block right below, so the solution is one click away and never in plain view,
  nor in the search index (the block is marked `data-search-exclude`).

It works on the include lines, so a new page, or an include re-pointed at another file, is
folded with no change here. tests/course/test_pages.py builds the site and checks that no
exercise's solution code appears outside a collapsed block.
"""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # mkdocs loads this file by path
    sys.path.insert(0, str(ROOT))

from shared.exercises import END, START  # noqa: E402  (the one definition of the markers)

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
INCLUDE = re.compile(r"""^[ \t]*-{1,}8<-{1,}[ \t]+(?P<q>["'])(?P<spec>.+?)(?P=q)[ \t]*$""")
SECTION_MARK = re.compile(r"-{1,}8<-{1,}[ \t]+\[(?P<which>start|end):(?P<name>[\w-]+)\]")
SECTION_NAME = re.compile(r"[A-Za-z][\w-]*")


def read_include(spec: str, base: Path = ROOT) -> str | None:
    """The text a snippets include line inserts (sections only), or None if not understood."""
    path, name = spec, None
    head, sep, tail = spec.rpartition(":")
    if sep and SECTION_NAME.fullmatch(tail):
        path, name = head, tail
    file = base / path
    if not file.is_file():
        return None
    lines = file.read_text().splitlines()
    if name is not None:
        inside, kept = False, []
        for line in lines:
            mark = SECTION_MARK.search(line)
            if mark and mark["name"] == name:
                inside = mark["which"] == "start"
                if not inside:
                    break
                continue
            if inside and not mark:
                kept.append(line)
        lines = kept
    return textwrap.dedent("\n".join(lines))


def docs_anchor(spec: str, number: str) -> str:
    """`docs/stages/NN-name.md#exercise-N-K` for an include of stages/sNN_name/..."""
    m = re.match(r"stages/s(\d\d)_(\w+)/", spec)
    page = f"docs/stages/{m[1]}-{m[2].replace('_', '-')}.md" if m else "the stage's page"
    return f"{page}#exercise-{number.replace('.', '-')}"


def _has_exercise(code: str) -> bool:
    return any(START.match(line) or END.match(line) for line in code.splitlines())


def stub_exercises(code: str, spec: str) -> tuple[str, list[str]]:
    """The code with each exercise block replaced as in the workspace; the exercises found."""
    out: list[str] = []
    found: list[str] = []
    lines = code.splitlines()
    markers = [line for line in lines if START.match(line) or END.match(line)]
    skipping = bool(markers) and bool(END.match(markers[0]))  # the section starts mid-exercise
    if skipping:
        found.append("(cut)")
        out.append("# ... the end of an exercise's reference solution, folded below")
    for line in lines:
        start = START.match(line)
        if start:
            indent, number, name = start["indent"], start["number"], start["name"]
            found.append(f"{number} ({name})")
            message = f"exercise {number} ({name}): see {docs_anchor(spec, number)}"
            out.append(f"{indent}# Exercise {number} ({name}): {start['task']}")
            out.append(f"{indent}raise NotImplementedError({message!r})")
            skipping = True
        elif END.match(line):
            skipping = False
        elif not skipping:
            out.append(line)
    return "\n".join(out), found


def fold_exercises(markdown: str) -> str:
    """Rewrite every fence of includes whose sections hold exercise blocks (see the docstring)."""
    lines = markdown.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            out.append(lines[i])
            i += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        j = i + 1
        while j < len(lines) and not (lines[j].startswith(indent) and
                                      lines[j].strip().startswith(fence) and
                                      lines[j].strip().strip(fence[0]) == ""):
            j += 1
        body = lines[i + 1:j]
        includes = [INCLUDE.match(b) for b in body if b.strip()]
        if includes and all(includes):
            texts = [read_include(m["spec"]) for m in includes]
            if all(t is not None for t in texts) and any(_has_exercise(t) for t in texts):
                out += _folded(lines[i], lines[j] if j < len(lines) else indent + fence,
                               indent, [m["spec"] for m in includes], texts, body)
                i = j + 1
                continue
        out += lines[i:j + 1]
        i = j + 1
    return "\n".join(out)


def _folded(open_line: str, close_line: str, indent: str, specs: list[str], texts: list[str],
            body: list[str]) -> list[str]:
    stubbed, exercises = [], []
    for spec, text in zip(specs, texts, strict=True):
        code, found = stub_exercises(text, spec)
        stubbed.append(code)
        exercises += found
    plain = [open_line] + [indent + line if line else "" for line in
                           "\n".join(stubbed).split("\n")] + [close_line]
    which = ", ".join(exercises)
    noun = "exercises" if len(exercises) > 1 else "exercise"
    title = f"Show the reference solution ({noun} {which})"
    inner = [open_line, *body, close_line]
    folded = [f'{indent}??? success "{title}"', ""] + [
        "    " + line if line.strip() else "" for line in inner]
    if not indent:  # kept out of the search index too, whose previews would show it
        folded = ["<div markdown data-search-exclude>", "", *folded, "", "</div>"]
    return plain + [""] + folded


def on_page_markdown(markdown: str, page, config, files) -> str:
    return fold_exercises(markdown)
