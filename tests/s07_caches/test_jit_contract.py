"""What jit asks of the function and of the AOT path, against JAX: a function its caches can
hold, compiler options only at the top, no AOT call under disable_jit, errors naming a partial's
function; eval_shape of a jitted function and ShapeDtypeStruct's contract."""

from __future__ import annotations

import functools
import re

import jax
import numpy as np
import pytest

import stages.s07_caches as s07
from stages.s02_tracing import config, eval_shape, make_jaxpr

X3 = np.ones(3, np.float32)
OURS = (s07.jit, eval_shape, make_jaxpr, s07.ShapeDtypeStruct)
JAX = (jax.jit, jax.eval_shape, jax.make_jaxpr, jax.ShapeDtypeStruct)


def _error(fn):
    """(type, text) of what `fn()` raises, memory addresses and line numbers masked."""
    with pytest.raises(Exception) as err:
        fn()
    text = re.sub(r"0x[0-9a-f]+", "0x", str(err.value))
    return type(err.value), re.sub(r":\d+(:\d+)?", ":N", text)


class Unhashable:
    __hash__ = None

    def __call__(self, a):
        return a + 1


class NoWeakref:
    __slots__ = ()

    def __call__(self, a):
        return a + 1


@pytest.mark.parametrize("make", [Unhashable, NoWeakref], ids=["unhashable", "no weakref"])
def test_a_function_the_caches_cannot_hold_is_refused_as_jax_refuses_it(make):
    # JAX crashes when a NoWeakref is called (not lowered), so both are compared on lower
    ours, theirs = (_error(lambda j=j: j(make()).lower(1.0)) for j in (s07.jit, jax.jit))
    assert ours == theirs and ours[0] is TypeError
    assert _error(lambda: s07.jit(make())(1.0)) == ours


def test_an_unhashable_callable_still_has_its_shapes_evaluated():
    assert repr(eval_shape(Unhashable(), 1.0)) == repr(jax.eval_shape(Unhashable(), 1.0))


def test_compiler_options_on_a_nested_jit_are_refused_with_jaxs_words():
    texts = []
    for jit, _, mj, _ in (OURS, JAX):
        inner = jit(lambda a: a * 2, compiler_options={"xla_cpu_enable_fast_math": False})
        def outer(a, inner=inner):
            return inner(a) + 1
        texts.append([_error(lambda j=jit, o=outer: j(o)(X3)),
                      _error(lambda m=mj, o=outer: m(o)(X3))])
        assert np.array_equal(inner(X3), 2 * X3)  # at the top level it runs
    assert texts[0] == texts[1]
    assert "can only be passed to top-level `jax.jit`" in texts[0][0][1]


def test_a_compiled_function_refuses_to_run_under_disable_jit():
    texts = []
    for jit, disable in ((s07.jit, lambda: config.disable_jit(True)), (jax.jit, jax.disable_jit)):
        def f(a, k):
            return a * k
        compiled = jit(f).lower(X3, 2.0).compile()
        with disable():
            texts.append(_error(lambda c=compiled: c(X3, 2.0)))
        assert np.array_equal(compiled(X3, 2.0), 2 * X3)  # and runs again after
    assert texts[0] == texts[1] == (ValueError, "Disable jit is not supported in the AOT path "
                                    "since the function is not available for (jit(f))")


def _returns_a_string(k, a):
    return "s"


class ReturnsAString:
    def __call__(self, a):
        return "s"


@pytest.mark.parametrize("fun", [functools.partial(_returns_a_string, 1), ReturnsAString(),
                                 functools.partial(functools.partial(_returns_a_string), 1)],
                         ids=["partial", "callable object", "partial of a partial"])
def test_an_error_names_the_function_as_jax_names_it(fun):
    ours, theirs = (_error(lambda j=j: j(fun)(X3)) for j in (s07.jit, jax.jit))
    assert ours == theirs
    assert ("_returns_a_string at" in ours[1]) != isinstance(fun, ReturnsAString)


def test_eval_shape_of_a_jitted_function_keeps_its_static_arguments():
    outs = [es(jit(lambda a, k: a * k, static_argnums=1), X3, 2) for jit, es, _, _ in (OURS, JAX)]
    assert repr(outs[0]) == repr(outs[1]) == "ShapeDtypeStruct(shape=(3,), dtype=float32)"


@pytest.mark.parametrize("case", ["a string leaf", "a string result", "an int past int32"])
def test_eval_shape_errors_speak_of_jit_and_the_argument_path_as_jaxs(case):
    fun, arg = {"a string leaf": (lambda d: d["a"], {"a": "s"}),
                "a string result": (lambda d: "s", {"a": X3}),
                "an int past int32": (lambda n: n, 2**40)}[case]
    ours, theirs = (_error(lambda es=es: es(fun, arg)) for es in (eval_shape, jax.eval_shape))
    assert ours == theirs


@pytest.mark.parametrize("case", [
    "no dtype", "sharding None", "len", "len of a scalar", "reassign", "reassign equal",
    "shape kept as given", "update", "weak type", "str", "weak type positional"])
def test_shape_dtype_struct_keeps_jaxs_contract(case):
    def run(sds):
        s = sds((2, 3), np.float32)
        return {"no dtype": lambda: sds((2,), None),
                "sharding None": lambda: repr(sds((2,), np.float32, sharding=None)),
                "len": lambda: len(s),
                "len of a scalar": lambda: len(sds((), np.float32)),
                "reassign": lambda: setattr(s, "shape", (3,)),
                "reassign equal": lambda: (setattr(s, "shape", (2, 3)), s.shape),
                "shape kept as given": lambda: sds((2.5,), np.float32).shape,
                "update": lambda: (repr(s.update(weak_type=True)), repr(s)),
                "weak type": lambda: repr(sds((2,), np.float32, weak_type=True)),
                "str": lambda: str(s),
                "weak type positional": lambda: sds((2,), np.float32, True)}[case]()

    def outcome(sds):
        try:
            return "ok", run(sds)
        except Exception as e:  # the same refusal, word for word
            return type(e).__name__, str(e)
    ours, theirs = outcome(s07.ShapeDtypeStruct), outcome(jax.ShapeDtypeStruct)
    assert ours == theirs


def test_compiler_ir_refuses_a_dialect_it_cannot_give_as_jax():
    texts = []
    for jit, *_ in (OURS, JAX):
        lowered = jit(lambda a: a * 2).lower(X3)
        texts.append(_error(lambda lo=lowered: lo.compiler_ir("foo")))
        assert lowered.compiler_ir() is not None
    assert texts[0] == texts[1] == (ValueError, "unknown dialect: foo")
