"""Why was this graph compiled? The report PT_XLA_DEBUG=1 prints for each new graph hash.

torch_xla: torch_xla/csrc/debug_util.cpp (`analyze_graph_execution_python_frame`, printing a
"Compilation Analysis" block per compile with PT_XLA_DEBUG_LEVEL). Ours says which ingredient
of the graph hash first differs from the closest graph compiled before: since each ingredient
is folded into a running hash, the first difference is the one that matters.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from .hash import hash_to_string

_history: list[list[tuple[str, int]]] = []  # the ingredients of every graph compiled


def enabled() -> bool:
    return os.environ.get("PT_XLA_DEBUG", "0") == "1"


def why_new(ingredients: list[tuple[str, int]]) -> str:
    """A sentence: the first ingredient that differs from the closest previous graph."""
    if not _history:
        return "it is the first graph compiled"
    def common(other: list[tuple[str, int]]) -> int:
        n = 0
        for (la, ha), (lb, hb) in zip(ingredients, other, strict=False):
            if la != lb or ha != hb:
                break
            n += 1
        return n
    closest = max(_history, key=common)
    n = common(closest)
    if n == len(ingredients) == len(closest):
        return "the same hash was evicted from the compile cache"
    label = ingredients[n][0] if n < len(ingredients) else closest[n][0]
    return (f"{label} differs from the closest previous graph "
            f"({hash_to_string(closest[-1][1])})")


def explain_compile(coll: Any) -> None:
    """Record the graph's ingredients; with PT_XLA_DEBUG=1, print why it is new."""
    if enabled():
        print("Compilation Analysis: " + "=" * 60, file=sys.stderr)
        print(f"Compilation Analysis:   graph hash {hash_to_string(coll.hash)} is new: "
              f"{why_new(coll.ingredients)}", file=sys.stderr)
    _history.append(list(coll.ingredients))


def forget() -> None:
    """Forget the graphs compiled so far (with the compile cache they explain)."""
    _history.clear()
