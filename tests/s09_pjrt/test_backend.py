"""Stage 7's jit on the PJRT backend: stage 8's module compiled through the client, XLA's
optimized HLO and cost analysis, donation and compiler options passed through, nested jits,
transformations around a jit, and the persistent cache read by a second process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import stages.s07_caches as s07
import stages.s08_lowering as s08
import stages.s09_pjrt as s09
from stages.s02_tracing import numpy as jnp
from stages.s04_autodiff import grad
from stages.s05_vmap import vmap
from stages.s06_control_flow import cond
from stages.s07_caches import xla_bridge

WORKER = Path(__file__).with_name("pjrt_worker.py")
W = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)


def layer(ns):
    def f(x, w):
        return ns.tanh(ns.dot(x, w)) + 1.0
    return f


def test_the_backend_is_pjrt_on_the_cpu_client():
    backend = xla_bridge.get_backend()
    assert isinstance(backend, s09.PjRtBackend)
    assert backend.platform == "cpu" and backend.platform_version.startswith("PJRT cpu")
    assert [d.id for d in backend.devices()] == [0]


def test_lowered_text_is_stage_8s_and_compiled_text_is_xlas():
    x = np.ones((2, 3), np.float32)
    lowered = s07.jit(layer(jnp)).lower(x, W)
    closed = s07.jit(layer(jnp)).trace(x, W).jaxpr
    assert lowered.as_text() == s08.lower_jaxpr(closed, "f", result_names=["result"]).as_text()
    assert lowered.as_text() == jax.jit(layer(jjnp)).lower(x, W).as_text()  # JAX's text
    compiled = lowered.compile()
    assert compiled.as_text().startswith("HloModule jit_f, is_scheduled=true")
    theirs = jax.jit(layer(jjnp)).lower(x, W).compile()
    assert compiled.cost_analysis()["flops"] == theirs.cost_analysis()["flops"]
    np.testing.assert_allclose(compiled(x, W), theirs(x, W), rtol=1e-6)


def test_unused_arguments_are_not_transferred(delta):
    x, y = np.ones(3, np.float32), np.ones(1000, np.float32)
    d = delta()
    s07.jit(lambda x, y: x * 2.0)(x, y)
    assert s09.metrics.metric_data("OutboundData")[2][-1][1] == x.nbytes
    s07.jit(lambda x, y: x * 2.0, keep_unused=True)(x, y)
    assert s09.metrics.metric_data("OutboundData")[2][-1][1] == x.nbytes + y.nbytes
    assert d.samples("TransferToDeviceTime") == 2  # one transfer per call, of every argument


def test_donation_rides_down_in_the_program():
    x = s09.device_put(np.ones(4, np.float32))
    f = s07.jit(lambda x: x * 3.0, donate_argnums=0)
    assert "tf.aliasing_output = 0 : i32" in f.lower(x).as_text()
    y = f(x)
    assert x.is_deleted() and y.tolist() == [3.0] * 4


def test_compiler_options_reach_xla_and_its_errors_are_jaxs():
    x = np.ones(2, np.float32)
    out = s07.jit(lambda x: x + 1.0, compiler_options={"xla_cpu_enable_fast_math": False})(x)
    assert out.tolist() == [2.0, 2.0]
    with pytest.raises(Exception) as theirs:
        jax.jit(lambda x: x + 1.0, compiler_options={"bogus_option": True})(x)
    with pytest.raises(Exception) as ours:
        s07.jit(lambda x: x + 1.0, compiler_options={"bogus_option": True})(x)
    assert str(ours.value) == str(theirs.value) == \
        "INVALID_ARGUMENT: No such compile option: 'bogus_option'"


def test_a_jit_inside_a_jit_is_a_call_of_a_private_function():
    inner = s07.jit(lambda x: jnp.sin(x) * 2.0)
    outer = s07.jit(lambda x: inner(x) + inner(x * 0.5))
    x = np.linspace(0, 1, 3, dtype=np.float32)
    assert "call @" in outer.lower(x).as_text()
    np.testing.assert_allclose(outer(x), np.sin(x) * 2 + np.sin(x * 0.5) * 2, rtol=1e-6)


def test_transformations_around_a_jit_and_a_jit_around_them():
    x = np.linspace(-1, 1, 4, dtype=np.float32)
    f = s07.jit(lambda x: jnp.sum(jnp.tanh(x) ** 2))
    fj = jax.jit(lambda x: jjnp.sum(jjnp.tanh(x) ** 2))
    np.testing.assert_allclose(grad(f)(x), jax.grad(fj)(x), rtol=1e-5)
    batch = np.stack([x, x * 2.0])
    plain = lambda x: jnp.sum(jnp.tanh(x) ** 2)  # noqa: E731
    np.testing.assert_allclose(s07.jit(vmap(grad(plain)))(batch),
                               jax.vmap(jax.grad(fj))(batch), rtol=1e-5)
    g = s07.jit(lambda x: cond(x.sum() > 0, lambda v: f(v) * 2.0, lambda v: -f(v), x))
    gj = jax.jit(lambda x: jax.lax.cond(x.sum() > 0, lambda v: fj(v) * 2.0,
                                        lambda v: -fj(v), x))
    for v in (x, -x - 1.0):
        np.testing.assert_allclose(g(v), gj(v), rtol=1e-5)
        np.testing.assert_allclose(s07.jit(grad(g))(v), jax.jit(jax.grad(gj))(v), rtol=1e-5)


def test_a_second_process_reads_the_executable_instead_of_compiling(tmp_path):
    env = dict(os.environ, PJRT_DEVICE="CPU",
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    runs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, str(WORKER), str(tmp_path / "cache")], env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-3000:]
        runs.append(json.loads(done.stdout.splitlines()[-1]))
    first, second = runs
    assert (first["before"], first["inside"], first["after"]) == ("interpreter", "cpu",
                                                                  "interpreter")
    assert first["dispatching"] == "DispatchTrace" and first["after_trace"] == "EvalTrace"
    assert first["type"] == "ArrayImpl"
    assert first["compiles"] == 1 and first["persistent"] == [0, 1]
    assert second["compiles"] == 0 and second["persistent"] == [1, 0]  # XLA never ran
    assert second["compile_time_samples"] == 0
    assert second["value"] == first["value"]
    x = np.linspace(-1.0, 1.0, 4, dtype=np.float32)
    np.testing.assert_allclose(first["value"], np.tanh(x) * 3.0 + 1.0, rtol=1e-5, atol=1e-6)


def test_lowered_compile_takes_compiler_options_as_jaxs_and_xla_checks_them():
    x = np.ones(3, np.float32)
    lowered = s07.jit(lambda v: v * 2.0).lower(x)
    fast = lowered.compile(compiler_options={"xla_cpu_enable_fast_math": True})
    assert fast is not lowered.compile()  # other flags: another executable
    np.testing.assert_array_equal(fast(x), jax.jit(lambda v: v * 2.0).lower(x).compile(
        compiler_options={"xla_cpu_enable_fast_math": True})(x))
    with pytest.raises(Exception, match="No such compile option: 'xla_bogus'"):
        lowered.compile(compiler_options={"xla_bogus": 1})
