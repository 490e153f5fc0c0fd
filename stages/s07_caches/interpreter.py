"""The interpreting backend: its program is the jaxpr; executing it runs eval_jaxpr on numpy.

JAX has no such backend: its programs are StableHLO modules and XLA compiles them to machine
code. This one keeps every step of the interface honest with the least machinery: `lower` prunes
what the outputs do not need (as JAX's lowering does unless `keep_unused`), `compile` type-checks
the program, `call` interprets it, and `serialize` writes the documented format of
serialization.py. Later stages register a StableHLO/PJRT backend next to it (xla_bridge.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from stages.s02_tracing import core
from stages.s02_tracing.array import Array, to_array
from stages.s02_tracing.core import ClosedJaxpr, ShapedArray
from stages.s03_partial_eval import dce_jaxpr

from . import dispatch, serialization
from .compiler import CompileOptions
from .xla_bridge import Device, register_backend_factory


class InterpreterProgram:
    """A lowered jaxpr: the inputs it reads (`kept_var_idx`) and the avals of all of them."""

    def __init__(self, module_name: str, closed_jaxpr: ClosedJaxpr,
                 in_avals: Sequence[ShapedArray], kept_var_idx: Sequence[int],
                 donated_invars: Sequence[bool], arg_names: Sequence[str]):
        self.module_name = module_name
        self.closed_jaxpr = closed_jaxpr
        self.in_avals = tuple(in_avals)
        self.kept_var_idx = tuple(kept_var_idx)
        self.donated_invars = tuple(donated_invars)
        self.arg_names = tuple(arg_names)

    def as_text(self, dialect: str | None = None, debug_info: bool = False) -> str:
        if dialect not in (None, "jaxpr"):
            raise ValueError(f"unknown dialect: {dialect}")
        return str(self.closed_jaxpr)

    def extra(self) -> dict[str, Any]:
        avals = tuple((a.shape, a.dtype, a.weak_type) for a in self.in_avals)
        return {"in_avals": avals, "kept_var_idx": self.kept_var_idx,
                "donated_invars": self.donated_invars, "arg_names": self.arg_names}

    def as_bytes(self, debug_info: bool) -> bytes:
        extra = self.extra() if debug_info else dict(self.extra(), arg_names=())
        return serialization.dumps(self.module_name, self.closed_jaxpr, extra, debug_info)

    def cost_analysis(self) -> dict[str, float]:
        """Rough counts: one flop per output element, 2*M*N*K for a dot; bytes read and written."""
        flops = nbytes = 0.0

        def size(aval: ShapedArray) -> int:
            return int(np.prod(aval.shape, dtype=np.int64))

        for eqn in self.closed_jaxpr.eqns:
            outs = [v.aval for v in eqn.outvars]
            ins = [x.aval for x in eqn.invars]
            if eqn.primitive.name == "dot_general":
                (contract, _), _ = eqn.params["dimension_numbers"]
                k = int(np.prod([ins[0].shape[d] for d in contract], dtype=np.int64))
                flops += 2.0 * size(outs[0]) * k
            else:
                flops += sum(size(a) for a in outs)
            nbytes += sum(size(a) * a.dtype.itemsize for a in ins + outs)
        return {"flops": flops, "bytes accessed": nbytes}


class InterpreterExecutable:
    """A compiled program: call it with every argument, it reads the kept ones."""

    def __init__(self, program: InterpreterProgram):
        self.program = program
        self.in_avals = program.in_avals
        self.out_avals = program.closed_jaxpr.out_avals
        self._kept_avals = [program.in_avals[i] for i in program.kept_var_idx]

    # --8<-- [start:call]
    def call(self, *args: Any) -> list[Array]:
        closed = self.program.closed_jaxpr
        kept = [np.asarray(args[i], dtype=aval.dtype)  # canonical dtypes, as a device would hold
                for i, aval in zip(self.program.kept_var_idx, self._kept_avals, strict=True)]
        # the bottom trace, whatever this thread's is: a compiled program does not dispatch
        with dispatch.executing_compiled_program(), core.set_current_trace(core.eval_trace):
            outs = core.eval_jaxpr(closed.jaxpr, closed.consts, *kept)
        # eager Arrays of the program's output types, weak types included (as a device returns)
        return [to_array(o, a) for o, a in zip(outs, self.out_avals, strict=True)]
    # --8<-- [end:call]

    def as_text(self) -> str:
        return self.program.as_text()

    def cost_analysis(self) -> dict[str, float]:
        return self.program.cost_analysis()


class InterpreterBackend:
    platform = "interpreter"
    platform_version = f"numpy {np.__version__}, program format {serialization.VERSION}"
    supports_executable_serialization = True

    def devices(self) -> list[Device]:
        return [Device(0, self.platform, "numpy interpreter")]

    def lower(self, closed_jaxpr: ClosedJaxpr, *, module_name: str,
              donated_invars: Sequence[bool], keep_unused: bool,
              arg_names: Sequence[str]) -> InterpreterProgram:
        n_out = len(closed_jaxpr.jaxpr.outvars)
        jaxpr, used = dce_jaxpr(closed_jaxpr.jaxpr, [True] * n_out, instantiate=keep_unused)
        kept = [i for i, u in enumerate(used) if u]
        return InterpreterProgram(module_name, ClosedJaxpr(jaxpr, closed_jaxpr.consts),
                                  closed_jaxpr.in_avals, kept, donated_invars, arg_names)

    def compile(self, program: InterpreterProgram, options: CompileOptions
                ) -> InterpreterExecutable:
        core.check_jaxpr(program.closed_jaxpr.jaxpr)  # the one check a compiler must make
        return InterpreterExecutable(program)

    def serialize(self, executable: InterpreterExecutable) -> bytes:
        return executable.program.as_bytes(debug_info=True)

    def deserialize(self, data: bytes, options: CompileOptions) -> InterpreterExecutable:
        module_name, closed_jaxpr, extra = serialization.loads(data)
        in_avals = [ShapedArray(shape, dtype, weak) for shape, dtype, weak in extra["in_avals"]]
        program = InterpreterProgram(module_name, closed_jaxpr, in_avals, extra["kept_var_idx"],
                                     extra["donated_invars"], extra["arg_names"])
        return InterpreterExecutable(program)


register_backend_factory("interpreter", InterpreterBackend, priority=0)
