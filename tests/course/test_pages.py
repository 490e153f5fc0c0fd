"""The walkthrough pages: explainers named, pictures present and valid, solutions never in view.

The page sources are read directly; the rest builds the site once (`mkdocs build --strict`,
every example on every page runs) and reads the HTML a learner gets. With UNDER_API_SITE set
to a site just built from this tree (`.ci/run` runs `make docs` first), it reads that one.
"""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

from shared.docs_hooks import fold_exercises
from shared.exercises import ROOT, docs_page, parse_stage
from shared.explainers import EXPLAINERS, STAGE_TITLES, for_stage

STAGES = sorted(p for p in (ROOT / "stages").glob("s[0-9][0-9]_*") if p.is_dir())
STAGE_IDS = [p.name for p in STAGES]
DOCS = ROOT / "docs"


def stage_pages(stage: Path) -> list[Path]:
    """The stage's main page first, then its other pages (docs/stages/NN-*.md)."""
    main = ROOT / docs_page(stage)
    others = sorted(p for p in (DOCS / "stages").glob(f"{stage.name[1:3]}-*.md") if p != main)
    return [main, *others]


def box(text: str, title: str) -> str:
    """The body of the admonition `!!! kind "title"` (its indented lines)."""
    m = re.search(rf'^[!?]{{3}}\+? \w+ "{re.escape(title)}"\n((?:    .*\n|\n)+)', text, re.M)
    assert m, f"no {title!r} box"
    return m.group(1)


# ------------------------------------------------------------------ the page sources


def test_the_explainer_list_has_the_23_explainers_once_each():
    titles = [e.title for e in EXPLAINERS]
    assert len(titles) == 23 and len(set(titles)) == 23
    assert all(set(e.stages) <= set(STAGE_TITLES) for e in EXPLAINERS)


@pytest.mark.parametrize("stage", STAGES, ids=STAGE_IDS)
def test_every_stage_page_names_the_explainers_it_answers_at_its_top(stage):
    n = int(stage.name[1:3])
    for i, page in enumerate(stage_pages(stage)):
        text = page.read_text()
        body = box(text, "Explainers answered")
        assert text.index("Explainers answered") < text.index("\n## "), f"{page.name}: not on top"
        named = {e.title for e in EXPLAINERS if f"**{e.title}**" in body}
        if i == 0:  # the main page names every explainer this stage answers, and no other
            assert named == set(for_stage(n)), page.name
        else:
            assert named and named <= set(for_stage(n)), page.name
        for title in named:  # each with at least one link to the section answering it
            item = body.split(f"**{title}**", 1)[1].split("\n    - ", 1)[0]
            assert re.search(r"\]\([^)]+\)", item), f"{page.name}: {title} links nothing"


def test_the_home_page_maps_every_explainer_to_its_stages():
    text = (DOCS / "index.md").read_text()
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0] in {e.title for e in EXPLAINERS}:
            rows[cells[0]] = cells[1]
    assert set(rows) == {e.title for e in EXPLAINERS}
    for e in EXPLAINERS:
        where = rows[e.title]
        assert [int(s) for s in re.findall(r"(\d+) · ", where)] == list(e.stages), e.title
        for s in e.stages:
            page = docs_page(next(p for p in STAGES if int(p.name[1:3]) == s))
            assert f"]({page.removeprefix('docs/')})" in where, f"{e.title}: link stage {s}"


@pytest.mark.parametrize("stage", STAGES, ids=STAGE_IDS)
def test_every_stage_page_says_how_exercises_and_included_code_relate(stage):
    for page in stage_pages(stage):
        note = box(page.read_text(), "Exercises and the code on this page")
        assert "Show the reference solution" in note and "raise NotImplementedError" in note
        assert f"make exercise STAGE={int(stage.name[1:3])}" in note


@pytest.mark.parametrize("stage", STAGES, ids=STAGE_IDS)
def test_every_stage_page_says_where_ours_and_jax_differ(stage):
    text = (ROOT / docs_page(stage)).read_text()
    # stage 10 mirrors torch_xla, and compares itself with torch_xla
    heading = "torch_xla 2.9" if stage.name.startswith("s10") else "JAX 0.10.2"
    section = text.split(f"### Where ours and {heading} differ", 1)
    assert len(section) == 2, docs_page(stage)
    assert section[1].split("\n## ")[0].count("\n- ") >= 3


