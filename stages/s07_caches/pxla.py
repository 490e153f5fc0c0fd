"""The lowering cache and the in-memory executable cache: layers three and four.

JAX: jax/_src/interpreters/pxla.py (`_cached_lowering_to_hlo`, `MeshComputation`,
`_cached_compilation`, `MeshExecutable`, `check_arg_avals_for_call`) and pjit.py's `_pjit_lower`.
Both caches key *weakly on an object*, not on its contents: the lowering cache on the closed
jaxpr the trace cache produced, the executable cache on the lowering it produced. So a hit
needs the very same jaxpr object, which is why a function redefined in a loop (a new function,
so a new trace, so a new jaxpr) is lowered and compiled again even though its text is the same;
only the persistent cache, keyed on content, can catch that."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from typing import Any

from stages.s02_tracing import config, core
from stages.s02_tracing.core import ClosedJaxpr, ShapedArray

from . import compiler, dispatch, xla_bridge
from .util import WeakrefCache

logger = logging.getLogger(__name__)

_lowering_cache = WeakrefCache(
    "lowering", "the closed jaxpr (by identity), name, donated inputs, keep_unused, "
    "compiler options, backend")
_executable_cache = WeakrefCache("executable", "the lowering (by identity), compile options")


def wrap_name(transform_name: str, name: str) -> str:
    return f"{transform_name}({name})"


def sanitize_name(name: str) -> str:
    """A name usable as a module name: `jit(<lambda>)` -> `jit__lambda` (JAX: same rule)."""
    return re.sub(r"[^\w.-]", "_", name).rstrip("_")


class MeshExecutable:
    """A compiled program and what calling it needs (JAX: pxla.MeshExecutable)."""

    def __init__(self, executable: Any, in_avals: Sequence[ShapedArray],
                 arg_names: Sequence[str]):
        self.xla_executable = executable
        self.in_avals = tuple(in_avals)
        self.out_avals = tuple(executable.out_avals)
        self.arg_names = tuple(arg_names)
        # run unchecked (the caches matched the types): the backend's own call, no frame of ours
        self.unsafe_call: Callable[..., list[Any]] = executable.call

    def call(self, *args: Any) -> list[Any]:
        """Run after checking the arguments' types: what an AOT-compiled function does."""
        check_arg_avals_for_call(self.in_avals, [core.get_aval(x) for x in args],
                                 self.arg_names)
        return self.xla_executable.call(*args)


class MeshComputation:
    """A lowered program, ready to compile (JAX: pxla.MeshComputation, a stages.Lowering)."""

    def __init__(self, name: str, program: Any, backend: Any,
                 compile_options: compiler.CompileOptions, in_avals: Sequence[ShapedArray],
                 arg_names: Sequence[str]):
        self.name, self.program, self.backend = name, program, backend
        self.compile_options = compile_options
        self.in_avals, self.arg_names = tuple(in_avals), tuple(arg_names)

    def compile(self) -> MeshExecutable:
        """Layer four: one executable per program object and compile options."""
        # keyed on this object, not on the program, which the executable holds: a weak key
        # its own value refers to would never die
        return _executable_cache.get_or_compute(
            self, self.compile_options, lambda: _cached_compilation(self))

    def as_text(self, dialect: str | None = None, debug_info: bool = False) -> str:
        return self.program.as_text(dialect, debug_info)

    def cost_analysis(self) -> Any:
        analysis = getattr(self.program, "cost_analysis", None)
        return None if analysis is None else analysis()


# --8<-- [start:lowering]
def lower_jaxpr(closed_jaxpr: ClosedJaxpr, *, name: str, donated_invars: Sequence[bool],
                keep_unused: bool, compiler_options_kvs: tuple[tuple[str, Any], ...],
                in_shardings: tuple[Any, ...]) -> MeshComputation:
    """Layer three: one lowering per jaxpr object and the parameters lowering reads."""
    backend = xla_bridge.get_backend()
    key = (name, tuple(donated_invars), keep_unused, tuple(compiler_options_kvs), backend)
    return _lowering_cache.get_or_compute(closed_jaxpr, key, lambda: _cached_lowering_to_hlo(
        closed_jaxpr, name, backend, donated_invars, keep_unused, compiler_options_kvs,
        in_shardings))


