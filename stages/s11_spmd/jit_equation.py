"""A jit equation run eagerly whose jaxpr names a mesh: compiled for that mesh's devices.

JAX: pjit.py's `_pjit_call_impl`, which takes the device assignment from the shardings inside
the jaxpr. Under a transformation our jit binds stage 7's `jit_p` (pjit.py's wrapper falls back
to it), and `grad` or `vmap` of it, called outside any jit, runs that equation eagerly: stage 7's
impl would compile it for one device, where a shard_map or a constraint inside needs the mesh.
This module extends `jit_p`'s impl, the rule table's entry, for such equations.
"""

from __future__ import annotations

from typing import Any

from stages.s02_tracing import config, core
from stages.s07_caches import dispatch
from stages.s07_caches import pjit as s07_pjit
from stages.s07_caches.util import WeakrefCache

from .pjit import lower_sharded
from .pjit_checks import jaxpr_meshes

_mesh_equations = WeakrefCache("mesh equation", "the jit equation's closed jaxpr (by "
                               "identity), donated inputs, keep_unused", layer=False)
_one_device_impl = s07_pjit.jit_p.impl


def _pjit_call_impl(*args: Any, jaxpr: core.ClosedJaxpr, **params: Any) -> list[Any]:
    """Compiled for the mesh its jaxpr names (cached on the jaxpr); any other on one device."""
    if dispatch.in_compiled_program() or config.disable_jit.value or \
            not jaxpr_meshes(jaxpr.jaxpr):
        return _one_device_impl(*args, jaxpr=jaxpr, **params)
    donated, keep_unused = params["donated_invars"], params["keep_unused"]
    executable = _mesh_equations.get_or_compute(jaxpr, (donated, keep_unused), lambda: (
        lower_sharded(jaxpr, params["name"], [None] * len(jaxpr.in_avals),
                      [None] * len(jaxpr.out_avals), donated, keep_unused).compile()))
    return executable.call(*args)


s07_pjit.jit_p.def_impl(_pjit_call_impl)
