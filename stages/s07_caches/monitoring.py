"""An event bus: jit publishes its stage timers and cache events here; anyone may listen.

JAX: jax/_src/monitoring.py, same function names and listener signatures. Events are strings
such as `/jax/core/compile/jaxpr_trace_duration`; keyword arguments carry metadata
(`fun_name=...`). Listeners are called synchronously, in registration order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_event_listeners: list[Callable[..., None]] = []  # listener(event, **kwargs)
_event_duration_secs_listeners: list[Callable[..., None]] = []  # (event, duration_secs, **kw)
_event_time_span_listeners: list[Callable[..., None]] = []  # (event, start, end, **kw)
_scalar_listeners: list[Callable[..., None]] = []  # (event, value, **kw)


def record_event(event: str, **kwargs: Any) -> None:
    """Something happened (a cache hit, a cache miss)."""
    for listener in list(_event_listeners):
        listener(event, **kwargs)


def record_event_duration_secs(event: str, duration: float, **kwargs: Any) -> None:
    """Something took `duration` seconds (tracing, lowering, compiling)."""
    for listener in list(_event_duration_secs_listeners):
        listener(event, duration, **kwargs)


def record_event_time_span(event: str, start_time: float, end_time: float,
                           **kwargs: Any) -> None:
    for listener in list(_event_time_span_listeners):
        listener(event, start_time, end_time, **kwargs)


def record_scalar(event: str, value: float | int, **kwargs: Any) -> None:
    for listener in list(_scalar_listeners):
        listener(event, value, **kwargs)


def register_event_listener(callback: Callable[..., None]) -> None:
    _event_listeners.append(callback)


def register_event_duration_secs_listener(callback: Callable[..., None]) -> None:
    _event_duration_secs_listeners.append(callback)


def register_event_time_span_listener(callback: Callable[..., None]) -> None:
    _event_time_span_listeners.append(callback)


def register_scalar_listener(callback: Callable[..., None]) -> None:
    _scalar_listeners.append(callback)


def unregister_event_listener(callback: Callable[..., None]) -> None:
    _event_listeners.remove(callback)


def unregister_event_duration_listener(callback: Callable[..., None]) -> None:
    _event_duration_secs_listeners.remove(callback)


def unregister_event_time_span_listener(callback: Callable[..., None]) -> None:
    _event_time_span_listeners.remove(callback)


def unregister_scalar_listener(callback: Callable[..., None]) -> None:
    _scalar_listeners.remove(callback)


def clear_event_listeners() -> None:
    """Forget every listener (tests use it to start clean)."""
    for listeners in (_event_listeners, _event_duration_secs_listeners,
                      _event_time_span_listeners, _scalar_listeners):
        listeners.clear()
