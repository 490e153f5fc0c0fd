"""Stage 7: jit and its caches. A jitted call walks six caches, each with its own key.

JAX: jax/_src/pjit.py, dispatch.py, interpreters/pxla.py, compiler.py, compilation_cache.py,
cache_key.py, stages.py. Importing the stage registers the jit primitive's rules in the tables
of stages 2-5 and the interpreting backend.

Reading path (the lesson, in order):
  1. pjit.py              jit: the signature fast path (1), the trace cache (2), the jit primitive
  2. pxla.py              the lowering cache (3) and the in-memory executable cache (4)
  3. compiler.py          compile, or read the persistent cache (5) first
  4. cache_key.py         the persistent cache key: one SHA-256 over named ingredients, in order
  5. compilation_cache.py the entries on disk: atomic writes, checksums, LRU eviction
  6. dispatch.py          stage timers and log lines; op-by-op dispatch, the per-primitive cache (6)

Where the rest lives:
  util.py              the cache objects: a lock, hit/miss counters, single-flight misses
  explain.py           why a trace cache missed, in JAX's words (jax_explain_cache_misses)
  pjit_rules.py        jit_p's jvp, partial eval, DCE, transpose, batching and print rules
  stages.py            the AOT stations: Traced, Lowered, Compiled
  xla_bridge.py        the backend interface and registry later stages plug into
  interpreter.py       the interpreting backend; serialization.py, its documented format
  api.py, api_util.py  disable_jit, clear_caches, cache_report; static and donated arguments
  monitoring.py        the event bus the stage timers publish on
  sharding_impls.py    UNSPECIFIED, the sharding of every input and output here
"""

from . import (
    api,
    api_util,
    cache_key,
    compilation_cache,
    compiler,
    dispatch,
    explain,
    interpreter,
    monitoring,
    pjit,
    pjit_rules,
    pxla,
    serialization,
    stages,
    util,
    xla_bridge,
)
from .api import cache_report, clear_caches, disable_jit
from .api_util import ShapeDtypeStruct
from .dispatch import apply_primitive, op_by_op
from .pjit import JitWrapped, jit, jit_p
from .stages import Compiled, Lowered, Traced

__all__ = [
    "Compiled",
    "JitWrapped",
    "Lowered",
    "ShapeDtypeStruct",
    "Traced",
    "api",
    "api_util",
    "apply_primitive",
    "cache_key",
    "cache_report",
    "clear_caches",
    "compilation_cache",
    "compiler",
    "disable_jit",
    "dispatch",
    "explain",
    "interpreter",
    "jit",
    "jit_p",
    "monitoring",
    "op_by_op",
    "pjit",
    "pjit_rules",
    "pxla",
    "serialization",
    "stages",
    "util",
    "xla_bridge",
]
