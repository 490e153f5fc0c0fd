"""Stage 2: tracing to jaxprs. Primitives, the trace context, make_jaxpr, eval_jaxpr, lax, numpy.

Reading path (the lesson, in order):
  1. core.py          abstract values, primitives, traces and tracers, the tracing context
  2. jaxpr.py         the jaxpr IR (vars, literals, equations) and eval_jaxpr
  3. partial_eval.py  DynamicJaxprTrace: run a function on tracers, record a jaxpr
  4. api.py           make_jaxpr
  5. linear_util.py   WrappedFun, transformations, and the cache of traced calls

Beside it (read when a step needs it):
  array.py          the eager Array: what a primitive returns outside any transformation
  api_util.py       flatten_fun and the other transformations every API function uses
  pretty_printer.py the jaxpr printer, in JAX's format
  dtypes.py         canonical dtypes, weak types, the promotion lattice
  eval_shape.py     eval_shape and ShapeDtypeStruct: a function's output types, never run
  flatten_util.py   ravel_pytree: a pytree of arrays as one flat vector
  errors.py         the errors a tracer raises when Python asks it for a value
  axis_env.py       the named axes in scope (for stage 5's collectives) and their sizes
  vma.py            varying manual axes: the types a shard_map body gives values (stage 11)
  config.py         configuration flags (jax_disable_jit, ...); stage 2 reads none, jit does
  source_info_util.py  where in the user's code: the innermost frame outside the stages
  lax/              the primitives (sin, add, dot_general, ...): rules and wrappers
  numpy/            a small jax.numpy over lax, and the tracer operators
  _jax_compat.py    what exists only to print exactly as JAX does

JAX: jax/_src/core.py (our core.py, jaxpr.py, pretty_printer.py), interpreters/partial_eval.py,
linear_util.py, api_util.py, lax/, numpy/. Importing the stage imports `numpy`, which installs
the tracer operators.
"""

from . import core, flatten_util, lax, linear_util, numpy, partial_eval
from .api import make_jaxpr
from .array import Array
from .core import Primitive, ShapedArray
from .errors import (
    ConcretizationTypeError,
    TracerArrayConversionError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
    UnexpectedTracerError,
)
from .eval_shape import ShapeDtypeStruct, eval_shape
from .flatten_util import ravel_pytree
from .jaxpr import ClosedJaxpr, Jaxpr, eval_jaxpr

__all__ = [
    "Array",
    "ClosedJaxpr",
    "ConcretizationTypeError",
    "Jaxpr",
    "Primitive",
    "ShapeDtypeStruct",
    "ShapedArray",
    "TracerArrayConversionError",
    "TracerBoolConversionError",
    "TracerIntegerConversionError",
    "UnexpectedTracerError",
    "core",
    "eval_jaxpr",
    "eval_shape",
    "flatten_util",
    "lax",
    "linear_util",
    "make_jaxpr",
    "numpy",
    "partial_eval",
    "ravel_pytree",
]
