"""Stage 6: control flow as primitives. cond, switch, while_loop, fori_loop, scan, map.

Reading path (the lesson, in order):
  1. conditionals.py  cond and switch: trace every branch once, bind one cond equation
  2. cond_rules.py    cond_p and its rule in every table: impl, jvp, transpose, partial eval,
                      DCE, batching
  3. loops.py         scan, while_loop, fori_loop, map: trace the body once, check the carry
  4. scan_rules.py    scan_p and its rule in every table; the carry fixed points, residual
                      stacking, the transpose that runs backwards

Beside it:
  scan_residuals.py  where a split scan's residuals come from: forwarded, hoisted, stacked
  while_rules.py     while_p and its rules: scan's ideas without a trip count
  eager.py           under disable_jit, cond, switch, scan and while_loop run as plain Python
  platforms.py       a branch per platform, chosen for the one we run on ("cpu")
  common.py          what the three share: body tracing, const hoisting, the carry check and
                     weak-type promotion, the fixed point, jaxpr surgery
  util.py            list helpers, type matching, pytree structure differences

JAX: jax/_src/lax/control_flow/ (conditionals.py, loops.py, common.py). Importing the stage
registers the rules of cond, while and scan in the tables of stages 3-5. switch uses lax.clamp
(stage 2) and cond's batching rule uses stop_gradient (stage 4's ad_util).
"""

from . import (
    common,
    cond_rules,
    conditionals,
    eager,
    loops,
    platforms,
    scan_residuals,
    scan_rules,
    util,
    while_rules,
)
from .cond_rules import cond_p
from .conditionals import cond, switch
from .loops import fori_loop, map, scan, while_loop
from .platforms import platform_dependent
from .scan_rules import scan_p
from .while_rules import while_p

__all__ = [
    "common",
    "cond",
    "cond_p",
    "cond_rules",
    "conditionals",
    "eager",
    "fori_loop",
    "loops",
    "map",
    "platform_dependent",
    "platforms",
    "scan",
    "scan_p",
    "scan_residuals",
    "scan_rules",
    "switch",
    "util",
    "while_loop",
    "while_p",
    "while_rules",
]