def _cached_lowering_to_hlo(closed_jaxpr: ClosedJaxpr, name: str, backend: Any,
                            donated_invars: Sequence[bool], keep_unused: bool,
                            compiler_options_kvs: tuple[tuple[str, Any], ...],
                            in_shardings: tuple[Any, ...]) -> MeshComputation:
    module_name = wrap_name("jit", name)
    in_avals = tuple(closed_jaxpr.in_avals)
    arg_names = safe_arg_names(closed_jaxpr, len(in_avals))
    log_priority = logging.WARNING if config.log_compiles.value else logging.DEBUG
    if logger.isEnabledFor(log_priority):
        logger.log(log_priority, "Compiling %s with global shapes and types %s. "
                   "Argument mapping: %s.", module_name, in_avals, in_shardings)
    with dispatch.log_elapsed_time(
            "Finished jaxpr to MLIR module conversion {fun_name} in {elapsed_time:.9f} sec",
            fun_name=module_name, event=dispatch.JAXPR_TO_MLIR_MODULE_EVENT):
        program = backend.lower(closed_jaxpr, module_name=sanitize_name(module_name),
                                donated_invars=donated_invars, keep_unused=keep_unused,
                                arg_names=arg_names)
    options = compiler.get_compile_options(compiler_options_kvs)
    return MeshComputation(name, program, backend, options, in_avals, arg_names)


def safe_arg_names(closed_jaxpr: ClosedJaxpr, n: int) -> tuple[str, ...]:
    """The argument names of the traced function, or blanks (JAX: DebugInfo.safe_arg_names)."""
    dbg = closed_jaxpr.jaxpr.debug_info
    names = getattr(dbg, "arg_names", None)
    return tuple(names) if names is not None and len(names) == n else ("",) * n


def _cached_compilation(computation: MeshComputation) -> MeshExecutable:
    with dispatch.log_elapsed_time(
            "Finished XLA compilation of {fun_name} in {elapsed_time:.9f} sec",
            fun_name=wrap_name("jit", computation.name), event=dispatch.BACKEND_COMPILE_EVENT):
        executable = compiler.compile_or_get_cached(computation.backend, computation.program,
                                                    computation.compile_options)
    return MeshExecutable(executable, computation.in_avals, computation.arg_names)
# --8<-- [end:lowering]


def check_arg_avals_for_call(ref_avals: Sequence[ShapedArray], arg_avals: Sequence[ShapedArray],
                             arg_names: Sequence[str]) -> None:
    """JAX's error for an AOT-compiled function called with other shapes or dtypes."""
    if len(ref_avals) != len(arg_avals):
        raise TypeError(f"Computation compiled for {len(ref_avals)} inputs "
                        f"but called with {len(arg_avals)}")
    names = [f"'{n}'" for n in arg_names] if len(arg_names) == len(ref_avals) else \
        [""] * len(ref_avals)
    errors = [f"Argument {name} compiled with {ref.str_short()} and called with "
              f"{arg.str_short()}"
              for ref, arg, name in zip(ref_avals, arg_avals, names, strict=True)
              if (ref.shape, ref.dtype) != (arg.shape, arg.dtype)]
    if errors:
        max_num_errors = 5
        how_many = (f"The first {max_num_errors} of {len(errors)}"
                    if len(errors) >= max_num_errors else "The")
        raise TypeError(
            "Argument types differ from the types for which this computation was compiled. "
            "Perhaps you are calling the compiled executable with a different enable_x64 mode "
            f"than when it was AOT compiled? {how_many} mismatches are:\n"
            + "\n".join(errors[:max_num_errors]))
