"""Random sequences of calls of one jitted function: ours retraces exactly when `jax.jit` does.

Hypothesis draws jit options (static_argnums, static_argnames) and a short sequence of calls of
the same function body, jitted by both libraries. The arguments come from a pool that covers what
changes JAX's cache key and what does not: Python scalars (weakly typed) of each type, an int
beyond int32 (an OverflowError in x32 mode), numpy arrays of several dtypes and shapes (float64
and int64 stand for their 32-bit forms), numpy scalars, each library's own eager arrays (weakly
typed ones too), pytrees of these (tuples, lists, dicts whose keys come in either insertion
order), static values equal by value but not by type (1, 1.0, True, np.int32(1)) and keyword
arguments passed in either order. A call may repeat an earlier one with new values of the same
types, its dict keys and keyword arguments in another order.

The body appends to a list, which only tracing does. After every call both libraries have traced
the same number of times, hold the same number of signature entries (`_cache_size()`), and
either return the same values with the same dtypes, shapes and weak types, or raise the same
exception with the same message.
"""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stages.s01_pytrees as tu
import stages.s02_tracing.numpy as ojnp
from shared.testing import assert_same_typed_values
from stages.s07_caches import jit

pytestmark = pytest.mark.oracle

OURS = SimpleNamespace(jit=jit, jnp=ojnp, tree_map=tu.tree_map)
THEIRS = SimpleNamespace(jit=jax.jit, jnp=jjnp, tree_map=jax.tree_util.tree_map)


def _arange(shape: tuple[int, ...], dtype: Any, k: int) -> np.ndarray:
    return (np.arange(int(np.prod(shape))).reshape(shape) + k).astype(dtype)


# Each leaf: (library namespace, k) -> a value; k changes the value, never the type.
LEAVES: dict[str, Any] = {
    "int": lambda lib, k: 3 + k,
    "int -7": lambda lib, k: -7 - k,
    "float": lambda lib, k: 1.5 + k,
    "bool": lambda lib, k: k % 2 == 0,
    "complex": lambda lib, k: complex(1 + k, -2),
    "int 2**31": lambda lib, k: 2**31 + k,
    "int -2**31-1": lambda lib, k: -(2**31) - 1 - k,
    "f32[3]": lambda lib, k: _arange((3,), np.float32, k),
    "f32[2,3]": lambda lib, k: _arange((2, 3), np.float32, k),
    "f32[]": lambda lib, k: np.array(k + 0.5, np.float32),
    "f64[3]": lambda lib, k: _arange((3,), np.float64, k),
    "i32[3]": lambda lib, k: _arange((3,), np.int32, k),
    "i64[3]": lambda lib, k: _arange((3,), np.int64, k),
    "bool[3]": lambda lib, k: _arange((3,), np.int32, k) % 2 == 0,
    "u8[3]": lambda lib, k: _arange((3,), np.uint8, k),
    "f16[3]": lambda lib, k: _arange((3,), np.float16, k),
    "np.float32": lambda lib, k: np.float32(1 + k),
    "np.float64": lambda lib, k: np.float64(2.5 + k),
    "np.int64": lambda lib, k: np.int64(2 + k),
    "np.bool_": lambda lib, k: np.bool_(k % 2),
    "eager f32[3]": lambda lib, k: lib.jnp.asarray(_arange((3,), np.float32, k)),
    "eager f64[3]": lambda lib, k: lib.jnp.asarray(_arange((3,), np.float64, k)),
    "eager i32[2,3]": lambda lib, k: lib.jnp.asarray(_arange((2, 3), np.int32, k)),
    "eager bool": lambda lib, k: lib.jnp.asarray(k % 2 == 0),
    "eager f32 strong": lambda lib, k: lib.jnp.asarray(np.float32(1 + k)),
    "eager weak float": lambda lib, k: lib.jnp.asarray(1.0 + k),
    "eager weak int": lambda lib, k: lib.jnp.asarray(1 + k),
    "eager weak product": lambda lib, k: lib.jnp.asarray(1.0 + k) * 2,
}

# Values a static argument takes: hashable, some equal to each other but of other types.
STATICS: dict[str, Any] = {
    "1": 1, "1.0": 1.0, "True": True, "np.int32(1)": np.int32(1), "2": 2, "'a'": "a",
    "'b'": "b", "(1, 2)": (1, 2), "(1.0, 2)": (1.0, 2),
}


RARE = ("int 2**31", "int -2**31-1")  # each call holding one fails: drawn one time in ten


def leaf_specs():
    common = st.sampled_from(sorted(set(LEAVES) - set(RARE)))
    names = st.integers(0, 9).flatmap(lambda i: st.sampled_from(RARE) if i == 0 else common)
    return names.map(lambda name: ("leaf", name))


