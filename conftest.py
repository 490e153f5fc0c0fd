"""Put the repository (and, with WORKSPACE=1, the learner's workspace) on sys.path first.

`stages` is a namespace package: `workspace/stages/sNN_<name>/` shadows the reference copy of that
one stage only when `workspace/` comes before the repository root on sys.path.
"""

import os
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent

_paths = [str(ROOT)]
if os.environ.get("WORKSPACE") == "1":
    # UNDER_API_WORKSPACE_DIR lets `make check-exercises` point at a scratch copy.
    _paths.insert(0, os.environ.get("UNDER_API_WORKSPACE_DIR", str(ROOT / "workspace")))
for _p in reversed(_paths):
    if _p in sys.path:
        sys.path.remove(_p)
    sys.path.insert(0, _p)


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter):
    """With WORKSPACE=1, end with the exercises whose stubs the failing tests reached."""
    if os.environ.get("WORKSPACE") != "1":
        return
    stub = re.compile(r"exercise (\d+\.\d+ \([\w-]+\)): see (\S+)")
    stats = terminalreporter.stats
    counts: dict[tuple[str, str], int] = {}
    for report in stats.get("failed", []) + stats.get("error", []):
        for found in set(stub.findall(report.longreprtext)):
            counts[found] = counts.get(found, 0) + 1
    if not counts:
        return
    terminalreporter.write_sep("=", "exercises still to do (failing tests that reach each stub)")
    for (name, where), n in sorted(counts.items()):
        terminalreporter.write_line(f"  exercise {name}: {n} tests  ->  {where}")
