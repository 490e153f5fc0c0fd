"""jit's cache hit in one function: the Python twin of the fast path JAX runs in C++.

JAX: jaxlib's pjit.cc (`PjitFunction::Call`) and jax/_src/pjit.py (`_cpp_pjit`, whose
`cache_miss` hands C++ the `fastpath_data` of pxla.py's `MeshExecutableFastpathData`). A
`jax.jit` call whose signature is cached never enters Python: C++ computes the signature, finds
the executable and runs it. Stage 7's call walks the same steps as layers a reader can follow
(`_signature`, the signature table's `hit`, `MeshExecutable.unsafe_call`, `PjRtExecutable.call`,
the client's `execute_computation`), and each layer is a Python call of its own: together they
cost more than PJRT's execute itself (`make bench`, stage 9).

This function is those layers folded into one for the common call, as JAX's C++ folds them:
positional arguments only, each a device array, no static arguments, and every committed one the
program takes already on the executable's device. It builds the key `_signature` builds for such
a call, so it finds what the layers stored; it counts the hit in the signature layer before it
runs, as `hit` does; it runs through the seam's `execute_computation`, so every call stamps
ExecuteTime and CreateDataHandles as before. Any other call returns MISSING, uncounted, and
takes the layers, which stay the specification: the tests run both and compare. `use_pjrt()`
installs it (`stages.s07_caches.api_util.set_fastpath`); jit never offers it a call with
keywords.
"""

from __future__ import annotations

from typing import Any

from stages.s01_pytrees import tree_unflatten
from stages.s02_tracing import config, core
from stages.s07_caches.api_util import leaf_args_treedef
from stages.s07_caches.pjit import JitInfo, count_signature_hit
from stages.s07_caches.util import MISSING, Stats

from .array import ArrayImpl
from .backend import PjRtExecutable


# --8<-- [start:fastpath]
def pjit_fastpath(args: tuple, jit_info: JitInfo, table: Any, stats: Stats) -> Any:
    """The outputs of a cached call of the common kind, or MISSING: take the layers."""
    # under a trace a call is staged, not run. Static arguments and disable_jit need no test:
    # a key without the statics, or with disable_jit on in the trace context, finds nothing
    if table is None or not isinstance(core.trace_ctx.trace, core.EvalTrace):
        return MISSING
    avals, committed = [], False
    for x in args:  # the signature: each argument's aval (shape, dtype, weak type)
        if type(x) is not ArrayImpl:
            return MISSING
        avals.append(x.aval)
        committed = committed or x.committed
    key = (jit_info, leaf_args_treedef(len(args)), tuple(avals), (), config.trace_context())
    entry = table.entries.get(key)  # the signature table stage 7 fills on a miss
    executable = None if entry is None else entry.executable.xla_executable
    if type(executable) is not PjRtExecutable or executable.float0_outs:
        return MISSING  # another backend's program; a float0 result (numpy zeros): the layers
    device, client, kept = executable.device, executable.client, executable.kept_var_idx
    if committed:  # the committed arguments the program takes decide where it runs
        on = [args[i].device_name for i in kept if args[i].committed]
        if any(name != device for name in on):
            return MISSING
        committed = bool(on)  # and whether its outputs are committed
    count_signature_hit(stats)  # a hit from here on, counted before it runs, as the layers do
    arguments = [args[i].data_on(device) for i in kept]  # a deleted or donated array raises
    outs = client.execute_computation(executable.computation, arguments, device)
    if entry.out_is_leaf:  # one array out: no list, no tree (a third of a microsecond)
        return ArrayImpl(executable.out_avals[0], outs[0], client, committed)
    outs = [ArrayImpl(aval, data, client, committed)  # as PjRtExecutable.call wraps them
            for aval, data in zip(executable.out_avals, outs)]  # noqa: B905 (one per output)
    return tree_unflatten(entry.out_tree, outs)
# --8<-- [end:fastpath]
