"""What this stage does only so that its printed text matches JAX 0.10.2's exactly.

None of it is part of the mechanism: each function is named where it is used, so a reader can
skip it. The tests compare our printed jaxprs with JAX's character for character.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from stages.s02_tracing import core, source_info_util


def numpy_ints(dims: Iterable[int]) -> tuple[np.int64, ...]:
    """Axis numbers as numpy int64s: JAX's batching rules compute them with numpy
    (`np.delete`, `np.where`, `np.add`), and a jaxpr prints them as `np.int64(1)`, not `1`."""
    return tuple(np.int64(d) for d in dims)


def vmap_tracer_repr(tracer: Any) -> str:
    """A batch tracer prints as JAX's does: `VmapTracer(aval=f32[], batched=f32[3])` (ours is
    BatchTracer, JAX's class name too)."""
    return f"VmapTracer(aval={tracer.aval}, batched={core.get_aval(tracer.val)})"


def batch_tracer_origin_msg(tracer: Any) -> str:
    """What JAX appends to a BatchTracer's conversion errors: where the tracer was made (the
    innermost user frame when vmap or a primitive made it; JAX records a traceback there)."""
    if tracer.source_info is None:
        return ""
    return (f"\nThis BatchTracer with object id {id(tracer)} was created on line:"
            f"\n  {source_info_util.summarize(tracer.source_info)}")