@pytest.mark.parametrize("stage", STAGES, ids=STAGE_IDS)
def test_every_stage_page_draws_at_least_one_picture_at_build_time(stage):
    text = (ROOT / docs_page(stage)).read_text()
    blocks = re.findall(r'```python exec="on" html="1"[^\n]*\n(.*?)```', text, re.S)
    assert any("shared.diagrams" in b and "print(figure(" in b for b in blocks)


def test_the_fold_hook_shows_the_workspace_copy_and_folds_the_solution():
    stage1 = next(s for s in STAGES if s.name.startswith("s01"))
    ex = parse_stage(stage1)[0]
    source = (ROOT / ex.path).read_text()
    sections = re.findall(r"--8<-- \[start:([\w-]+)\]", source)
    spec = next(f"{ex.path}:{name}" for name in sections
                if f"# EXERCISE {ex.number} " in source.split(f"[start:{name}]")[1]
                .split(f"[end:{name}]")[0])
    page = f'Text.\n\n```python\n--8<-- "{spec}"\n```\n\nMore text.\n'
    folded = fold_exercises(page)
    plain, details = folded.split('??? success "Show the reference solution', 1)
    assert f"raise NotImplementedError('exercise {ex.number} ({ex.name}): see " in plain
    assert "# END EXERCISE" not in plain and "--8<--" not in plain
    assert f'    --8<-- "{spec}"' in details  # the include itself, folded and unchanged
    assert fold_exercises("```python\n# EXERCISE 9.9 (x): literal\n# END EXERCISE\n```\n") == \
        "```python\n# EXERCISE 9.9 (x): literal\n# END EXERCISE\n```\n"  # only includes fold


def test_every_page_under_docs_stages_is_in_the_navigation():
    import yaml

    text = (ROOT / "mkdocs.yml").read_text()
    nav = str(yaml.safe_load(re.sub(r"!!python/name:\S+", "null", text))["nav"])
    for page in (DOCS / "stages").glob("*.md"):
        assert f"stages/{page.name}" in nav, f"{page.name} is not in mkdocs.yml's nav"


def test_code_blocks_wrap_to_the_column():
    config = (ROOT / "mkdocs.yml").read_text()
    css_path = re.search(r"extra_css:\n\s+- (\S+)", config).group(1)
    css = (DOCS / css_path).read_text()
    rule = re.search(r"\.md-typeset pre > code \{([^}]*)\}", css)
    assert rule and "white-space: pre-wrap" in rule.group(1)


# ------------------------------------------------------------------ the built site


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    built = os.environ.get("UNDER_API_SITE")
    if built:  # `make docs` has just built it from this tree, as strictly as below
        assert (Path(built) / "index.html").is_file(), f"UNDER_API_SITE={built}: no site there"
        return Path(built)
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)],
                          cwd=ROOT, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    return out


class _Blocks(HTMLParser):
    """The text of every <pre>, and whether it sits inside a collapsed <details>."""

    def __init__(self):
        super().__init__()
        self.details: list[bool] = []  # one entry per open <details>: is it open?
        self.blocks: list[tuple[bool, str]] = []
        self._pre: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "details":
            self.details.append("open" in dict(attrs))
        elif tag == "pre":
            self._pre = []

    def handle_endtag(self, tag):
        if tag == "details" and self.details:
            self.details.pop()
        elif tag == "pre" and self._pre is not None:
            hidden = any(not is_open for is_open in self.details)
            self.blocks.append((hidden, "".join(self._pre)))
            self._pre = None

    def handle_data(self, data):
        if self._pre is not None:
            self._pre.append(data)


def _pages(site: Path) -> list[Path]:
    return sorted(p for p in site.rglob("index.html") if p.parent.name != "404")


def _solution_lines() -> dict[str, set[str]]:
    """Per exercise, the lines of its reference code found nowhere else in any stage."""
    regions: dict[str, list[str]] = {}
    elsewhere: set[str] = set()
    for stage in STAGES:
        by_file: dict[Path, list] = {}
        for ex in parse_stage(stage):
            by_file.setdefault(ex.path, []).append(ex)
        for path in stage.rglob("*.py"):
            lines = path.read_text().splitlines()
            inside: set[int] = set()
            for ex in by_file.get(path.relative_to(ROOT), []):
                regions[ex.number] = [ln.strip() for ln in lines[ex.start:ex.end - 1]]
                inside.update(range(ex.start - 1, ex.end))
            elsewhere.update(ln.strip() for i, ln in enumerate(lines) if i not in inside)
    return {n: {ln for ln in body if len(ln) >= 12 and not ln.startswith("#")
                and ln not in elsewhere} for n, body in regions.items()}


