"""No module of stage 12 imports one that imports it back, directly or through others.

Each module's top-level imports (relative, or `stages.s12_system...`) are edges; a package's
own `__init__` imports of its submodules are left out, since a module is reached through its
package on every import and that is not a cycle between modules.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

STAGE = Path(__file__).resolve().parents[2] / "stages" / "s12_system"
PACKAGE = "stages.s12_system"


def _name(path: Path) -> str:
    parts = path.relative_to(STAGE.parent.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in sorted(STAGE.rglob("*.py"))}


def _top_level_imports(name: str) -> set[str]:
    """The stage's modules that `name` imports at its top level (not inside a function)."""
    path = MODULES[name]
    here = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = here
            for _ in range(max(node.level - 1, 0)):
                base = base.rpartition(".")[0]
            base = (f"{base}.{node.module}" if node.module else base) if node.level else \
                node.module
            # `from . import prng` names a module; `from .prng import x` the module prng
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base
                       for a in node.names]
        else:
            continue
        found |= {t for t in targets if t in MODULES}
    return found - {name}


def _is_package_of(package: str, module: str) -> bool:
    return MODULES[package].name == "__init__.py" and module.startswith(package + ".")


def _edges() -> dict[str, set[str]]:
    return {m: {t for t in _top_level_imports(m) if not _is_package_of(m, t)} for m in MODULES}


def _cycle_from(start: str, edges: dict[str, set[str]]) -> list[str] | None:
    stack = [(start, [start])]
    seen = set()
    while stack:
        node, path = stack.pop()
        for nxt in sorted(edges[node]):
            if nxt == start:
                return [*path, start]
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, [*path, nxt]))
    return None


def test_the_walk_finds_the_stages_modules_and_their_imports():
    assert f"{PACKAGE}.random" in MODULES and f"{PACKAGE}.nn.layers" in MODULES
    edges = _edges()
    assert f"{PACKAGE}.random_discrete" in edges[f"{PACKAGE}.random"]
    assert f"{PACKAGE}.optim_variants" in edges[f"{PACKAGE}.optim"]
    assert f"{PACKAGE}.prng" in edges[f"{PACKAGE}.random_discrete"]


def test_the_walk_would_report_a_cycle():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycle_from("a", edges) == ["a", "b", "c", "a"]
    assert _cycle_from("d", edges) is None


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_module_imports_one_that_imports_it_back(name):
    assert _cycle_from(name, _edges()) is None


def test_no_module_imports_a_module_of_the_stage_inside_a_function():
    """A function-level import is how a cycle hides from the walk above."""
    hidden = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for inner in ast.walk(node):
                    if isinstance(inner, ast.ImportFrom) and (
                            inner.level or (inner.module or "").startswith(PACKAGE)):
                        hidden.append(f"{name}: line {inner.lineno}")
    assert hidden == []
