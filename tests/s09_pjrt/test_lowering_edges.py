"""Programs whose module text XLA once refused, or whose values once differed, checked through
PJRT against jax.jit: a bitcast to the same dtype (always printed `(T) -> R`), a gather with no
slice sizes (`array<i64>`), result names and function names MLIR must escape (a quote, a
backslash, a tab, non-ASCII: `\\22`, `\\\\`, `\\09`, `\\C3\\BC`), unsigned index arrays (read as
int32, JAX's index dtype), and a float16 arange with a step (stepped in float32)."""

from __future__ import annotations

import re

import jax
import jax.numpy as jjnp
import ml_dtypes
import numpy as np
import pytest
from jax import lax as jlax

import stages.s07_caches as s07
from stages.s02_tracing import lax
from stages.s02_tracing import numpy as jnp

X = np.arange(4, dtype=np.float32)


def _gather(L):
    return lambda v: L.gather(v, np.zeros((2, 0), np.int32), L.GatherDimensionNumbers((), (), ()),
                              ())


def f_ü(v):  # noqa: N802 (a name MLIR must quote and escape)
    return v * 2


CASES = {
    "bitcast_to_the_same_dtype": (lambda L, n: lambda v: L.bitcast_convert_type(v, np.float32),
                                  X),
    "gather_of_a_scalar": (lambda L, n: _gather(L), np.float32(3)),
    "unicode_function_name": (lambda L, n: f_ü, X),
    "uint32_index_past_int32": (lambda L, n: lambda v: v[np.array([2**31], np.uint32)], X),
    "uint32_index_scatter": (lambda L, n: lambda v: v.at[np.array([2**31], np.uint32)].add(
        10.0, mode="clip"), X),
    "int8_index": (lambda L, n: lambda v: v[np.array([3, -1], np.int8)], X),
    "float16_arange": (lambda L, n: lambda v: n.arange(0, 1, 0.1, dtype=np.float16), X),
    "bfloat16_arange": (lambda L, n: lambda v: n.arange(0.5, 3, 0.25, dtype=ml_dtypes.bfloat16),
                        X),
}
CASES.update({f"result_named_{name}": (lambda L, n, key=key: lambda v: {key: v}, X)
              for name, key in [("quote", 'a"b'), ("apostrophe", "it's"), ("backslash", "b\\c"),
                                ("tab", "t\tx"), ("non_ascii", "ü")]})


def _text(lowered) -> str:
    return re.sub(r"\s*loc\(.*?\)|#loc.*", "", lowered.as_text()).strip()


@pytest.mark.parametrize("make, arg", CASES.values(), ids=CASES.keys())
def test_the_module_is_jaxs_text_and_runs_to_jaxs_values(make, arg):
    ours, theirs = make(lax, jnp), make(jlax, jjnp)
    assert _text(s07.jit(ours).lower(arg)) == _text(jax.jit(theirs).lower(arg))
    got, want = s07.jit(ours)(arg), jax.jit(theirs)(arg)
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
