"""What fails, fails with JAX's message: no rule for a primitive (on this platform), a rule
for an unknown platform, forward mode through a custom_vjp."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from jax.extend.core import Primitive as JaxPrimitive
from jax.interpreters import mlir as jax_mlir

import stages.s02_tracing as s02
import stages.s04_autodiff as s04
import stages.s08_lowering as s08
from stages.s02_tracing import core


def _error(fn) -> tuple[type, str]:
    with pytest.raises(Exception) as info:
        fn()
    return info.type, str(info.value)


def _primitive(cls, name):
    prim = cls(name)
    prim.def_impl(lambda x: x)
    prim.def_abstract_eval(lambda x: x)
    return prim


def test_a_primitive_without_a_rule_names_itself_and_the_platform():
    ours_p, theirs_p = _primitive(core.Primitive, "foo"), _primitive(JaxPrimitive, "foo")
    closed = s02.make_jaxpr(lambda x: ours_p.bind(x))(1.0)
    ours = _error(lambda: s08.lower_jaxpr(closed, "f"))
    theirs = _error(lambda: jax.jit(lambda x: theirs_p.bind(x)).lower(1.0))
    assert ours == theirs == (NotImplementedError,
                              "MLIR translation rule for primitive 'foo' not found for "
                              "platform cpu")


def test_a_rule_for_one_platform_is_used_there_only():
    prim = _primitive(core.Primitive, "tpu_only")
    s08.register_lowering(prim, lambda ctx, x: [x], platform="tpu")
    try:
        closed = s02.make_jaxpr(lambda x: prim.bind(x))(np.ones(2, np.float32))
        assert "return %arg0" in s08.lower_jaxpr(closed, "f", platform="tpu").as_text()
        assert _error(lambda: s08.lower_jaxpr(closed, "f", platform="cuda")) == (
            NotImplementedError,
            "MLIR translation rule for primitive 'tpu_only' not found for platform cuda")
    finally:
        del s08.platform_specific_lowerings["tpu"][prim]


def test_gpu_means_cuda_and_rocm_and_an_unknown_platform_is_refused_as_jax_refuses():
    prim = _primitive(core.Primitive, "foo")
    s08.register_lowering(prim, lambda ctx, x: [x], platform="gpu")
    try:
        assert prim in s08.platform_specific_lowerings["cuda"]
        assert prim in s08.platform_specific_lowerings["rocm"]
    finally:
        del s08.platform_specific_lowerings["cuda"][prim]
        del s08.platform_specific_lowerings["rocm"][prim]
    ours = _error(lambda: s08.register_lowering(prim, lambda ctx, x: [x], platform="quantum"))
    theirs = _error(lambda: jax_mlir.register_lowering(_primitive(JaxPrimitive, "foo"),
                                                       lambda ctx, x: [x], platform="quantum"))
    assert ours == theirs


def test_forward_mode_through_a_custom_vjp_fails_when_lowered_as_in_jax():
    @s04.custom_vjp
    def g(x):
        return s02.numpy.sin(x)

    g.defvjp(lambda x: (g(x), x), lambda r, c: (c * r,))

    @jax.custom_vjp
    def h(x):
        return jax.numpy.sin(x)

    h.defvjp(lambda x: (h(x), x), lambda r, c: (c * r,))
    closed = s02.make_jaxpr(lambda x, t: s04.jvp(g, (x,), (t,)))(1.0, 1.0)
    assert _error(lambda: s08.lower_jaxpr(closed, "f")) == \
        _error(lambda: jax.jit(lambda x, t: jax.jvp(h, (x,), (t,))).lower(1.0, 1.0)) == \
        (TypeError, "can't apply forward-mode autodiff (jvp) to a custom_vjp function.")
