"""Put the repository (and, with WORKSPACE=1, the learner's workspace) on sys.path first.

`stages` is a namespace package: `workspace/stages/sNN_<name>/` shadows the reference copy of that
one stage only when `workspace/` comes before the repository root on sys.path. With WORKSPACE=1,
`shared/exercise_report.py` also ends the run with the table of the stage's exercises.
"""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent

_paths = [str(ROOT)]
if os.environ.get("WORKSPACE") == "1":
    # UNDER_API_WORKSPACE_DIR lets `make check-exercises` point at a scratch copy.
    _paths.insert(0, os.environ.get("UNDER_API_WORKSPACE_DIR", str(ROOT / "workspace")))
for _p in reversed(_paths):
    if _p in sys.path:
        sys.path.remove(_p)
    sys.path.insert(0, _p)

pytest_plugins = ["shared.exercise_report"]
