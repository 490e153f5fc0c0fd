"""jax.lax as the system sees it: stage 2's primitives, stage 4's stop_gradient, stage 6's
control flow, and erf_inv (special.py), under one name as in JAX."""

from stages.s02_tracing.lax import *  # noqa: F403
from stages.s02_tracing.lax import __all__ as _stage2_all
from stages.s04_autodiff import stop_gradient
from stages.s06_control_flow import cond, fori_loop, map, scan, switch, while_loop

from .special import erf_inv

__all__ = [*_stage2_all, "cond", "erf_inv", "fori_loop", "map", "scan", "stop_gradient",
           "switch", "while_loop"]
