"""cond's lowering rule: `stablehlo.case`, one region per branch.

JAX: `_cond_lowering` in jax/_src/lax/control_flow/conditionals.py. The index is already an
int32 (cond converted a bool predicate; switch clamped its index), and the branches are stored
false-first, so region 0 is the false branch. A case region takes no arguments: each branch
reads the operands from the enclosing function directly, as StableHLO allows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stages.s02_tracing import core
from stages.s06_control_flow import cond_p

from . import hlo, ir, mlir
from .mlir import LoweringRuleContext, aval_to_ir_type, register_lowering


# --8<-- [start:cond]
def _cond_lowering(ctx: LoweringRuleContext, index: ir.Value, *args: ir.Value,
                   branches: Sequence[core.ClosedJaxpr], **params: Any) -> list[ir.Value]:
    # EXERCISE 8.6 (cond-case): one region per branch, each lowering its jaxpr on the operands
    case_op = hlo.case(index, len(branches), [aval_to_ir_type(a) for a in ctx.avals_out])
    for region, branch in zip(case_op.regions, branches, strict=True):
        with ir.InsertionPoint(region.block):
            consts = mlir.ir_consts(branch.consts, [v.aval for v in branch.jaxpr.constvars])
            outs = mlir.jaxpr_subcomp(ctx.module_context, branch.jaxpr, consts, *args)
            hlo.return_(outs)
    return case_op.results
    # END EXERCISE
# --8<-- [end:cond]


register_lowering(cond_p, _cond_lowering)
