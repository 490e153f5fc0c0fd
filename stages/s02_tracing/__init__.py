"""Stage 2: tracing to jaxprs. Primitives, the trace context, make_jaxpr, eval_jaxpr, lax, numpy.

JAX: jax/_src/core.py (our core.py, jaxpr.py, pretty_printer.py), interpreters/partial_eval.py,
linear_util.py, api_util.py, lax/lax.py, numpy/. Importing the stage imports `numpy`, which
installs the tracer operators.
"""

from . import core, lax, linear_util, numpy, partial_eval
from .api import make_jaxpr
from .core import Primitive, ShapedArray
from .errors import (
    ConcretizationTypeError,
    TracerArrayConversionError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
    UnexpectedTracerError,
)
from .jaxpr import ClosedJaxpr, Jaxpr, eval_jaxpr

__all__ = [
    "ClosedJaxpr",
    "ConcretizationTypeError",
    "Jaxpr",
    "Primitive",
    "ShapedArray",
    "TracerArrayConversionError",
    "TracerBoolConversionError",
    "TracerIntegerConversionError",
    "UnexpectedTracerError",
    "core",
    "eval_jaxpr",
    "lax",
    "linear_util",
    "make_jaxpr",
    "numpy",
    "partial_eval",
]
