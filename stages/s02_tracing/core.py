"""The core of tracing: abstract values, primitives, traces and tracers, the tracing context.

JAX: jax/_src/core.py. Tracing is "stackless" as in JAX 0.10.2: `Primitive.bind` hands the
operation to the trace held in the tracing context (`trace_ctx.trace`); each tracer knows its
own trace; there are no integer levels. JAX's core.py also holds the jaxpr IR and its printer;
ours are in jaxpr.py and pretty_printer.py, re-exported here (`core.Jaxpr`, `core.pp_eqn_rules`).
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import dtypes, errors
from .array import Array, to_array, to_numpy
from .axis_env import dims_str, vma_axes, vma_str
from .dtypes import canonicalize_value, is_literalable  # noqa: F401  (re-exported)
from .errors import (  # noqa: F401  (re-exported: JAX's core.py imports them too)
    ConcretizationTypeError,
    TracerArrayConversionError,
    check_bool_conversion,
    check_integer_conversion,
    check_scalar_conversion,
    concretization_function_error,
    escaped_tracer_error,
)

# JAX: these live in jax/_src/core.py; ours in their own modules, re-exported here.
from .jaxpr import (  # noqa: F401
    Atom,
    ClosedJaxpr,
    DropVar,
    Jaxpr,
    JaxprEqn,
    JaxprTypeError,
    Literal,
    Var,
    check_jaxpr,
    eval_jaxpr,
    jaxpr_as_fun,
    new_jaxpr_eqn,
)
from .pretty_printer import (  # noqa: F401
    JaxprPpContext,
    JaxprPpSettings,
    default_pp_eqn,
    pp_eqn,
    pp_eqn_rules,
)

# ------------------------------------ abstract values ------------------------------------------


# --8<-- [start:shaped_array]
class ShapedArray:
    """What a tracer knows about its value: a shape, a dtype, and whether the dtype is weak.

    A weak type comes from a Python scalar: `x * 2.0` keeps x's dtype because 2.0 is weak.
    `vma`: the mesh axes it may vary along, in a shard_map with check_vma=True (vma.py).
    `sharding`: how it is split over a mesh's Explicit axes (stage 11), else None.
    """

    __slots__ = ("shape", "dtype", "weak_type", "vma", "sharding")
    array_abstraction_level = 1

    def __init__(self, shape: Sequence[int], dtype: Any, weak_type: bool = False, vma=frozenset(),
                 sharding: Any = None):
        self.shape = errors.canonicalize_shape(shape)  # JAX: core.canonicalize_shape
        self.dtype = np.dtype(dtype)
        self.weak_type = bool(weak_type)
        self.vma = vma if type(vma) is frozenset else frozenset(vma)
        self.sharding = sharding

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    def update(self, shape=None, dtype=None, weak_type=None, vma=None, sharding=None):
        """A copy with some fields replaced (a new shape drops a sharding given for the old)."""
        return ShapedArray(
            self.shape if shape is None else shape,
            self.dtype if dtype is None else dtype,
            self.weak_type if weak_type is None else weak_type,
            self.vma if vma is None else vma,
            sharding if sharding is not None or shape is not None else self.sharding)

    def strip_weak_type(self) -> ShapedArray:
        return self.update(weak_type=False) if self.weak_type else self

    def __eq__(self, other: object) -> bool:
        return (type(other) is ShapedArray and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type
                and self.vma == other.vma and self.sharding == other.sharding)

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.weak_type, self.vma, self.sharding))

    def str_short(self, short_dtypes: bool = False) -> str:
        """`float32[3,4]`, or with short dtypes `f32[3,4]` as jaxprs print binders; a value
        that varies along mesh axes adds them: `f32[2]{V:i}`, `f32[2]{V:(i,j)}`; a split
        dimension says along which: `f32[8@x,4]`."""
        dt = dtypes.short_dtype_name(self.dtype) if short_dtypes else dtypes.dtype_name(self.dtype)
        return f"{dt}[{dims_str(self.shape, self.sharding)}]{vma_str(self.vma)}"

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self.str_short()}{weak})"

    def __str__(self) -> str:
        return f"{'~' if self.weak_type else ''}{self.str_short()}"

    def _len(self, tracer):
        if not self.shape:
            raise TypeError("len() of unsized object")  # same as numpy's error
        return self.shape[0]

    # Tracer.__bool__ etc. land here: a shape and a dtype cannot answer "is it true?".
    _bool = concretization_function_error(bool)
    _int = concretization_function_error(int, True)
    _float = concretization_function_error(float, True)
    _complex = concretization_function_error(complex, True)
    _hex, _oct = concretization_function_error(hex), concretization_function_error(oct)
    _index = concretization_function_error(operator.index)
    # numpy/array_methods.py installs _add, _radd, ..., _getitem, _T; lax/slicing.py _iter
# --8<-- [end:shaped_array]


pytype_aval_mappings: dict[type, Callable[[Any], ShapedArray]] = {}  # later stages' array types
out_type_rules: list[Callable[..., Any]] = []  # later stages' types: rule(p, ins, outs, params)


def get_aval(x: Any) -> ShapedArray:
    """The abstract value of a tracer, an Array, a numpy array/scalar or a Python scalar (weak)."""
    if isinstance(x, (Tracer, Array)):
        return x.aval
    t = type(x)
    if t in pytype_aval_mappings:
        return pytype_aval_mappings[t](x)
    if t in (bool, int, float, complex):
        return ShapedArray((), dtypes.python_scalar_dtype(t, x), weak_type=t is not bool)
    if isinstance(x, (np.ndarray, np.generic)):
        dtype = dtypes.canonicalize_dtype(x.dtype)
        dtypes.check_valid_dtype(dtype)  # no strings or objects
        return ShapedArray(x.shape, dtype)
    if isinstance(x, (int, float, complex)):  # a subclass (an IntEnum): as its Python base
        return get_aval(next(b for b in t.__mro__ if b in (bool, int, float, complex))(x))
    raise TypeError(f"Argument '{x}' of type {type(x)} is not a valid JAX type")


typeof = get_aval  # JAX 0.10.2 calls it core.typeof; get_aval is the older name


# ---------------------------------------- primitives -------------------------------------------


# --8<-- [start:primitive]
class Primitive:
    """A named operation. Its rules live beside it (impl, abstract_eval) or in later tables."""

    multiple_results: bool = False
    call_primitive: bool = False

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name

    def bind(self, *args: Any, **params: Any) -> Any:
        """Apply the primitive: the current trace decides what that means."""
        if vma_axes() and len(args) > 1:  # inside shard_map(check_vma=True): vma.py
            from .vma import auto_insert_pvary  # vma.py imports this module: loaded late
            args = auto_insert_pvary(self, args, params)
        for arg in args:
            if isinstance(arg, Tracer) and not arg._trace.is_valid():
                raise escaped_tracer_error(arg)
        trace = trace_ctx.trace
        # rules run with the eval trace current: what they bind runs eagerly (JAX: the same)
        trace_ctx.set_trace(eval_trace)
        try:
            return self.bind_with_trace(trace, args, params)
        finally:
            trace_ctx.set_trace(trace)

    def bind_with_trace(self, trace: Trace, args: Sequence[Any], params: dict) -> Any:
        return trace.process_primitive(self, args, params)  # JAX passes the avals too

    def def_impl(self, impl: Callable) -> Callable:
        """impl(*numpy_arrays, **params) -> numpy array (or a list if multiple_results)."""
        self.impl = impl
        return impl

    def def_abstract_eval(self, abstract_eval: Callable) -> Callable:
        """abstract_eval(*avals, **params) -> ShapedArray (or a list if multiple_results)."""
        # JAX wraps the rule to also return effects; ours returns avals only. Ours wraps it to
        # give the outputs their varying axes inside shard_map(check_vma=True) and shardings.
        def with_types(*avals: Any, **params: Any) -> Any:
            out = abstract_eval(*avals, **params)
            if vma_axes():
                from .vma import with_out_vma
                out = with_out_vma(self, avals, out, params)
            for rule in out_type_rules:  # stage 11: shardings in types (sharding_in_types.py)
                out = rule(self, avals, out, params)
            return out
        self.abstract_eval = with_types
        return abstract_eval

    def impl(self, *args: Any, **params: Any) -> Any:
        raise NotImplementedError(f"Evaluation rule for '{self.name}' not implemented")

    def abstract_eval(self, *avals: Any, **params: Any) -> Any:
        raise NotImplementedError(f"Abstract evaluation for '{self.name}' not implemented")

    def get_bind_params(self, params: dict) -> dict:
        """The params to bind with when eval_jaxpr replays an equation (call primitives differ)."""
        return params
# --8<-- [end:primitive]


# ------------------------------------ traces and tracers ---------------------------------------


# --8<-- [start:trace]
class Trace:
    """An interpreter for primitives. Subclasses: EvalTrace, DynamicJaxprTrace, (later) JVPTrace."""

    def __init__(self):
        self._invalidated = False

    def process_primitive(self, primitive: Primitive, tracers: Sequence[Any], params: dict):
        raise NotImplementedError("must override")

    def invalidate(self) -> None:
        self._invalidated = True

    def is_valid(self) -> bool:
        return not self._invalidated

    __repr__ = lambda self: type(self).__name__  # noqa: E731


class EvalTrace(Trace):
    """The trace at the bottom: run the impl on numpy values; its results are eager Arrays."""

    def process_primitive(self, primitive, args, params):
        for arg in args:
            if isinstance(arg, Tracer):
                raise escaped_tracer_error(arg)
        # JAX's impl traces the op, then compiles it (dispatch.apply_primitive); ours types it
        # first too (an error names weak types: `integer_pow(~int32[], -3)`), then runs numpy
        avals = [get_aval(x) for x in args]
        has_impl = "impl" in vars(primitive) or type(primitive).impl is not Primitive.impl
        out_avals = primitive.abstract_eval(*avals, **params) if has_impl else None
        out = primitive.impl(*[to_numpy(x) for x in args], **params)  # no impl: it says so
        if primitive.multiple_results:
            return [to_array(x, a) for x, a in zip(out, out_avals, strict=True)]
        return to_array(out, out_avals)


eval_trace = EvalTrace()


class TracingContext(threading.local):
    """Which trace `bind` hands operations to. One per thread, the eval trace at first
    (JAX: core.TracingContext, over thread-local config state)."""

    def __init__(self):
        self.trace: Trace = eval_trace

    def set_trace(self, trace: Trace) -> None:
        self.trace = trace

    def is_top_level(self) -> bool:
        return self.trace is eval_trace


trace_ctx = TracingContext()


class set_current_trace:
    """Context manager: make `trace` current while the body runs (JAX:
    SetCurrentTraceContextManager, a class: cheaper than @contextmanager)."""

    def __init__(self, trace: Trace):
        self.trace = trace

    def __enter__(self) -> None:
        self.prev = trace_ctx.trace
        trace_ctx.set_trace(self.trace)

    def __exit__(self, *exc_info) -> None:
        trace_ctx.set_trace(self.prev)


class take_current_trace:
    """Context manager: yield the current trace and make the eval trace current meanwhile."""

    def __enter__(self) -> Trace:
        self.prev = trace_ctx.trace
        trace_ctx.set_trace(eval_trace)
        return self.prev

    def __exit__(self, *exc_info) -> None:
        trace_ctx.set_trace(self.prev)

# --8<-- [end:trace]


# --8<-- [start:tracer]
class Tracer:
    """A stand-in for an array during a transformation: it has an aval and belongs to a trace."""

    __array_priority__ = 1000  # numpy defers `ndarray * tracer` to the tracer's __rmul__
    __slots__ = ("__weakref__", "_trace", "aval")
    __hash__ = None  # __eq__ builds an equation, so tracers cannot be dict keys

    def __init__(self, trace: Trace, aval: ShapedArray):
        self._trace = trace
        self.aval = aval

    dtype = property(lambda self: self.aval.dtype)
    shape = property(lambda self: self.aval.shape)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)

    def __len__(self) -> int:
        return self.aval._len(self)

    def __iter__(self):
        # iterating a traced array slices it along axis 0: lax/slicing.py installs aval._iter
        if not hasattr(self.aval, "_iter"):
            raise TypeError(f"Value of type {type(self)} is not iterable.")
        return iter(self.aval._iter(self))

    def to_concrete_value(self) -> Any:  # the value, if known (never, for stage 2's tracers)
        return None

    def _error_repr(self) -> str:
        return f"traced array with shape {self.aval.str_short()}"

    def _origin_msg(self) -> str:
        return ""

    # As in JAX, bool(), int() and index answer from a tracer that knows its value (later
    # stages'), float() and complex() never do; else a shape check, then the aval raises.
    def __bool__(self) -> bool:
        concrete = self.to_concrete_value()
        if concrete is not None:
            return bool(concrete)
        check_bool_conversion(self)
        return self.aval._bool(self)

    def __int__(self) -> int:
        concrete = self.to_concrete_value()
        if concrete is not None:
            return int(concrete)
        check_scalar_conversion(self)
        return self.aval._int(self)

    def __float__(self) -> float:
        check_scalar_conversion(self)
        return self.aval._float(self)

    def __complex__(self) -> complex:
        check_scalar_conversion(self)
        return self.aval._complex(self)

    def __index__(self) -> int:
        concrete = self.to_concrete_value()
        if concrete is not None:
            return operator.index(concrete)
        check_integer_conversion(self)
        return self.aval._index(self)

    def __array__(self, *args, **kwargs):
        raise TracerArrayConversionError(self)

    def _short_repr(self) -> str:
        return f"{type(self).__name__}<{self.aval}>"

    def __repr__(self) -> str:
        return self._short_repr()

    # The operators (`x + y`, `x[1:]`) and array methods (`x.sum()`) forward to the aval, as
    # in JAX: `x + y` is `x.aval._add(x, y)`. numpy/array_methods.py installs both sides.
# --8<-- [end:tracer]


def concrete_or_error(force: Callable | None, val: Any, context: str = "") -> Any:
    """`force(val)` for a concrete value; ConcretizationTypeError naming `context` for a tracer."""
    force = (lambda x: x) if force is None else force
    if isinstance(val, Tracer):
        maybe_concrete = val.to_concrete_value()
        if maybe_concrete is None:
            raise ConcretizationTypeError(val, context)
        return force(maybe_concrete)
    return force(val)
