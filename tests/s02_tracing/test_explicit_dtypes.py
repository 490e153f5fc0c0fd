"""A 64-bit dtype asked for by name, with x64 off: narrowed to 32 bits with JAX's warning, which
names the function; a Python type is its default dtype, silently. Compared with jax.numpy."""

from __future__ import annotations

import warnings

import jax.numpy as jjnp
import numpy as np
import pytest

from stages.s02_tracing import numpy as jnp

F32 = np.ones(3, np.float32)
CALLS = {
    "zeros": lambda m: m.zeros(3, np.float64),
    "ones": lambda m: m.ones((2, 2), np.int64),
    "empty": lambda m: m.empty(3, np.float64),
    "full": lambda m: m.full(3, 1, np.float64),
    "zeros_like": lambda m: m.zeros_like(F32, np.float64),
    "ones_like": lambda m: m.ones_like(F32, np.int64),
    "full_like": lambda m: m.full_like(F32, 2, np.uint64),
    "arange": lambda m: m.arange(3, dtype=np.int64),
    "linspace": lambda m: m.linspace(0, 1, 3, dtype=np.float64),
    "eye": lambda m: m.eye(2, dtype=np.complex128),
    "array": lambda m: m.array([1, 2], np.int64),
    "asarray": lambda m: m.asarray([1, 2], "float64"),
    "astype": lambda m: m.asarray([1, 2]).astype(np.int64),
    "python float": lambda m: m.zeros(3, float),
    "python int": lambda m: m.array([1, 2], int),
    "a 64-bit numpy array, no dtype": lambda m: m.asarray(np.ones(2)),
}


def _run(f, lib):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = f(lib)
    return out.dtype, [str(w.message) for w in caught if w.category is UserWarning]


@pytest.mark.parametrize("name", CALLS)
def test_an_explicit_64_bit_dtype_is_narrowed_with_jax_warning(name):
    ours_dtype, ours = _run(CALLS[name], jnp)
    jax_dtype, theirs = _run(CALLS[name], jjnp)
    assert ours_dtype == jax_dtype
    assert ours == theirs[:1]  # JAX's sum and a few others warn twice; the first is the call's
    if theirs:
        assert f"requested in {name} is not available, and will be truncated" in ours[0]


def test_a_dtype_jax_has_not_is_refused_naming_the_function():
    for lib in (jnp, jjnp):
        with pytest.raises(TypeError, match="^JAX only supports number, bool, and string dtypes, "
                                            "got dtype <class 'numpy.object_'> in zeros$"):
            lib.zeros(3, np.object_)
