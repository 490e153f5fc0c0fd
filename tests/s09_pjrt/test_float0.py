"""float0 through jit on PJRT: lowered as `i1` zeros, passed in as bool zeros, handed back as
numpy's float0 zeros (JAX: mlir's float0 type and constants, and its float0 result handler)."""

from __future__ import annotations

import jax
import pytest

import stages.s07_caches as s07
from stages.s02_tracing import config
from stages.s07_caches import compilation_cache
from tests.s07_caches.test_float0 import CASES, assert_same_results, build


@pytest.mark.parametrize("name", sorted(CASES))
def test_float0_lowers_to_jaxs_text_and_runs_as_jax(name):
    ours, theirs, args = build(name)
    assert s07.jit(ours).lower(*args).as_text() == jax.jit(theirs).lower(*args).as_text()
    assert_same_results(s07.jit(ours)(*args), jax.jit(theirs)(*args))
    assert_same_results(s07.jit(ours)(*args), jax.jit(theirs)(*args))  # the cache hit too



@pytest.mark.parametrize("name", sorted(CASES))
def test_float0_comes_back_from_the_persistent_cache_as_float0(name, tmp_path):
    # the executable read from disk takes its avals from the header: float0's numpy name is
    # "void", which would come back as a void dtype (a device array of void, or a refused input)
    ours, theirs, args = build(name)
    compilation_cache.reset_cache()
    try:
        with config.compilation_cache_dir(str(tmp_path)), \
                config.persistent_cache_min_compile_time_secs(0.0):
            f = s07.jit(ours)
            first = f(*args)
            s07.clear_caches()
            read_back = f(*args)  # from disk: XLA does not compile it again
            assert f.cache_info()["persistent"].hits == 1
    finally:
        compilation_cache.reset_cache()
    assert_same_results(first, jax.jit(theirs)(*args))
    assert_same_results(read_back, jax.jit(theirs)(*args))