@pytest.mark.slow
def test_no_exercise_solution_is_shown_in_plain_view(site):
    lines = _solution_lines()
    assert all(lines.values()), "every exercise has lines of its own to look for"
    seen_folded: set[str] = set()
    for page in _pages(site):
        parser = _Blocks()
        parser.feed(page.read_text())
        for hidden, code in parser.blocks:
            code_lines = {ln.strip() for ln in html.unescape(code).splitlines()}
            for number, solution in lines.items():
                shown = solution & code_lines
                if len(shown) < min(2, len(solution)):  # one short generic line is no leak
                    continue
                if hidden:
                    seen_folded.add(number)
                    continue
                raise AssertionError(f"{page.relative_to(site)}: exercise {number}'s solution "
                                     f"in plain view: {sorted(shown)[:3]}")
            if "stages" in page.relative_to(site).parts:  # course.md shows the marker format
                for m in re.finditer(r"^\s*# EXERCISE (\d+\.\d+)", code, re.M):
                    assert hidden, f"{page.relative_to(site)}: exercise {m[1]}'s markers shown"
    # the check has teeth: the included solutions are on the pages, folded
    assert len(seen_folded) >= 30, sorted(seen_folded)


@pytest.mark.slow
def test_every_picture_on_every_page_is_a_valid_non_empty_svg(site):
    counts = {}
    for page in _pages(site):
        text = page.read_text()
        svgs = re.findall(r"<svg\b.*?</svg>", text, re.S)
        svgs = [s for s in svgs if "course-diagram" in s.split(">", 1)[0]]
        for svg in svgs:
            root = ET.fromstring(svg)
            _, _, w, h = map(float, root.get("viewBox").split())
            assert w > 20 and h > 20
            drawn = [e for e in root.iter() if e.tag.split("}")[1] in ("rect", "text", "path")]
            assert len(drawn) > 3, page
        for src in re.findall(r'<img[^>]+src="([^"]+)"', text):
            if not src.startswith(("http:", "https:", "data:")):
                target = (page.parent / src).resolve()
                assert target.is_file() and target.stat().st_size > 0, f"{page}: {src}"
        counts[str(page.parent.relative_to(site))] = len(svgs)
    assert counts["."] >= 1  # the stage map
    for stage in STAGES:
        key = "stages/" + docs_page(stage)[len("docs/stages/"):-len(".md")]
        assert counts[key] >= 1, key
    assert counts["stages/05-vmap"] >= 2 and counts["stages/06-control-flow"] >= 2


@pytest.mark.slow
def test_the_site_reads_offline(site):
    for page in _pages(site):
        text = page.read_text()
        remote = re.findall(r'<(?:script|img)[^>]+src="(https?:[^"]+)"', text)
        remote += re.findall(r'<link[^>]+rel="stylesheet"[^>]+href="(https?:[^"]+)"', text)
        assert not remote, f"{page}: fetches {remote}"
        assert "graph LR" not in text and 'class="mermaid"' not in text


@pytest.mark.slow
def test_no_exercise_solution_is_in_the_search_index(site):
    # the search previews show indexed text: the folded solutions are marked to stay out of it
    index = json.loads((site / "search" / "search_index.json").read_text())
    text = "\n".join(html.unescape(doc["text"]) for doc in index["docs"])
    for number, solution in _solution_lines().items():
        found = [line for line in solution if line in text]
        assert len(found) < min(2, len(solution)), f"exercise {number}: {found[:3]}"


def test_every_include_of_source_is_inside_a_code_fence():
    # a bare `--8<--` line pastes the source as paragraphs, where the fold hook never looks:
    # an exercise's solution would be in plain view, unformatted
    bare = []
    for page in sorted((ROOT / "docs").rglob("*.md")):
        fence = None
        for number, line in enumerate(page.read_text().splitlines(), 1):
            opening = re.match(r"^\s*(`{3,}|~{3,})", line)
            if opening:
                if fence is None:
                    fence = opening[1]
                elif line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                    fence = None
            elif fence is None and re.match(r"""^\s*-+8<-+\s+["']""", line):
                bare.append(f"{page.relative_to(ROOT)}:{number}")
    assert bare == []
