"""Stage 8: lowering. One StableHLO rule per primitive; modules that read like JAX's.

Reading path (the lesson, in order):
  1. mlir.py          the rule table, register_lowering, jaxpr_subcomp (the walk), constants,
                      calls of private functions, lower_fun
  2. elementwise.py   the simplest rules: one op each, rank-0 operands broadcast, convert's bool
  3. module.py        lower_jaxpr: the module around @main (unused inputs, donation, result names)
  4. conditionals.py  cond as stablehlo.case
  5. loops.py         while as stablehlo.while, and scan re-expressed as a while over a counter
  6. ir.py            the IR the rules build: values, operations, regions, functions, the module
  7. asm_printer.py   how MLIR names the values (%0, %cst, %arg0, %iterArg_1) and prints

Beside it (read when a step needs it):
  hlo.py            one builder per StableHLO op, each with its printed form
  elementwise_complex.py  sin, cos, max, min, whose complex case is a small program; square
  structural.py     the rules of shapes, slices, split, pad, iota, empty2, dot_general
  reductions.py     the rules of reduce_sum/max/min, argmax/argmin, cumsum
  slicing.py        the rules of gather, the scatters and sort
  cumulative.py     the rules of cumprod/cummax/cummin/cumlogsumexp and reduce_prod
  calls.py          jit (a call of a private function), custom_jvp/custom_vjp/checkpoint
                    (inline) and autodiff's own primitives
  attributes.py     how MLIR writes a constant's digits: kept apart, only a printer's quirk
  sharding_in_types.py  the hook stage 11 fills: results pinned to the shardings in their types
  backend.py        jit's lowering step (lower_to_stablehlo), and stage 7's interpreting
                    backend with that step in front, "stablehlo", chosen by jax_platforms

JAX: jax/_src/interpreters/mlir.py and the `mlir.register_lowering` calls across jax/_src/lax.
Importing the stage registers a rule for every primitive of stages 2-7, and the "stablehlo"
backend without making it jit's default. Stage code writes text only: compiling it with jaxlib
is stage 9's (the tests use shared/xla_runner.py).
"""

from . import (
    asm_printer,
    attributes,
    backend,
    calls,
    conditionals,
    cumulative,
    elementwise,
    elementwise_complex,
    hlo,
    ir,
    loops,
    mlir,
    module,
    reductions,
    slicing,
    structural,
)
from .backend import StableHloBackend, StableHloProgram, lower_to_stablehlo
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
    "StableHloBackend",
    "StableHloProgram",
    "asm_printer",
    "attributes",
    "backend",
    "call_primitive_lowering",
    "calls",
    "conditionals",
    "cumulative",
    "elementwise",
    "elementwise_complex",
    "hlo",
    "ir",
    "loops",
    "lower",
    "lower_fun",
    "lower_jaxpr",
    "lower_to_stablehlo",
    "lowering_rules",
    "mlir",
    "module",
    "platform_specific_lowerings",
    "reductions",
    "register_lowering",
    "slicing",
    "structural",
]
