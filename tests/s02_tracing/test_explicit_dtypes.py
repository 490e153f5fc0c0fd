"""A 64-bit dtype asked for by name, with x64 off: narrowed to 32 bits with JAX's warning, which
names the function; a Python type is its default dtype, silently. Compared with jax.numpy and
jax.lax: the creation functions, the reductions' `dtype=`, `preferred_element_type=`, and the
lax functions that take a dtype."""

from __future__ import annotations

import warnings

import jax
import jax.lax as jlax
import jax.numpy as jjnp
import numpy as np
import pytest

from stages.s02_tracing import dtypes, lax
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
    "sum": lambda m: m.sum(F32, dtype=np.float64),
    "prod": lambda m: m.asarray(F32).prod(dtype=np.float64),
    "mean": lambda m: m.mean(F32, dtype=np.float64),
    "var": lambda m: m.var(F32, dtype=np.float64),
    "std": lambda m: m.std(F32, dtype=np.float64),
    "cumsum": lambda m: m.cumsum(np.ones(3, np.int32), dtype=np.int64),
    "cumprod": lambda m: m.asarray(F32).cumprod(dtype=np.float64),
    "trace": lambda m: m.trace(np.ones((2, 2), np.float32), dtype=np.float64),
    "einsum": lambda m: m.einsum("i,i->", F32, F32, preferred_element_type=np.float64),
    "dot": lambda m: m.dot(F32, F32, preferred_element_type=np.float64),
    "matmul": lambda m: m.matmul(F32, F32, preferred_element_type=np.float64),
}
M22 = np.ones((2, 2), np.float32)
LAX_CALLS = {  # (the call, the name JAX's warning gives)
    "convert_element_type": (lambda m: m.convert_element_type(F32, np.float64),
                             "convert_element_type"),
    "full": (lambda m: m.full((2,), 1.0, np.float64), "full"),
    "full_like": (lambda m: m.full_like(F32, 1.0, np.float64), "dtype"),  # JAX's helper's name
    "dot_general": (lambda m: m.dot_general(M22, M22, (((1,), (0,)), ((), ())),
                                            preferred_element_type=np.float64), "dot"),
    "argmax": (lambda m: m.argmax(F32, 0, np.int64), "argmax"),
    "argmin": (lambda m: m.argmin(F32, 0, np.int64), "argmin"),
    "bitcast_convert_type": (lambda m: m.bitcast_convert_type(np.ones(3, np.int32), np.float64),
                             "bitcast_convert_type"),
    "iota": (lambda m: m.iota(np.int64, 3), "broadcasted_iota"),
}


def _run(f, lib):
    if lib in (jjnp, jlax):
        jax.clear_caches()  # JAX warns while tracing: a jitted sum seen before says nothing
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


@pytest.mark.parametrize("name", LAX_CALLS)
def test_lax_narrows_a_64_bit_dtype_with_jax_warning(name):
    call, named = LAX_CALLS[name]
    ours_dtype, ours = _run(call, lax)
    jax_dtype, theirs = _run(call, jlax)
    assert (ours_dtype, ours) == (jax_dtype, theirs)
    assert len(ours) == 1 and f"requested in {named} is not available" in ours[0]


def test_a_reduction_warns_once_where_jax_warns_again_from_convert_element_type():
    ours, theirs = _run(CALLS["sum"], jnp)[1], _run(CALLS["sum"], jjnp)[1]
    assert len(ours) == 1 and len(theirs) == 2
    assert "requested in convert_element_type" in theirs[1]


@pytest.mark.parametrize("fun", ["zeros", "convert_element_type"])
def test_a_dtype_jax_has_not_is_refused_naming_the_function(fun):
    for lib in ((jnp, jjnp) if fun == "zeros" else (lax, jlax)):
        with pytest.raises(TypeError, match="^JAX only supports number, bool, and string dtypes, "
                                            f"got dtype <class 'numpy.object_'> in {fun}$"):
            getattr(lib, fun)(np.ones(3, np.float32) if fun != "zeros" else 3, np.object_)


def test_float0_is_a_dtype_a_user_may_name_as_in_jax():
    for lib in (lax, jlax):
        out = lib.convert_element_type(np.ones(2, np.int32), dtypes.float0)
        assert out.dtype == dtypes.float0 and out.shape == (2,)
