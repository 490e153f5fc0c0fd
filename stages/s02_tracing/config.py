"""Configuration flags: a global value, a per-thread override, and context managers to scope it.

JAX: jax/_src/config.py. Each flag is a `State` with a name (`jax_disable_jit`), a default, and a
global value that `config.update(name, value)` or the environment variable of the same name in
upper case (`JAX_DISABLE_JIT=1`) sets. Calling a state, `disable_jit(True)`, gives a context
manager that overrides it for the current thread only. Flags that change what tracing produces are
part of `trace_context()`, which jit's trace cache puts in its key. Stage 2 reads none of these
flags; jit and its caches (stage 7) read all of them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

from .axis_env import get_axis_env

_UNSET = object()


class _Override(threading.local):
    value: Any = _UNSET  # a flag's per-thread override; none at first (a class default)


class State:
    """One flag: `state.value` is this thread's override if it has one, else the global value."""

    def __init__(self, name: str, default: Any, help: str, parser: Callable[[str], Any],
                 include_in_trace_context: bool = False):
        self.name = name
        self.help = help
        self._parser = parser
        env = os.environ.get(name.upper())
        self._global = default if env is None else parser(env)
        self._local = _Override()
        self.include_in_trace_context = include_in_trace_context

    @property
    def value(self) -> Any:
        local = self._local.value
        return self._global if local is _UNSET else local

    def set_global(self, value: Any) -> None:
        self._global = value
        _flags_changed()

    def swap_local(self, value: Any) -> Any:
        """Set this thread's override; return the previous one (possibly unset)."""
        prev = self._local.value
        self._local.value = value
        _flags_changed()
        return prev

    def set_local(self, prev: Any) -> None:
        self._local.value = prev  # _UNSET: no override
        _flags_changed()

    def __call__(self, new_value: Any = True) -> _StateContextManager:
        """A context manager: `with disable_jit(True): ...` (this thread only)."""
        return _StateContextManager(self, new_value)

    def __repr__(self) -> str:
        return f"State({self.name}={self.value!r})"


class _StateContextManager:
    def __init__(self, state: State, value: Any):
        self.state, self.new_value = state, value

    def __enter__(self) -> None:
        self.prev = self.state.swap_local(self.new_value)

    def __exit__(self, *exc_info: Any) -> None:
        self.state.set_local(self.prev)


class Config:
    """Every flag by name: `config.update("jax_log_compiles", True)`, `config.jax_log_compiles`."""

    def __init__(self) -> None:
        self._states: dict[str, State] = {}
        self.trace_states: tuple[State, ...] = ()  # those in trace_context(), in order

    def add(self, state: State) -> State:
        if state.name in self._states:
            raise ValueError(f"flag {state.name} is already defined")
        self._states[state.name] = state
        if state.include_in_trace_context:
            self.trace_states += (state,)
            _flags_changed()
        return state

    def remove(self, name: str) -> None:
        """Forget a flag (one a test defined)."""
        state = self._states.pop(name)
        self.trace_states = tuple(s for s in self.trace_states if s is not state)
        _flags_changed()

    def update(self, name: str, value: Any) -> None:
        if name not in self._states:
            raise AttributeError(f"Unrecognized config option: {name}")
        self._states[name].set_global(value)

    def __getattr__(self, name: str) -> Any:
        states = self.__dict__.get("_states", {})
        if name in states:
            return states[name].value
        raise AttributeError(f"Unrecognized config option: {name}")

    def states(self) -> list[State]:
        return list(self._states.values())


config = Config()
update = config.update


def _parse_bool(text: str) -> bool:
    if text.lower() in ("1", "true", "yes", "on"):
        return True
    if text.lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"not a boolean: {text!r}")


def bool_state(name: str, default: bool, help: str, *,
               include_in_trace_context: bool = False) -> State:
    return config.add(State(name, default, help, _parse_bool, include_in_trace_context))


def int_state(name: str, default: int, help: str) -> State:
    return config.add(State(name, default, help, int))


def float_state(name: str, default: float, help: str) -> State:
    return config.add(State(name, default, help, float))


def optional_string_state(name: str, default: str | None, help: str) -> State:
    return config.add(State(name, default, help, str))


class _TraceContext(threading.local):
    # (the flags' generation, the axis environment, the tuple built then), this thread's last:
    # one thread-local read per jit call
    state: tuple[int, Any, tuple] = (-1, None, ())


_trace_context = _TraceContext()
_generation = 0  # bumped, under the lock, whenever any flag changes in any thread
_generation_lock = threading.Lock()


def _flags_changed() -> None:
    global _generation
    with _generation_lock:  # two threads' bumps must not collapse into one
        _generation += 1


def trace_context() -> tuple[Any, ...]:
    """The values of the flags that change what tracing produces, in a fixed order."""
    # JAX: config.trace_context(), also holding the mesh and other context managers' state;
    # the named axes in scope are one of those (JAX: axis_env_state): a trace under
    # vmap(axis_name='i') of size 2 folds axis_size('i') to 2 and must not serve size 3.
    # jit asks on every call, so the tuple is rebuilt only after a flag or the axis
    # environment changed, as JAX refreshes its jit state when a flag is set
    generation, env, value = _trace_context.state
    if generation != _generation or env is not get_axis_env():
        generation, env = _generation, get_axis_env()
        value = (*[s.value for s in config.trace_states], env.key())
        _trace_context.state = (generation, env, value)
    return value


def trace_context_names() -> tuple[str, ...]:
    """The names of the flags in `trace_context()`, in the same order."""
    return (*(s.name for s in config.trace_states), "axis_env_state")


# ------------------------------------------------------------------ the flags jit reads

disable_jit = bool_state(
    "jax_disable_jit", False,
    "Run jitted functions as plain Python: no tracing, no caches, eager primitives.",
    # a nested jit is inlined instead of staged, so a trace under it differs
    include_in_trace_context=True)

explain_cache_misses = bool_state(
    "jax_explain_cache_misses", False,
    "Log (WARNING) why each jit tracing cache miss happened, and persistent cache misses.")

log_compiles = bool_state(
    "jax_log_compiles", False,
    "Log (WARNING) each trace, lowering and compilation with its duration.")

compilation_cache_dir = optional_string_state(
    "jax_compilation_cache_dir", None,
    "Directory of the persistent compilation cache; None disables it.")

enable_compilation_cache = bool_state(
    "jax_enable_compilation_cache", True,
    "Whether the persistent compilation cache is used when a directory is set.")

persistent_cache_min_compile_time_secs = float_state(
    "jax_persistent_cache_min_compile_time_secs", 1.0,
    "Only executables that took at least this long to compile are written to disk.")

persistent_cache_min_entry_size_bytes = int_state(
    "jax_persistent_cache_min_entry_size_bytes", 0,
    "Only entries at least this large (bytes) are written to disk.")

compilation_cache_max_size = int_state(
    "jax_compilation_cache_max_size", -1,
    "Size cap of the persistent cache directory in bytes; least recently used entries are "
    "evicted beyond it. -1: no cap.")

compilation_cache_include_metadata_in_key = bool_state(
    "jax_compilation_cache_include_metadata_in_key", False,
    "Hash the program with its debug info (source locations, names) into the cache key.")

raise_persistent_cache_errors = bool_state(
    "jax_raise_persistent_cache_errors", False,
    "Raise, instead of warning, when reading or writing the persistent cache fails.")

platforms = optional_string_state(
    "jax_platforms", None,
    "Comma-separated backend names in order of preference; None: the highest priority one.")
