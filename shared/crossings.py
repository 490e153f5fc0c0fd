"""Record the calls a function makes across stage 9's seam, and the timers each one stamped.

Course tooling, not course content: stage 9's page draws its sequence diagram from such a
record and its demo prints one. The client's methods are wrapped on the instance while the
function runs; each call is noted with the metrics (stage 9's metrics.py) that got a sample
during it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, NamedTuple

from stages.s09_pjrt import metrics

SEAM_METHODS = ("transfer_to_device", "transfer_from_device", "copy_to_device", "compile",
                "execute_computation", "execute_replicated")

# the jaxlib call under each method (pjrt_computation_client.py)
PJRT_CALLS = {
    "transfer_to_device": "xc.batched_device_put",
    "transfer_from_device": "np.asarray(buffer)",
    "copy_to_device": "xc.batched_device_put",
    "compile": "client.compile_and_load",
    "execute_computation": "executable.execute_sharded",
    "execute_replicated": "executable.execute_sharded",
}


class Crossing(NamedTuple):
    method: str  # the ComputationClient method called
    stamped: tuple[str, ...]  # the metrics that got a sample during the call
    seconds: float


def record_crossings(client: Any, fn: Callable[[], Any]) -> tuple[Any, list[Crossing]]:
    """Run `fn()`; return its result and every seam call it made, in order."""
    log: list[Crossing] = []

    def wrap(name: str) -> Callable:
        method = getattr(client, name)

        def recorded(*args: Any, **kwargs: Any) -> Any:
            before = {n: m.count for n, m in metrics.all_metrics().items()}
            start = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                seconds = time.perf_counter() - start
                after = metrics.all_metrics()
                stamped = tuple(n for n, m in sorted(after.items())
                                if m.count > before.get(n, 0) and n.endswith("Time"))
                log.append(Crossing(name, stamped, seconds))

        return recorded

    for name in SEAM_METHODS:
        setattr(client, name, wrap(name))
    try:
        result = fn()
    finally:
        for name in SEAM_METHODS:
            delattr(client, name)  # the class's methods again
    return result, log
