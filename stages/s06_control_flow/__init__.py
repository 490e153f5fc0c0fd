"""Stage 6: control flow as primitives. cond, switch, while_loop, fori_loop, scan, map.

JAX: jax/_src/lax/control_flow/ (conditionals.py, loops.py, common.py). Each construct traces
its bodies once into closed jaxprs hung on one equation; importing the stage registers the
rules of cond, while and scan in the tables of stages 3-5.

Where things live:
  conditionals.py     cond, switch, cond_p: impl, abstract eval, branch checks, batching rule
  loops.py            scan, while_loop, fori_loop, map; scan_p and while_p: impl, abstract eval
  loops_batching.py   batching rules of scan and while
  conditionals_pe.py  cond's partial eval, partial_eval_jaxpr_custom and DCE rules
  loops_pe.py         the same three rules for scan and while
  ad_rules.py         jvp rules of cond, scan, while; transpose rules of cond and scan (and
                      while's refusal)
  common.py           body tracing, const hoisting, the carry-type check, list helpers

switch uses lax.clamp (stage 2) and cond's batching rule uses stop_gradient (stage 4's ad_util).
"""

from . import (
    ad_rules,
    common,
    conditionals,
    conditionals_pe,
    loops,
    loops_batching,
    loops_pe,
)
from .conditionals import cond, cond_p, switch
from .loops import fori_loop, map, scan, scan_p, while_loop, while_p

__all__ = [
    "ad_rules",
    "common",
    "cond",
    "cond_p",
    "conditionals",
    "conditionals_pe",
    "fori_loop",
    "loops",
    "loops_batching",
    "loops_pe",
    "map",
    "scan",
    "scan_p",
    "switch",
    "while_loop",
    "while_p",
]
