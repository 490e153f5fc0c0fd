"""jax.lax as the system sees it: stage 2's primitives, stage 4's stop_gradient, stage 5's
collectives, stage 6's control flow, stage 11's sharding constraint and erf_inv (special.py),
under one name as in JAX."""

from stages.s02_tracing.lax import *  # noqa: F403
from stages.s02_tracing.lax import __all__ as _stage2_all
from stages.s04_autodiff import stop_gradient
from stages.s05_vmap.parallel import (
    all_gather,
    all_to_all,
    axis_index,
    pcast,
    pmax,
    pmean,
    pmin,
    ppermute,
    psum,
    psum_scatter,
)
from stages.s06_control_flow import cond, fori_loop, map, scan, switch, while_loop
from stages.s11_spmd import with_sharding_constraint

from .special import erf_inv

__all__ = [*_stage2_all, "all_gather", "all_to_all", "axis_index", "cond", "erf_inv",
           "fori_loop", "map", "pcast", "pmax", "pmean", "pmin", "ppermute", "psum",
           "psum_scatter", "scan", "stop_gradient", "switch", "while_loop",
           "with_sharding_constraint"]
