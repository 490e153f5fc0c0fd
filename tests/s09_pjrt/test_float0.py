"""float0 through jit on PJRT: lowered as `i1` zeros, passed in as bool zeros, handed back as
numpy's float0 zeros (JAX: mlir's float0 type and constants, and its float0 result handler)."""

from __future__ import annotations

import jax
import pytest

import stages.s07_caches as s07
from tests.s07_caches.test_float0 import CASES, assert_same_results, build


@pytest.mark.parametrize("name", sorted(CASES))
def test_float0_lowers_to_jaxs_text_and_runs_as_jax(name):
    ours, theirs, args = build(name)
    assert s07.jit(ours).lower(*args).as_text() == jax.jit(theirs).lower(*args).as_text()
    assert_same_results(s07.jit(ours)(*args), jax.jit(theirs)(*args))
    assert_same_results(s07.jit(ours)(*args), jax.jit(theirs)(*args))  # the cache hit too

