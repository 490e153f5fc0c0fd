"""Stage 8: lowering. One StableHLO rule per primitive; modules that read like JAX's.

JAX: jax/_src/interpreters/mlir.py and the `mlir.register_lowering` calls across jax/_src/lax.
"""

from . import (
    asm_printer,
    attributes,
    calls,
    conditionals,
    elementwise,
    hlo,
    ir,
    loops,
    mlir,
    module,
    reductions,
    structural,
)
from .mlir import (
    LoweringRuleContext,
    call_primitive_lowering,
    lower_fun,
    lowering_rules,
    platform_specific_lowerings,
    register_lowering,
)
from .module import lower, lower_jaxpr

__all__ = [
    "LoweringRuleContext",
    "asm_printer",
    "attributes",
    "call_primitive_lowering",
    "calls",
    "conditionals",
    "elementwise",
    "hlo",
    "ir",
    "loops",
    "lower",
    "lower_fun",
    "lower_jaxpr",
    "lowering_rules",
    "mlir",
    "module",
    "platform_specific_lowerings",
    "reductions",
    "register_lowering",
    "structural",
]
