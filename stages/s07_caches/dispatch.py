"""Dispatch: stage timers and their log lines, and op-by-op execution of eager primitives.

JAX: jax/_src/dispatch.py. Two things live here.

1. `log_elapsed_time`: a context manager around each stage of a jit call (trace, lower,
   compile). It publishes the duration on the event bus (monitoring.py) under JAX's event names
   and logs it in JAX's words, at WARNING when `jax_log_compiles` is set, else at DEBUG.
2. The sixth cache. In JAX every eager primitive is a tiny jit: its impl is `apply_primitive`,
   which calls the `jit` that `xla_primitive_callable(prim, **params)` caches per primitive and
   params, so `jnp.sin(x)` on a concrete array is traced, compiled and cached like any jitted
   function. Our stage 2 primitives run their numpy impls; inside `with op_by_op():` this
   thread's bottom trace is a `DispatchTrace` that sends each eager primitive through
   `apply_primitive` instead, as JAX does. Outside it nothing changes.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from stages.s02_tracing import config, core
from stages.s04_autodiff.custom_calls import custom_jvp_call_rules, custom_vjp_call_rules

from . import monitoring, pjit
from .util import Cache

JAXPR_TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
JAXPR_TO_MLIR_MODULE_EVENT = "/jax/core/compile/jaxpr_to_mlir_module_duration"
BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"

logger = logging.getLogger(__name__)


# --8<-- [start:log_elapsed_time]
class log_elapsed_time:
    """Time the body; log `fmt` with the duration and publish `event` (JAX: same name)."""

    def __init__(self, fmt: str, fun_name: str, event: str | None = None):
        self.fmt, self.fun_name, self.event = fmt, fun_name, event

    def __enter__(self) -> None:
        self.start_time = time.time()
        if self.event is not None:
            monitoring.record_scalar(self.event, self.start_time, fun_name=self.fun_name)

    def __exit__(self, exc_type: Any, *exc_info: Any) -> None:
        end_time = time.time()
        elapsed_time = end_time - self.start_time
        log_priority = logging.WARNING if config.log_compiles.value else logging.DEBUG
        if logger.isEnabledFor(log_priority):
            logger.log(log_priority, self.fmt.format(fun_name=self.fun_name,
                                                     elapsed_time=elapsed_time))
        if self.event is not None:
            monitoring.record_event_duration_secs(self.event, elapsed_time,
                                                  fun_name=self.fun_name)
            monitoring.record_event_time_span(self.event, self.start_time, end_time,
                                              fun_name=self.fun_name)
# --8<-- [end:log_elapsed_time]


# ------------------------------------------------------------------ running a compiled program

_executing = threading.local()


class executing_compiled_program:
    """The interpreting backend runs a program in it (this thread only): a nested jit equation
    is then part of the program (XLA inlines it), not a new dispatch."""

    def __enter__(self) -> None:
        self.prev = getattr(_executing, "depth", 0)
        _executing.depth = self.prev + 1

    def __exit__(self, *exc_info: Any) -> None:
        _executing.depth = self.prev


def in_compiled_program() -> bool:
    return getattr(_executing, "depth", 0) > 0


# ------------------------------------------------------------------ op-by-op execution

# --8<-- [start:apply_primitive]
_primitive_cache = Cache("primitive", "the primitive and its params (JAX: "
                         "xla_primitive_callable)")


def xla_primitive_callable(prim: core.Primitive, *, _jit: Any = None, **params: Any) -> Any:
    """A `jit` of one primitive with these params, made once per (primitive, params)."""
    def make() -> Any:
        def prim_fun(*args: Any) -> Any:
            return prim.bind(*args, **params)

        prim_fun.__name__ = prim_fun.__qualname__ = prim.name
        return (_jit or pjit.jit)(prim_fun)

    key = (prim, tuple(sorted(params.items())), _jit)
    return _primitive_cache.get_or_compute(key, make)


typed_jit: list[Any] = []  # stage 11's jit, for an op whose operands or result hold shardings


def apply_primitive(prim: core.Primitive, *args: Any, **params: Any) -> Any:
    """Run one eager primitive as a tiny jit (JAX: the impl of almost every primitive)."""
    typed = typed_jit and (params.get("sharding") or params.get("out_sharding") or any(
        getattr(getattr(x, "aval", None), "sharding", None) is not None for x in args))
    fun = xla_primitive_callable(prim, _jit=typed_jit[0] if typed else None, **params)
    with config.disable_jit(False):  # the primitive compiles even under disable_jit, as in JAX
        return fun(*args)
# --8<-- [end:apply_primitive]


def _hashable(params: dict[str, Any]) -> bool:
    try:
        hash(tuple(sorted(params.items())))
    except TypeError:
        return False
    return True


class DispatchTrace(core.EvalTrace):
    """A bottom trace that runs each primitive through `apply_primitive`."""

    def process_primitive(self, primitive, args, params):
        if hasattr(primitive, "own_impl") or not _hashable(params) or any(
                isinstance(x, core.Tracer) for x in args):
            return super().process_primitive(primitive, args, params)
        if primitive is pjit.jit_p:  # its impl compiles: the arrays go in as they are, not as
            return primitive.impl(*args, **params)  # host copies, so donation reaches them
        return apply_primitive(primitive, *args, **params)


# A custom_jvp or custom_vjp function called eagerly runs its body, as on the eval trace (JAX:
# EvalTrace.process_custom_jvp_call): each primitive in it is then dispatched on its own.
custom_jvp_call_rules[DispatchTrace] = custom_jvp_call_rules[core.EvalTrace]
custom_vjp_call_rules[DispatchTrace] = custom_vjp_call_rules[core.EvalTrace]


class op_by_op:
    """Context manager: eager primitives in this thread run as tiny jits (JAX: always on)."""

    def __enter__(self) -> None:
        self.prev = core.trace_ctx.trace
        if isinstance(self.prev, core.EvalTrace):  # only at the bottom, never under a transform
            core.trace_ctx.set_trace(DispatchTrace())

    def __exit__(self, *exc_info: Any) -> None:
        core.trace_ctx.set_trace(self.prev)