def tree_specs():
    """A pytree as nested tuples: ("leaf", name), ("none",), or a container of specs."""
    def containers(children):
        kids = st.lists(children, max_size=2).map(tuple)
        entries = st.lists(st.tuples(st.sampled_from("xyz"), children), max_size=3,
                           unique_by=lambda kv: kv[0]).map(tuple)
        return st.one_of(kids.map(lambda c: ("tuple", c)), kids.map(lambda c: ("list", c)),
                         entries.map(lambda e: ("dict", e)))

    return st.recursive(st.one_of(leaf_specs(), st.just(("none",))), containers, max_leaves=3)


def static_specs():
    return st.sampled_from(sorted(STATICS)).map(lambda name: ("static", name))


def build(spec: tuple, lib: SimpleNamespace, k: int, reorder: bool) -> Any:
    """The value a spec describes; `reorder` reverses the insertion order of every dict."""
    kind = spec[0]
    if kind == "leaf":
        return LEAVES[spec[1]](lib, k)
    if kind == "static":
        return STATICS[spec[1]]
    if kind == "none":
        return None
    if kind == "dict":
        items = spec[1][::-1] if reorder else spec[1]
        return {key: build(child, lib, k, reorder) for key, child in items}
    children = [build(child, lib, k, reorder) for child in spec[1]]
    return tuple(children) if kind == "tuple" else children


@st.composite
def call_specs(draw):
    """(positional specs, keyword specs in call order): `f(a, b=None, c=None, *, s=1, t="u")`."""
    n_pos = draw(st.integers(1, 3))
    b_or_c = st.one_of(tree_specs(), static_specs())
    pos = [draw(tree_specs())] + [draw(b_or_c) for _ in range(n_pos - 1)]
    names = [n for n in ("b", "c") if n not in ("a", "b", "c")[:n_pos]] + ["s", "t"]
    kw = []
    for name in draw(st.permutations(names)):
        if draw(st.booleans()):
            value = b_or_c if name in ("b", "c") else st.one_of(static_specs(), tree_specs())
            kw.append((name, draw(value)))
    return tuple(pos), tuple(kw)


@st.composite
def scenarios(draw):
    """jit options, a few distinct calls, and a sequence of 3-8 calls drawn from them."""
    options = dict(static_argnums=draw(st.sampled_from([None, 1, -1, (1, 2)])),
                   static_argnames=draw(st.sampled_from([None, "s", ("s", "t"), ("b", "t")])))
    calls = draw(st.lists(call_specs(), min_size=1, max_size=4))
    sequence = draw(st.lists(
        st.tuples(st.integers(0, len(calls) - 1), st.integers(0, 2), st.booleans()),
        min_size=3, max_size=8))
    return options, [(calls[i], k, reorder) for i, k, reorder in sequence]


def _make_jitted(lib: SimpleNamespace, options: dict) -> tuple[Any, list]:
    traces: list = []

    def f(a, b=None, c=None, *, s=1, t="u"):
        traces.append(None)  # runs only when tracing

        def leaf(x):
            v = lib.jnp.asarray(len(x) if isinstance(x, str) else x)  # a static string
            return v, v * 2

        return lib.tree_map(leaf, {"a": a, "b": b, "c": c, "s": s, "t": t})

    return lib.jit(f, **options), traces


def _message(err: BaseException) -> str:
    """An error's text with what names one library's objects put in the same words."""
    text = re.sub(r" at 0x[0-9a-f]+", "", str(err))
    return text.replace("jaxlib._jax.ArrayImpl", "Array").replace(
        "stages.s02_tracing.array.Array", "Array")


def _call(g: Any, call: tuple, lib: SimpleNamespace, k: int, reorder: bool
          ) -> tuple[Any, BaseException | None]:
    pos, kw = call
    args = [build(spec, lib, k, reorder) for spec in pos]
    kwargs = {name: build(spec, lib, k, reorder) for name, spec in (kw[::-1] if reorder else kw)}
    try:
        return g(*args, **kwargs), None
    except Exception as err:  # compared with the other library's below
        return None, err


@settings(max_examples=250, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_random_call_sequences_retrace_exactly_when_jax_does(scenario):
    options, sequence = scenario
    ours, our_traces = _make_jitted(OURS, options)
    theirs, their_traces = _make_jitted(THEIRS, options)
    for step, (call, k, reorder) in enumerate(sequence):
        want, want_err = _call(theirs, call, THEIRS, k, reorder)
        got, got_err = _call(ours, call, OURS, k, reorder)
        where = f"call {step}: {call}, k={k}, reorder={reorder}"
        if want_err is not None or got_err is not None:
            assert type(got_err) is type(want_err), (where, got_err, want_err)
            assert _message(got_err) == _message(want_err), where
        else:
            assert_same_typed_values(got, want)
        assert len(our_traces) == len(their_traces), where
        assert ours._cache_size() == theirs._cache_size(), where
