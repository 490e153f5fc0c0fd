"""`config.trace_context()` is rebuilt only after a flag or the axis environment changed (jit
reads it on every call), and it is still right: per thread, after a global change, after
another thread's change, inside and after named axes."""

from __future__ import annotations

import threading

from stages.s02_tracing import config
from stages.s02_tracing.axis_env import extend_axis_env_nd

flag = config.disable_jit  # the one flag stage 2 puts in the trace context


def _flag_in(context: tuple) -> bool:
    return context[config.trace_context_names().index("jax_disable_jit")]


def test_the_same_tuple_is_handed_out_until_something_changes():
    first = config.trace_context()
    assert config.trace_context() is first
    with flag(True):
        assert _flag_in(config.trace_context()) is True
    assert config.trace_context() == first and _flag_in(first) is False


def test_another_threads_override_is_its_own_and_a_global_change_reaches_every_thread():
    base = config.trace_context()
    inside, entered, release = {}, threading.Event(), threading.Event()

    def other() -> None:
        with flag(True):
            inside["context"] = config.trace_context()
            entered.set()
            release.wait()

    thread = threading.Thread(target=other)
    thread.start()
    entered.wait()
    try:
        assert config.trace_context() == base  # rebuilt here, still this thread's values
    finally:
        release.set()
        thread.join()
    assert _flag_in(inside["context"]) is True

    seen_before = config.trace_context()
    flag.set_global(True)
    try:
        assert _flag_in(config.trace_context()) is True  # not the tuple cached before
        assert seen_before is not config.trace_context()
    finally:
        flag.set_global(False)
    assert _flag_in(config.trace_context()) is False


def test_named_axes_change_the_context_and_leaving_them_restores_it():
    base = config.trace_context()
    with extend_axis_env_nd([("i", 2)]):
        two = config.trace_context()
        with extend_axis_env_nd([("i", 3)]):
            assert config.trace_context() != two
        assert config.trace_context() == two
    assert two != base and config.trace_context() == base
