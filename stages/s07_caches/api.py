"""The user-facing odds and ends of jit: disable_jit, clear_caches, a report of every layer.

JAX: jax/_src/api.py (`disable_jit`, `clear_caches`).
"""

from __future__ import annotations

from typing import Any

from stages.s02_tracing import config

from . import util
from .api_util import ShapeDtypeStruct  # noqa: F401  (JAX: jax.ShapeDtypeStruct)


def disable_jit(disable: bool = True) -> Any:
    """Context manager: jitted functions run as plain Python in this thread."""
    return config.disable_jit(disable)


def clear_caches() -> None:
    """Empty every layer's in-memory entries (the disk is left alone), as `jax.clear_caches`:
    the signature, trace, lowering, executable and primitive caches, and the memoized
    jaxpr-to-jaxpr transformations of pjit_rules.py."""
    util.clear_all_caches()


def cache_report() -> str:
    """One line per layer: hits, misses, entries, and what the layer's key compares."""
    return util.report()
