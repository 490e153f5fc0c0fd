"""Stage 5: vmap. Batching rules, in_axes/out_axes over pytrees, jacfwd, jacrev, hessian.

Reading path (the lesson, in order):
  1. batching.py  BatchTracer, BatchTrace, the rule helpers, batching a function or a jaxpr
  2. api.py       vmap over pytrees (in_axes, out_axes, the axis size), jacfwd, jacrev, hessian

Beside it:
  batching_rules.py  a batching rule for every stage-2 primitive (read `_dot_general_batch_rule`)
  ad_batching.py     batching stage 4's primitives: add_any, custom_jvp/custom_vjp, checkpoint
  _jax_compat.py     what exists only to print exactly as JAX does

JAX: jax/_src/interpreters/batching.py and the vmap/jacobian parts of jax/_src/api.py.
"""

from . import ad_batching, batching, batching_rules
from .api import hessian, jacfwd, jacrev, vmap
from .batching import BatchTrace, BatchTracer, not_mapped, primitive_batchers

__all__ = [
    "BatchTrace",
    "BatchTracer",
    "ad_batching",
    "batching",
    "batching_rules",
    "hessian",
    "jacfwd",
    "jacrev",
    "not_mapped",
    "primitive_batchers",
    "vmap",
]
