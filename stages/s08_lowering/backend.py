"""jit's lowering step: stage 7's jit, lowered to the StableHLO module `jax.jit` would build.

JAX: jax/_src/interpreters/pxla.py (`_cached_lowering_to_hlo` calls `mlir.lower_jaxpr_to_module`,
naming the results by the jaxpr's debug info) and cache_key.py (`_hash_computation` serializes
the module with its debug info stripped). `lower_to_stablehlo` is that step for any backend
whose program is StableHLO; stage 9's PJRT backend compiles what it returns.

`StableHloBackend` is stage 7's interpreting backend with this step in front: its program is the
module, which `Lowered.as_text()` prints and the persistent cache key hashes, and its executable
still interprets the jaxpr (stage 9 compiles the text instead). It is registered below the
interpreter's priority, so importing this stage changes no earlier result; `jax_platforms` picks
it: `config.platforms("stablehlo")` for a block, `JAX_PLATFORMS=stablehlo` for a process.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from stages.s02_tracing import dtypes
from stages.s02_tracing.core import ClosedJaxpr, ShapedArray
from stages.s07_caches.compiler import CompileOptions
from stages.s07_caches.interpreter import (
    InterpreterBackend,
    InterpreterExecutable,
    InterpreterProgram,
)
from stages.s07_caches.xla_bridge import register_backend_factory

from .module import dce_jaxpr_consts, lower_jaxpr


def _aval(a: ShapedArray) -> list[Any]:
    # float0's numpy name is "void", which names any structured dtype: write it as JAX names it
    name = "float0" if a.dtype == dtypes.float0 else a.dtype.name
    return [list(a.shape), name, a.weak_type]


def _read_aval(doc: list[Any]) -> ShapedArray:
    dtype = dtypes.float0 if doc[1] == "float0" else np.dtype(doc[1])
    return ShapedArray(tuple(doc[0]), dtype, doc[2])


class StableHloProgram:
    """A lowered jit: the module text, every argument's and output's aval, the arguments read.

    `jaxpr_program` is what an interpreting backend runs instead of the text (None otherwise);
    `debug_info` is the traced function's (its source line, argument names): never in the text.
    """

    def __init__(self, module_name: str, text: str, in_avals: Sequence[ShapedArray],
                 out_avals: Sequence[ShapedArray], kept_var_idx: Sequence[int],
                 debug_info: Any = None, jaxpr_program: InterpreterProgram | None = None):
        self.module_name, self.text = module_name, text
        self.in_avals, self.out_avals = tuple(in_avals), tuple(out_avals)
        self.kept_var_idx = tuple(kept_var_idx)
        self.debug_info, self.jaxpr_program = debug_info, jaxpr_program

    def header(self) -> dict[str, Any]:
        return {"module_name": self.module_name, "in_avals": [_aval(a) for a in self.in_avals],
                "out_avals": [_aval(a) for a in self.out_avals],
                "kept_var_idx": list(self.kept_var_idx)}

    @classmethod
    def from_header(cls, header: dict[str, Any], text: str = "") -> StableHloProgram:
        return cls(header["module_name"], text, [_read_aval(a) for a in header["in_avals"]],
                   [_read_aval(a) for a in header["out_avals"]], header["kept_var_idx"])

    def as_text(self, dialect: str | None = None, debug_info: bool = False) -> str:
        """The module; it has no locations, so `debug_info=True` prints the same text."""
        if dialect == "hlo":  # JAX converts the module with XLA; ours stays in StableHLO
            raise ValueError("as_text('hlo') is not built here: the module is StableHLO only; "
                             "XLA's HLO of the compiled program is `.compile().as_text()`")
        if dialect not in (None, "stablehlo"):
            raise ValueError(f"unknown dialect: {dialect}")
        return self.text

    # --8<-- [start:as_bytes]
    def as_bytes(self, debug_info: bool) -> bytes:
        """The persistent cache key's "computation": the text, which holds no debug info to
        strip, after the avals (weak types are ours, not the compiler's, but an executable
        read back from disk gets them from here). With `debug_info`, the traced function's
        source and argument names too: what JAX's locations would carry."""
        data = json.dumps(self.header(), sort_keys=True).encode() + self.text.encode()
        return data + repr(self.debug_info).encode() if debug_info else data
    # --8<-- [end:as_bytes]

    def cost_analysis(self) -> dict[str, float] | None:
        return None if self.jaxpr_program is None else self.jaxpr_program.cost_analysis()


def safe_result_paths(closed_jaxpr: ClosedJaxpr) -> list[str]:
    """The outputs' key paths from the debug info, or blanks (JAX: DebugInfo.safe_result_paths).

    A transformation's jaxpr keeps its function's debug info with other outputs: blanks then.
    """
    n = len(closed_jaxpr.jaxpr.outvars)
    paths = getattr(closed_jaxpr.jaxpr.debug_info, "result_paths", None)
    return list(paths) if paths is not None and len(paths) == n else [""] * n


# --8<-- [start:lower_to_stablehlo]
def lower_to_stablehlo(closed_jaxpr: ClosedJaxpr, *, module_name: str,
                       donated_invars: Sequence[bool], keep_unused: bool, platform: str
                       ) -> StableHloProgram:
    """What stage 7 asks a backend's `lower` for: `module_name` is jit's (`jit_f`)."""
    module = lower_jaxpr(closed_jaxpr, module_name.removeprefix("jit_"),
                         donated=donated_invars, keep_unused=keep_unused, platform=platform,
                         result_names=safe_result_paths(closed_jaxpr))
    n = len(closed_jaxpr.in_avals)
    kept = range(n) if keep_unused else \
        [i for i, used in enumerate(dce_jaxpr_consts(closed_jaxpr.jaxpr)[2]) if used]
    return StableHloProgram(module.name, module.as_text(), closed_jaxpr.in_avals,
                            closed_jaxpr.out_avals, kept, closed_jaxpr.jaxpr.debug_info)
# --8<-- [end:lower_to_stablehlo]


# --8<-- [start:backend]
class StableHloBackend(InterpreterBackend):
    """The interpreting backend, lowering to StableHLO first: the text is the program, the
    jaxpr is what runs. Serialized executables are the interpreter's."""

    platform = "stablehlo"
    lowering_platform = "cpu"  # the module jax.jit writes for a CPU: its donation, its dot rules
    platform_version = f"StableHLO for {lowering_platform}; {InterpreterBackend.platform_version}"

    def lower(self, closed_jaxpr: ClosedJaxpr, *, module_name: str,
              donated_invars: Sequence[bool], keep_unused: bool,
              arg_names: Sequence[str]) -> StableHloProgram:
        program = lower_to_stablehlo(closed_jaxpr, module_name=module_name,
                                     donated_invars=donated_invars, keep_unused=keep_unused,
                                     platform=self.lowering_platform)
        program.jaxpr_program = super().lower(
            closed_jaxpr, module_name=module_name, donated_invars=donated_invars,
            keep_unused=keep_unused, arg_names=arg_names)
        return program

    def compile(self, program: StableHloProgram, options: CompileOptions
                ) -> InterpreterExecutable:
        return super().compile(program.jaxpr_program, options)


register_backend_factory("stablehlo", StableHloBackend, priority=-1)  # only when asked for
# --8<-- [end:backend]
