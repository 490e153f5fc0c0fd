"""The errors a learner meets when Python asks a tracer for a concrete value, or a tracer escapes.

JAX: jax/_src/errors.py (the classes) and jax/_src/core.py (`concretization_function_error`,
`escaped_tracer_error`, the `check_*_conversion` shape checks, which core.py re-exports, and
`canonicalize_shape`, which ShapedArray calls). The messages are JAX's; its advice on what to do
instead lives in the docstrings on its errors page.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

_ERROR_PAGE = "https://docs.jax.dev/en/latest/errors.html"


class JAXTypeError(TypeError):
    """A TypeError whose message ends with a link to its entry on JAX's errors page."""

    # JAX: _JAXErrorMixin appends the same "See ...#jax.errors.<Class>" line.
    def __init__(self, message: str):
        name = type(self).__name__
        super().__init__(f"{message}\nSee {_ERROR_PAGE}#jax.errors.{name}")


class ConcretizationTypeError(JAXTypeError):
    """A tracer was used where Python needs a concrete value (`int(x)`, `float(x)`, ...)."""

    def __init__(self, tracer: Any, context: str = ""):
        super().__init__(
            "Abstract tracer value encountered where concrete value is expected: "
            f"{tracer._error_repr()}\n{context}{tracer._origin_msg()}\n"
        )


class TracerBoolConversionError(ConcretizationTypeError):
    """`bool(tracer)`: usually a Python `if` on a traced value."""

    def __init__(self, tracer: Any):
        # Skips ConcretizationTypeError.__init__ to use its own first line, as JAX does.
        JAXTypeError.__init__(
            self,
            f"Attempted boolean conversion of {tracer._error_repr()}."
            f"{tracer._origin_msg()}",
        )


class TracerIntegerConversionError(JAXTypeError):
    """`tracer.__index__()`: a traced value used as a Python index or size."""

    def __init__(self, tracer: Any):
        super().__init__(
            f"The __index__() method was called on {tracer._error_repr()}"
            f"{tracer._origin_msg()}"
        )


class TracerArrayConversionError(JAXTypeError):
    """`np.asarray(tracer)`: numpy asked a tracer for its data."""

    def __init__(self, tracer: Any):
        super().__init__(
            "The numpy.ndarray conversion method __array__() was called on "
            f"{tracer._error_repr()}{tracer._origin_msg()}"
        )


class UnexpectedTracerError(JAXTypeError):
    """A tracer outlived its trace (stored in a global, returned through a side channel)."""

    def __init__(self, msg: str):
        super().__init__(msg)


def concretization_function_error(fun: Callable, suggest_astype: bool = False) -> Callable:
    """The method an aval installs as `_bool`, `_int`, ...: always raises JAX's error class."""
    fname = getattr(fun, "__name__", fun)
    context = f"The problem arose with the `{fname}` function. "
    if suggest_astype:
        context += (
            "If trying to convert the data type of a value, "
            f"try using `x.astype({fname})` or `jnp.array(x, {fname})` instead."
        )

    def error(self, tracer):
        if fun is bool:
            raise TracerBoolConversionError(tracer)
        if fun in (hex, oct, operator.index):
            raise TracerIntegerConversionError(tracer)
        raise ConcretizationTypeError(tracer, context)

    return error


def escaped_tracer_error(tracer: Any) -> UnexpectedTracerError:
    """The error for a tracer used after its trace ended (bind checks every operand)."""
    msg = ("Encountered an unexpected tracer. A function transformed by JAX had a side effect, "
           "allowing for a reference to an intermediate value with type "
           f"{tracer.aval.str_short()} wrapped in a {type(tracer).__name__} to escape the scope "
           "of the transformation.\nJAX transformations require that functions explicitly "
           "return their outputs, and disallow saving intermediate values to global state.")
    # a staging trace knows what it was tracing
    dbg = getattr(getattr(tracer._trace, "frame", None), "debug_info", None)
    if dbg is not None:
        msg += (f"\nThe function being traced when the value leaked was {dbg.func_src_info} "
                f"traced for {dbg.traced_for}.")
    # JAX then shows where the value was created; our tracers do not record it.
    msg += ("\nTo catch the leak earlier, try setting the environment variable "
            "JAX_CHECK_TRACER_LEAKS or using the `jax.checking_leaks` context manager.")
    return UnexpectedTracerError(msg)


# The checks a tracer makes before asking its aval: plain shape errors, as numpy gives.
def check_scalar_conversion(arr: Any) -> None:
    """int(), float() and complex() need a rank-0 array (tracer or not)."""
    if arr.ndim > 0:
        raise TypeError(
            f"Only scalar arrays can be converted to Python scalars; got arr.ndim={arr.ndim}"
        )


def check_integer_conversion(arr: Any) -> None:
    """Indexing with an array (`__index__`) needs a rank-0 integer array."""
    if not (arr.shape == () and np.issubdtype(arr.dtype, np.integer)):
        raise TypeError("Only integer scalar arrays can be converted to a scalar index.")


def check_bool_conversion(arr: Any) -> None:
    """bool() needs exactly one element, as in numpy."""
    if arr.size == 0:
        raise ValueError(
            "The truth value of an empty array is ambiguous. Use `array.size > 0` to check "
            "that an array is not empty."
        )
    if arr.size > 1:
        raise ValueError(
            "The truth value of an array with more than one element is ambiguous. "
            "Use a.any() or a.all()"
        )


def aval_mismatch_extra(a: Any, b: Any) -> str:
    """`, so the dtypes do not match` and friends, for messages comparing two avals
    (JAX: core.aval_mismatch_extra)."""
    mismatches = []
    if a.dtype != b.dtype:
        mismatches.append("the dtypes do not match")
    if a.shape != b.shape:
        mismatches.append("the shapes do not match")
    if getattr(a, "vma", None) != getattr(b, "vma", None):
        mismatches.append("the manual axis types do not match")
    if not mismatches:
        return ""
    if len(mismatches) == 1:
        return ", so " + mismatches[0]
    return ", so " + ", ".join(mismatches[:-1]) + ", and " + mismatches[-1]


def invalid_shape_error(shape: Any) -> TypeError:
    return TypeError("Shapes must be 1D sequences of concrete values of integer type, "
                     f"got {shape}.")


def canonicalize_shape(shape: Any) -> tuple[int, ...]:
    """A shape as a tuple of ints (an int is a 1-d shape); a float, None or tracer among the
    sizes is refused with JAX's TypeError (JAX: core.canonicalize_shape)."""
    if isinstance(shape, int):
        shape = (shape,)
    try:
        return tuple(map(operator.index, shape))
    except TypeError:
        raise invalid_shape_error(shape) from None
