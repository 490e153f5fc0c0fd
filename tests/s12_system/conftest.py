"""Stage 12's tests run with jit on PJRT (`use_pjrt()`) for each module, as the system does."""

from __future__ import annotations

import pytest

import stages.s09_pjrt as s09


@pytest.fixture(scope="module", autouse=True)
def pjrt():
    """jit compiles and runs through PJRT for the whole module; eager primitives dispatch."""
    with s09.use_pjrt():
        yield
