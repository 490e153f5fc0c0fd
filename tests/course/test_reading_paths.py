"""Every stage is readable in one sitting: a reading path of at most ~1,200 lines, modules of at
most 400, the same path on the stage's page, and no reach into another module's private names.

The reading path is written in the stage's `__init__.py` docstring, in this format: a line
starting `Reading path`, then one line per core module, in reading order,

    Reading path (the lesson, in order):
      1. core.py          what it holds
      2. jaxpr.py         ...

(a numbered item: the number, a dot, the module's path relative to the stage folder, then what
it holds). The stage's page has a `## Reading path` section with the same modules, in the same
order, as a numbered list whose items start with the module in backticks: ``1. `core.py`: ...``.
Every other module or subpackage of the stage is named somewhere in the docstring too, and
every module, a subpackage's included, somewhere on the stage's pages (its page and any part
named `NN-<name>-*.md` beside it), so that a learner who opens the folder finds each file
explained.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from shared.exercises import ROOT, docs_page

STAGES = sorted(p for p in (ROOT / "stages").glob("s[0-9][0-9]_*") if p.is_dir())
STAGE_IDS = [p.name for p in STAGES]

CORE_BUDGET = 1200  # lines of a stage's reading path
MODULE_BUDGET = 400  # lines of any one module

_ITEM = re.compile(r"^\s*(\d+)\.\s+([\w/]+\.py)\b", re.M)
_PAGE_ITEM = re.compile(r"^(\d+)\.\s+`([\w/]+\.py)`", re.M)


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def _docstring(stage: Path) -> str:
    return ast.get_docstring(ast.parse((stage / "__init__.py").read_text())) or ""


def reading_path(stage: Path) -> list[str]:
    """The core modules the docstring names after `Reading path`, in order."""
    doc = _docstring(stage)
    start = doc.find("Reading path")
    assert start >= 0, f"{stage.name}/__init__.py has no 'Reading path' in its docstring"
    block = doc[start:].split("\n\n")[0]  # the numbered lines run up to the first blank line
    items = _ITEM.findall(block)
    numbers = [int(n) for n, _ in items]
    assert numbers == list(range(1, len(items) + 1)), f"{stage.name}: numbered {numbers}"
    return [name for _, name in items]


def test_the_parser_reads_the_documented_format():
    doc = "Reading path (in order):\n  1. core.py   holds\n  2. lax/lax.py  more\n\nBeside: x.py"
    block = doc[doc.find("Reading path"):].split("\n\n")[0]
    assert [name for _, name in _ITEM.findall(block)] == ["core.py", "lax/lax.py"]
    page = "## Reading path\n\n1. `core.py`: holds\n2. `jaxpr.py`: more\n"
    assert [name for _, name in _PAGE_ITEM.findall(page)] == ["core.py", "jaxpr.py"]


@pytest.mark.parametrize("stage", STAGES, ids=STAGE_IDS)
def test_every_core_module_named_exists_and_the_core_fits_the_budget(stage):
    path = reading_path(stage)
    assert path, f"{stage.name}: an empty reading path"
    missing = [name for name in path if not (stage / name).is_file()]
    assert missing == [], f"{stage.name}: the reading path names missing modules {missing}"
    total = sum(_lines(stage / name) for name in path)
    assert total <= CORE_BUDGET, f"{stage.name}: the reading path is {total} lines"


@pytest.mark.parametrize("stage", STAGES, ids=STAGE_IDS)
def test_every_module_fits_the_budget(stage):
    over = {str(p.relative_to(stage)): _lines(p) for p in stage.rglob("*.py")
            if _lines(p) > MODULE_BUDGET}
    assert over == {}, f"{stage.name}: modules over {MODULE_BUDGET} lines"


@pytest.mark.parametrize("stage", STAGES, ids=STAGE_IDS)
def test_the_docstring_names_every_module_of_the_stage(stage):
    doc = _docstring(stage)
    names = [p.name for p in stage.glob("*.py") if p.name != "__init__.py"]
    names += [f"{p.name}/" for p in stage.iterdir() if (p / "__init__.py").is_file()]
    unnamed = [name for name in names if name not in doc]
    assert unnamed == [], f"{stage.name}/__init__.py does not say where {unnamed} fit"


@pytest.mark.parametrize("stage", STAGES, ids=STAGE_IDS)
def test_the_page_names_the_same_reading_path(stage):
    text = (ROOT / docs_page(stage)).read_text()
    match = re.search(r"^## Reading path\n(.*?)(?=^## )", text, re.S | re.M)
    assert match, f"{docs_page(stage)} has no '## Reading path' section"
    on_page = [name for _, name in _PAGE_ITEM.findall(match.group(1))]
    assert on_page == reading_path(stage)


def _pages_text(stage: Path) -> str:
    page = ROOT / docs_page(stage)
    return "\n".join(p.read_text() for p in sorted(page.parent.glob(f"{page.stem}*.md")))


@pytest.mark.parametrize("stage", STAGES, ids=STAGE_IDS)
def test_the_pages_name_every_module_of_the_stage(stage):
    text = _pages_text(stage)
    modules = [p.relative_to(stage) for p in stage.rglob("*.py") if p.name != "__init__.py"]
    unnamed = [str(m) for m in modules if f"`{m}`" not in text and f"`{m.name}`" not in text]
    assert unnamed == [], f"{docs_page(stage)} never names {unnamed}"


def _private_uses(path: Path) -> list[str]:
    """`from m import _x` and `m._x` for a module `m` this file imported (dunders aside);
    the stage-private `_jax_compat` module may be imported by its own stage."""
    tree = ast.parse(path.read_text())
    modules, found = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                private = a.name.startswith("_") and not a.name.startswith("__")
                if private and not (node.level and a.name == "_jax_compat"):
                    found.append(f"line {node.lineno}: from {node.module} import {a.name}")
                elif node.level or (node.module or "").startswith("stages"):
                    modules.add(a.asname or a.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id in modules and node.attr.startswith("_") \
                and not node.attr.startswith("__") and node.value.id != "_jax_compat":
            found.append(f"line {node.lineno}: {node.value.id}.{node.attr}")
    return found


# PyTorch's hooks for a backend written in Python are private API: the two modules that plug
# stage 10's device into PyTorch may use these, and no other module may
TORCH_BACKEND_HOOKS = {
    "stages/s10_lazy_tensors/tensor.py": ("torch._C",),
    "stages/s10_lazy_tensors/register_xla.py": ("torch._C", "torch._tensor_str",
                                                "_setup_privateuseone_for_python_backend"),
}


@pytest.mark.parametrize("stage", STAGES, ids=STAGE_IDS)
def test_no_module_reaches_into_another_modules_private_names(stage):
    found = {str(p.relative_to(ROOT)): _private_uses(p) for p in stage.rglob("*.py")}
    found = {path: [u for u in uses if not u.endswith(TORCH_BACKEND_HOOKS.get(path, ()))]
             for path, uses in found.items()}
    found = {path: uses for path, uses in found.items() if uses}
    assert found == {}, "make the helper public in the module that owns it"
