"""Cross-stage checks: every built stage keeps the course's contract (docs/course.md)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from shared.exercises import ROOT, docs_page, parse_stage

STAGES = sorted(p for p in (ROOT / "stages").glob("s[0-9][0-9]_*") if p.is_dir())
STAGE_IDS = [p.name for p in STAGES]


def _number(stage: Path) -> int:
    return int(stage.name[1:3])


def test_at_least_one_stage_is_built():
    assert STAGES, "no stages/sNN_<name>/ folder found"


def test_stages_is_a_namespace_package():
    # A workspace copy of one stage can only shadow the reference if `stages` has no __init__.py.
    assert not (ROOT / "stages" / "__init__.py").exists()


@pytest.mark.parametrize("stage", STAGES, ids=STAGE_IDS)
def test_stage_has_docs_page_tests_and_exercises(stage):
    assert (ROOT / docs_page(stage)).is_file(), f"missing {docs_page(stage)}"
    tests = ROOT / "tests" / stage.name
    assert list(tests.glob("test_*.py")), f"missing tests in tests/{stage.name}/"
    assert (tests / "test_origin.py").is_file(), "each stage proves where it was imported from"
    exercises = parse_stage(stage)
    assert 4 <= len(exercises) <= 8, f"{stage.name} has {len(exercises)} exercises; want 4-8"
    numbers = [int(e.number.split(".")[1]) for e in exercises]
    assert numbers == list(range(1, len(numbers) + 1)), f"exercises not numbered 1..K: {numbers}"


@pytest.mark.parametrize("stage", STAGES, ids=STAGE_IDS)
def test_docs_page_lists_every_exercise_with_its_anchor(stage):
    text = (ROOT / docs_page(stage)).read_text()
    assert "## Exercises" in text
    for ex in parse_stage(stage):
        assert "{#" + ex.anchor + "}" in text, f"{docs_page(stage)} lacks #{ex.anchor}"


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)


@pytest.mark.parametrize("stage", STAGES, ids=STAGE_IDS)
def test_init_is_only_a_public_api(stage):
    tree = ast.parse((stage / "__init__.py").read_text())
    allowed = (ast.Import, ast.ImportFrom)
    body = [n for n in tree.body if not _is_docstring(n)]
    exports = [n for n in body if isinstance(n, allowed)]
    assert exports, f"{stage.name}/__init__.py re-exports nothing"
    for node in body:
        is_all = isinstance(node, ast.Assign) and [t.id for t in node.targets] == ["__all__"]
        assert isinstance(node, allowed) or is_all, (
            f"{stage.name}/__init__.py line {node.lineno}: only re-exports belong in __init__.py"
        )


def _imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


@pytest.mark.parametrize("stage", STAGES, ids=STAGE_IDS)
def test_stage_imports_only_earlier_stages_and_allowed_libraries(stage):
    n = _number(stage)
    for path in stage.rglob("*.py"):
        for lineno, module in _imports(path):
            where = f"{path.relative_to(ROOT)}:{lineno} imports {module}"
            m = re.match(r"stages\.s(\d\d)_", module)
            if m:
                # earlier stages only; a stage reaches its own modules by relative import
                assert int(m.group(1)) < n, where
            top = module.split(".")[0]
            if top in ("jax", "jaxlib"):
                assert n >= 9, where + " (jax only from the PJRT stage on)"
            if top == "torch":
                assert n >= 10, where + " (torch only from the lazy-tensor stage on)"


def test_import_linter_layers_contract_holds():
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "Contracts: 1 kept, 0 broken." in done.stdout


def test_every_stage_page_is_in_the_site_navigation():
    text = (ROOT / "mkdocs.yml").read_text()
    nav = yaml.safe_load(re.sub(r"!!python/name:\S+", "null", text))["nav"]
    pages = re.findall(r"stages/\d\d-[\w-]+\.md", str(nav))
    for stage in STAGES:
        assert docs_page(stage).removeprefix("docs/") in pages, f"{docs_page(stage)} not in nav"


def test_readme_shows_the_two_commands_and_every_built_stage():
    text = (ROOT / "README.md").read_text()
    assert "make demo" in text and "make test" in text
    for stage in STAGES:
        assert f"stages/{stage.name}" in text, f"README's stage map lacks stages/{stage.name}"


def test_make_help_lists_every_target():
    done = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True)
    for target in ("setup", "demo", "test", "test-stage-N", "docs", "serve", "exercise",
                   "check-exercises", "bench", "lint", "clean"):
        assert re.search(rf"^\s+{target}\s", done.stdout, re.M), f"make help lacks {target}"


def test_an_unbuilt_stage_says_so_and_fails():
    built = {_number(s) for s in STAGES}
    missing = next(n for n in range(12, 100) if n not in built)  # past the last stage when all are
    done = subprocess.run(["make", "-s", "-o", "setup", f"test-stage-{missing}"], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode != 0
    assert f"stage {missing} is not built yet" in done.stdout
