"""Stage 3: partial evaluation. Known/unknown split, residuals, DCE, remat policies.

Reading path (the lesson, in order):
  1. partial_eval.py         PartialVal, JaxprTrace: known work runs, unknown work is recorded
  2. dce.py                  dce_jaxpr: keep what a used output depends on
  3. partial_eval_custom.py  the equation-level split a remat policy steers
  4. ad_checkpoint.py        the remat policies: which known values to save

JAX: jax/_src/interpreters/partial_eval.py (the JaxprTrace half) and jax/_src/ad_checkpoint.py.
"""

from . import ad_checkpoint, partial_eval
from .ad_checkpoint import (
    checkpoint_dots,
    dots_saveable,
    dots_with_no_batch_dims_saveable,
    everything_saveable,
    nothing_saveable,
    save_from_both_policies,
)
from .partial_eval import (
    JaxprTrace,
    JaxprTracer,
    PartialVal,
    custom_partial_eval_rules,
    dce_jaxpr,
    partial_eval_jaxpr_custom,
    partial_eval_jaxpr_custom_rules,
    partial_eval_jaxpr_nounits,
    trace_to_jaxpr_nounits,
)

__all__ = [
    "JaxprTrace",
    "JaxprTracer",
    "PartialVal",
    "ad_checkpoint",
    "checkpoint_dots",
    "custom_partial_eval_rules",
    "dce_jaxpr",
    "dots_saveable",
    "dots_with_no_batch_dims_saveable",
    "everything_saveable",
    "nothing_saveable",
    "partial_eval",
    "partial_eval_jaxpr_custom",
    "partial_eval_jaxpr_custom_rules",
    "partial_eval_jaxpr_nounits",
    "save_from_both_policies",
    "trace_to_jaxpr_nounits",
]
