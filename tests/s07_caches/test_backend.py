"""The backend interface and the interpreting backend: lower, compile, and a program format that
round-trips every program of the corpora, refuses what it cannot write, and imports nothing but
the course's own enum and named-tuple classes when it reads."""

from __future__ import annotations

import json

import numpy as np
import pytest

import stages.s02_tracing as s02
import stages.s04_autodiff as s04
import stages.s06_control_flow as s06
import stages.s07_caches as s07
from shared.corpus_s02 import CASES
from stages.s01_pytrees import tree_leaves
from stages.s07_caches import compiler, serialization, xla_bridge
from stages.s07_caches.interpreter import InterpreterBackend

jnp = s02.numpy


def _round_trip(jitted, *args):
    backend = xla_bridge.get_backend()
    compiled = jitted.lower(*args).compile()
    executable = compiled.runtime_executable()
    data = backend.serialize(executable)
    again = backend.deserialize(data, compiler.get_compile_options())
    assert again.as_text() == executable.as_text()  # the same program, printed
    assert backend.serialize(again) == data  # and the same bytes
    return executable, again


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_every_corpus_program_round_trips(case):
    jitted = s07.jit(case.bind(s02.lax, jnp), static_argnums=case.static_argnums)
    executable, again = _round_trip(jitted, *case.args)
    dyn = [a for i, a in enumerate(case.args) if i not in case.static_argnums]
    flat = tree_leaves(dyn)
    for a, b in zip(executable.call(*flat), again.call(*flat), strict=True):
        np.testing.assert_array_equal(a, b)


def test_control_flow_and_remat_programs_round_trip():
    def f(x):
        y = s06.scan(lambda c, xi: (s06.cond(xi > 0, jnp.sin, jnp.cos, c) * xi, c), x[0], x)[1]
        return s04.checkpoint(lambda z: jnp.tanh(z) * 2.0)(y)

    x = np.linspace(-1, 1, 4).astype(np.float32)
    executable, again = _round_trip(s07.jit(f), x)
    np.testing.assert_array_equal(executable.call(x)[0], again.call(x)[0])
    _round_trip(s07.jit(s04.grad(lambda x: jnp.sum(f(x)))), x)


def test_a_python_function_in_a_param_is_refused_by_name():
    @s04.custom_jvp
    def g(x):
        return jnp.sin(x)

    g.defjvp(lambda p, t: (jnp.sin(p[0]), t[0]))
    program = s07.jit(g).lower(np.ones(2, np.float32)).compiler_ir()
    with pytest.raises(serialization.NotSerializable,
                       match="^custom_jvp_call param jvp_jaxpr_fun: cannot write a value of "
                             "type WrappedFun$"):
        program.as_bytes(debug_info=False)


def _tampered(change) -> bytes:
    program = s07.jit(lambda x: s02.lax.round(x)).lower(np.ones(2, np.float32)).compiler_ir()
    doc = json.loads(program.as_bytes(debug_info=True))
    change(doc)
    return json.dumps(doc).encode()


@pytest.mark.parametrize("change,message", [
    (lambda d: d.update(version=99), "format version 99, expected 1"),
    (lambda d: d.update(format="pickle"), "not an interpreter program"),
    (lambda d: d["jaxpr"]["eqns"][0]["params"].update(
        rounding_method={"enum": "os:system", "name": "x"}),
     "malformed program: ValueError: refusing to import os: not a course module"),
])
def test_reading_refuses_other_versions_formats_and_modules(change, message):
    with pytest.raises(serialization.DeserializationError, match=f"^{message}$"):
        serialization.loads(_tampered(change))


def test_a_backend_plugs_in_by_registration_and_wins_by_priority(monkeypatch):
    calls = []

    class Counting(InterpreterBackend):
        platform = "counting"

        def compile(self, program, options):
            calls.append(program.module_name)
            return super().compile(program, options)

    monkeypatch.setattr(xla_bridge, "_factories", dict(xla_bridge._factories))
    monkeypatch.setattr(xla_bridge, "_backends", {})
    xla_bridge.register_backend_factory("counting", Counting, priority=10)
    out = s07.jit(lambda x: x * 4.0)(np.ones(2, np.float32))
    np.testing.assert_allclose(out, [4.0, 4.0])
    assert calls == ["jit__lambda"]
    with pytest.raises(RuntimeError, match=r"^Unknown backend tpu; available: "):
        xla_bridge.get_backend("tpu")
