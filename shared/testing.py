"""Helpers the stage tests share: where a stage was imported from, and explicit tolerances."""

from __future__ import annotations

import importlib
import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# float32 tolerances (DESIGN.md): elementwise ops round once; reductions and dots accumulate.
RTOL_ELEMENTWISE = 1e-5
RTOL_REDUCTION = 1e-4


def assert_stage_origin(stage: str) -> Path:
    """Fail unless `stages.<stage>` came from workspace/ when WORKSPACE=1, else from stages/.

    A harness that silently tests the reference copy would tell a learner their exercises pass.
    """
    module = importlib.import_module(f"stages.{stage}")
    where = Path(module.__file__).resolve().parent
    if os.environ.get("WORKSPACE") == "1":
        workspace = Path(os.environ.get("UNDER_API_WORKSPACE_DIR", ROOT / "workspace"))
        expected = workspace.resolve() / "stages" / stage
    else:
        expected = ROOT / "stages" / stage
    assert where == expected, f"stages.{stage} was imported from {where}, expected {expected}"
    return where


def canonical_error_text(text: str) -> str:
    """An error text with the parts that vary between runs of the same JAX put in one order.

    JAX builds "Accepted dtypes ... are subtypes of integer, floating, complexfloating." by
    iterating a set of numpy type objects (`lax._num`), whose order follows their addresses: one
    Python build prints "floating, complexfloating", another "complexfloating, floating".
    """
    def _sorted(match: re.Match) -> str:
        return match.group(1) + ", ".join(sorted(match.group(2).split(", "))) + "."

    return re.sub(r"(are subtypes of )([\w, ]+)\.", _sorted, text)
