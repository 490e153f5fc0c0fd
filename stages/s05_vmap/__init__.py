"""Stage 5: vmap. Batching rules, in_axes/out_axes over pytrees, jacfwd, jacrev, hessian.

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
