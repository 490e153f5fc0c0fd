"""Stage 5: vmap. Batching rules, in_axes/out_axes over pytrees, jacfwd, jacrev, hessian.

Reading path (the lesson, in order):
  1. batching.py  BatchTracer, BatchTrace, the rule helpers, batching a function or a jaxpr
  2. api.py       vmap over pytrees (in_axes, out_axes, the axis size), jacfwd, jacrev, hessian

Beside it:
  batching_rules.py  a batching rule for every stage-2 primitive (read `_dot_general_batch_rule`)
  gather_batching.py gather and scatter, and dynamic slices with batched starts as them
  parallel.py        collectives over named axes: psum, pmean, all_gather, ppermute, axis_index..
  parallel_rules.py  their batching, jvp and transpose rules (read `_batched_reduction_collective`)
  ad_batching.py     batching stage 4's primitives: add_any, custom_jvp/custom_vjp, checkpoint
  _jax_compat.py     what exists only to print exactly as JAX does

JAX: jax/_src/interpreters/batching.py and the vmap/jacobian parts of jax/_src/api.py.
"""

from . import (
    ad_batching,
    batching,
    batching_rules,
    gather_batching,
    parallel,
    parallel_rules,
)
from .api import hessian, jacfwd, jacrev, vmap
from .batching import BatchTrace, BatchTracer, not_mapped, primitive_batchers
from .parallel import (
    all_gather,
    all_to_all,
    axis_index,
    axis_size,
    pmax,
    pmean,
    pmin,
    ppermute,
    psum,
    psum_scatter,
)

__all__ = [
    "BatchTrace",
    "BatchTracer",
    "ad_batching",
    "all_gather",
    "all_to_all",
    "axis_index",
    "axis_size",
    "batching",
    "batching_rules",
    "gather_batching",
    "hessian",
    "jacfwd",
    "jacrev",
    "not_mapped",
    "parallel",
    "parallel_rules",
    "pmax",
    "pmean",
    "pmin",
    "ppermute",
    "primitive_batchers",
    "psum",
    "psum_scatter",
    "vmap",
]
