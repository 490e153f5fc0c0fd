"""The core of tracing: abstract values, primitives, traces and tracers, and the jaxpr IR.

JAX: jax/_src/core.py. Tracing is "stackless" as in JAX 0.10.2: `Primitive.bind` hands the
operation to the trace held in the tracing context (`trace_ctx.trace`); each tracer knows its
own trace; there are no integer levels. The jaxpr printer lives in pretty_printer.py.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import dtypes
from .errors import (
    ConcretizationTypeError,
    TracerArrayConversionError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
    UnexpectedTracerError,
)

# ------------------------------------ abstract values ------------------------------------------


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


# --8<-- [start:shaped_array]
class ShapedArray:
    """What a tracer knows about its value: a shape, a dtype, and whether the dtype is weak.

    A weak type comes from a Python scalar: `x * 2.0` keeps x's dtype because 2.0 is weak.
    """

    __slots__ = ("shape", "dtype", "weak_type")
    array_abstraction_level = 1

    def __init__(self, shape: Sequence[int], dtype: Any, weak_type: bool = False):
        self.shape = tuple(map(int, shape))
        self.dtype = np.dtype(dtype)
        self.weak_type = bool(weak_type)

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    def update(self, shape=None, dtype=None, weak_type=None) -> ShapedArray:
        """A copy with some fields replaced."""
        return ShapedArray(
            self.shape if shape is None else shape,
            self.dtype if dtype is None else dtype,
            self.weak_type if weak_type is None else weak_type,
        )

    def strip_weak_type(self) -> ShapedArray:
        return self.update(weak_type=False) if self.weak_type else self

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is ShapedArray
            and self.shape == other.shape
            and self.dtype == other.dtype
            and self.weak_type == other.weak_type
        )

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.weak_type))

    def str_short(self, short_dtypes: bool = False) -> str:
        """`float32[3,4]`, or with short dtypes `f32[3,4]` as jaxprs print binders."""
        dt = dtypes.short_dtype_name(self.dtype) if short_dtypes else self.dtype.name
        return f"{dt}[{','.join(str(d) for d in self.shape)}]"

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
    _hex = concretization_function_error(hex)
    _oct = concretization_function_error(oct)
    _index = concretization_function_error(operator.index)
    # numpy.py installs the array methods: _add, _radd, _mul, ..., _getitem, _T, _reshape, ...
# --8<-- [end:shaped_array]


_PYTHON_SCALARS = (bool, int, float, complex)


def get_aval(x: Any) -> ShapedArray:
    """The abstract value of a tracer, a numpy array/scalar or a Python scalar (weak)."""
    if isinstance(x, Tracer):
        return x.aval
    t = type(x)
    if t in _PYTHON_SCALARS:
        # Python bool is not weak in JAX: bool has no narrower dtype to defer to.
        return ShapedArray((), dtypes.python_scalar_dtype(t), weak_type=t is not bool)
    if isinstance(x, (np.ndarray, np.generic)):
        dtype = dtypes.canonicalize_dtype(x.dtype)
        dtypes.check_valid_dtype(dtype)  # no strings or objects
        return ShapedArray(x.shape, dtype)
    raise TypeError(f"Argument '{x}' of type {type(x)} is not a valid JAX type")


typeof = get_aval  # JAX 0.10.2 calls it core.typeof; get_aval is the older name


def canonicalize_value(x: Any) -> Any:
    """numpy values in their canonical dtype (x64 disabled); everything else unchanged."""
    if isinstance(x, (np.ndarray, np.generic)):
        dt = dtypes.canonicalize_dtype(x.dtype)
        if dt != x.dtype:
            return x.astype(dt)
    return x


def is_literalable(x: Any) -> bool:
    """Scalars (Python or numpy, or 0-d arrays) are inlined into a jaxpr; arrays are not."""
    if type(x) in _PYTHON_SCALARS or isinstance(x, np.generic):
        return True
    return isinstance(x, np.ndarray) and x.ndim == 0


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
        for arg in args:
            if isinstance(arg, Tracer) and not arg._trace.is_valid():
                raise escaped_tracer_error(arg)
        trace = trace_ctx.trace
        # Rules run with the eval trace current, so anything they bind runs eagerly
        # unless the rule sets a trace itself (JAX: take_current_trace).
        trace_ctx.set_trace(eval_trace)
        try:
            return self.bind_with_trace(trace, args, params)
        finally:
            trace_ctx.set_trace(trace)

    def bind_with_trace(self, trace: Trace, args: Sequence[Any], params: dict) -> Any:
        # JAX: bind_with_trace(trace, args, avals, params); we do not pass avals.
        return trace.process_primitive(self, args, params)

    def def_impl(self, impl: Callable) -> Callable:
        """impl(*numpy_arrays, **params) -> numpy array (or a list if multiple_results)."""
        self.impl = impl
        return impl

    def def_abstract_eval(self, abstract_eval: Callable) -> Callable:
        """abstract_eval(*avals, **params) -> ShapedArray (or a list if multiple_results)."""
        # JAX wraps the rule to also return effects; ours returns avals only.
        self.abstract_eval = abstract_eval
        return abstract_eval

    def impl(self, *args: Any, **params: Any) -> Any:
        raise NotImplementedError(f"Evaluation rule for '{self.name}' not implemented")

    def abstract_eval(self, *avals: Any, **params: Any) -> Any:
        raise NotImplementedError(f"Abstract evaluation for '{self.name}' not implemented")

    def get_bind_params(self, params: dict) -> dict:
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

    def __repr__(self) -> str:
        return type(self).__name__


class EvalTrace(Trace):
    """The trace at the bottom: run the primitive's impl on numpy values."""

    def process_primitive(self, primitive, args, params):
        for arg in args:
            if isinstance(arg, Tracer):
                raise escaped_tracer_error(arg)
        return primitive.impl(*[_to_numpy(x) for x in args], **params)


def _to_numpy(x: Any) -> np.ndarray:
    """Python scalars and 64-bit numpy values become arrays of the dtype JAX would use."""
    if type(x) is np.ndarray:  # the common case, kept cheap: eval_jaxpr runs it per operand
        dtype = dtypes.canonicalize_dtype(x.dtype)
        return x if dtype == x.dtype else x.astype(dtype)
    return np.asarray(x, dtype=get_aval(x).dtype)


eval_trace = EvalTrace()


class TracingContext(threading.local):
    """Which trace `bind` hands operations to. One per thread, the eval trace at first."""

    # JAX: core.TracingContext over thread-local config state (trace_state).
    def __init__(self):
        self.trace: Trace = eval_trace

    def set_trace(self, trace: Trace) -> None:
        self.trace = trace

    def is_top_level(self) -> bool:
        return self.trace is eval_trace


trace_ctx = TracingContext()


class set_current_trace:
    """Context manager: make `trace` current while the body runs."""

    # JAX: SetCurrentTraceContextManager (a class: cheaper than @contextmanager).
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


def find_cur_trace() -> Trace:
    return trace_ctx.trace
# --8<-- [end:trace]


def escaped_tracer_error(tracer: Tracer) -> UnexpectedTracerError:
    return UnexpectedTracerError(
        "Encountered an unexpected tracer. A function transformed by JAX had a side effect, "
        f"allowing for a reference to an intermediate value with type {tracer.aval.str_short()} "
        f"wrapped in a {type(tracer).__name__} to escape the scope of the transformation.\n"
        "JAX transformations require that functions explicitly return their outputs, and "
        "disallow saving intermediate values to global state."
    )


def _forward_to_aval(name: str) -> Callable:
    """Tracer.__add__ is `self.aval._add(self, other)`: numpy.py installs the aval methods."""

    def method(self, *args, **kwargs):
        aval_method = getattr(self.aval, name, None)
        if aval_method is None:
            raise TypeError(
                f"{type(self).__name__} does not support `{name.lstrip('_')}`: "
                f"{type(self.aval).__name__}.{name} is not installed (see numpy.py)"
            )
        return aval_method(self, *args, **kwargs)

    method.__name__ = name
    return method


def _forward_property(name: str) -> property:
    return property(lambda self: _forward_to_aval(name)(self))


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
        # iterating a traced array slices it along axis 0: numpy.py installs aval._iter
        if not hasattr(self.aval, "_iter"):
            raise TypeError(f"Value of type {type(self)} is not iterable.")
        return iter(self.aval._iter(self))

    def to_concrete_value(self) -> Any:
        """The value, if this tracer knows it (never, for stage 2's tracers)."""
        return None

    def _error_repr(self) -> str:
        return f"traced array with shape {self.aval.str_short()}"

    def _origin_msg(self) -> str:
        return ""

    # Python asks for a concrete value: a tracer that knows it answers (later stages have
    # such tracers); otherwise the aval raises the right error.
    def __bool__(self) -> bool:
        concrete = self.to_concrete_value()
        if concrete is not None:
            return bool(concrete)
        if self.size != 1:
            many = "more than one element" if self.size else "no elements (empty)"
            raise ValueError(
                f"The truth value of an array with {many} is ambiguous. Use a.any() or a.all()"
            )
        return self.aval._bool(self)

    def __int__(self) -> int:
        concrete = self.to_concrete_value()
        if concrete is not None:
            return int(concrete)
        return self.aval._int(self)

    def __float__(self) -> float:
        return self.aval._float(self)

    def __complex__(self) -> complex:
        return self.aval._complex(self)

    def __index__(self) -> int:
        concrete = self.to_concrete_value()
        if concrete is not None:
            return operator.index(concrete)
        return self.aval._index(self)

    def __array__(self, *args, **kwargs):
        raise TracerArrayConversionError(self)

    def _short_repr(self) -> str:
        return f"{type(self).__name__}<{self.aval}>"

    def __repr__(self) -> str:
        return self._short_repr()


# Operators forward to the aval, exactly as JAX's Tracer does: `x + y` -> aval._add(x, y).
_TRACER_OPERATORS = (
    "neg pos abs invert eq ne lt le gt ge add radd sub rsub mul rmul truediv rtruediv "
    "floordiv rfloordiv mod rmod divmod rdivmod pow rpow matmul rmatmul and rand or ror "
    "xor rxor lshift rlshift rshift rrshift getitem"
).split()
for _op in _TRACER_OPERATORS:
    setattr(Tracer, f"__{_op}__", _forward_to_aval(f"_{_op}"))
# Array methods and properties, also installed on the aval by numpy.py.
for _method in (
    "reshape transpose sum mean max min prod argmax argmin cumsum astype squeeze ravel "
    "flatten dot clip any all swapaxes"
).split():
    setattr(Tracer, _method, _forward_to_aval(f"_{_method}"))
Tracer.T = _forward_property("_T")
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


# ------------------------------------------- jaxprs --------------------------------------------


class Var:
    """A variable of a jaxpr. It has no name: the printer names variables a, b, ... in order."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self) -> str:
        return f"Var(id={id(self)}):{self.aval.str_short()}"


class DropVar(Var):
    """A binder whose value is never read (printed `_`)."""

    def __repr__(self) -> str:
        return "_"


class Literal:
    """A constant written inline in a jaxpr: `2.0:f32[]`."""

    __slots__ = ("val", "aval")
    __hash__ = None

    def __init__(self, val: Any, aval: ShapedArray):
        self.val = val
        self.aval = aval

    def __repr__(self) -> str:
        return f"Literal({self.val})"


Atom = Var | Literal


class JaxprEqn:
    """One line of a jaxpr: `outvars = primitive[params] invars`."""

    __slots__ = ("invars", "outvars", "primitive", "params", "effects", "source_info")

    def __init__(self, invars, outvars, primitive, params, effects=frozenset(), source_info=None):
        self.invars: list[Atom] = invars
        self.outvars: list[Var] = outvars
        self.primitive: Primitive = primitive
        self.params: dict[str, Any] = params
        self.effects = effects
        self.source_info = source_info

    def replace(self, **kwargs: Any) -> JaxprEqn:
        """A copy with some fields replaced (custom printing rules use it to drop params)."""
        fields = {name: getattr(self, name) for name in JaxprEqn.__slots__}
        fields.update(kwargs)
        return JaxprEqn(**fields)

    def __repr__(self) -> str:

        return pp_eqn(self, JaxprPpContext(), JaxprPpSettings()).format().rstrip()


def new_jaxpr_eqn(invars, outvars, primitive, params, effects=frozenset(), source_info=None):
    return JaxprEqn(invars, outvars, primitive, params, effects, source_info)


# Custom printing rules, keyed by primitive (JAX: core.pp_eqn_rules). A rule is
# rule(eqn, context, settings) -> pretty_printer.Doc; most drop params JAX hides, e.g.
#   def _dot_general_pp_rule(eqn, context, settings):
#       params = {k: v for k, v in eqn.params.items() if v is not None}
#       return core._pp_eqn(eqn.replace(params=params), context, settings)
pp_eqn_rules: dict[Primitive, Callable] = {}


class Jaxpr:
    """A typed program: constvars and invars in, equations, outvars out."""

    __slots__ = ("__weakref__", "constvars", "invars", "outvars", "eqns", "effects", "debug_info")

    def __init__(self, constvars, invars, outvars, eqns, effects=frozenset(), debug_info=None):
        self.constvars: list[Var] = list(constvars)
        self.invars: list[Var] = list(invars)
        self.outvars: list[Atom] = list(outvars)
        self.eqns: list[JaxprEqn] = list(eqns)
        self.effects = effects
        self.debug_info = debug_info

    in_avals = property(lambda self: [v.aval for v in self.invars])
    out_avals = property(lambda self: [v.aval for v in self.outvars])

    def pretty_print(self, **format_kwargs: Any) -> str:
        from .pretty_printer import pp_toplevel_jaxpr  # the printer imports core

        return pp_toplevel_jaxpr(self).format(**format_kwargs)

    def __str__(self) -> str:
        return self.pretty_print()

    __repr__ = __str__

    def replace(self, **kwargs: Any) -> Jaxpr:
        fields = {name: getattr(self, name) for name in Jaxpr.__slots__[1:]}
        fields.update(kwargs)
        return Jaxpr(**fields)


class ClosedJaxpr:
    """A jaxpr together with the values of its constvars."""

    __slots__ = ("__weakref__", "jaxpr", "consts")

    def __init__(self, jaxpr: Jaxpr, consts: Sequence[Any]):
        assert len(consts) == len(jaxpr.constvars)
        self.jaxpr = jaxpr
        self.consts = list(consts)

    literals = property(lambda self: self.consts)
    constvars = property(lambda self: self.jaxpr.constvars)
    invars = property(lambda self: self.jaxpr.invars)
    outvars = property(lambda self: self.jaxpr.outvars)
    eqns = property(lambda self: self.jaxpr.eqns)
    effects = property(lambda self: self.jaxpr.effects)
    in_avals = property(lambda self: self.jaxpr.in_avals)
    out_avals = property(lambda self: self.jaxpr.out_avals)

    def map_jaxpr(self, f: Callable[[Jaxpr], Jaxpr]) -> ClosedJaxpr:
        return ClosedJaxpr(f(self.jaxpr), self.consts)

    def replace(self, *, jaxpr: Jaxpr | None = None, consts=None) -> ClosedJaxpr:
        return ClosedJaxpr(self.jaxpr if jaxpr is None else jaxpr,
                           self.consts if consts is None else consts)

    def pretty_print(self, **format_kwargs: Any) -> str:
        return self.jaxpr.pretty_print(**format_kwargs)

    def __str__(self) -> str:
        return str(self.jaxpr)

    __repr__ = __str__


# --8<-- [start:eval_jaxpr]
def eval_jaxpr(jaxpr: Jaxpr, consts: Sequence[Any], *args: Any) -> list[Any]:
    """Run a jaxpr by binding each equation's primitive: eager here, traced under a trace."""
    # EXERCISE 2.4 (eval-jaxpr): walk the equations, reading and writing an environment
    env: dict[Var, Any] = {}

    def read(atom: Atom) -> Any:
        return atom.val if isinstance(atom, Literal) else env[atom]

    def write(var: Var, val: Any) -> None:
        env[var] = val

    for var, val in zip(jaxpr.constvars, consts, strict=True):
        write(var, val)
    for var, val in zip(jaxpr.invars, args, strict=True):
        write(var, val)
    for eqn in jaxpr.eqns:
        params = eqn.primitive.get_bind_params(eqn.params)
        ans = eqn.primitive.bind(*[read(x) for x in eqn.invars], **params)
        outs = ans if eqn.primitive.multiple_results else [ans]
        for var, val in zip(eqn.outvars, outs, strict=True):
            write(var, val)
    return [read(v) for v in jaxpr.outvars]
    # END EXERCISE
# --8<-- [end:eval_jaxpr]


def jaxpr_as_fun(closed_jaxpr: ClosedJaxpr) -> Callable[..., list[Any]]:
    """The closed jaxpr as a Python function of its invars."""

    def fun(*args: Any) -> list[Any]:
        return eval_jaxpr(closed_jaxpr.jaxpr, closed_jaxpr.consts, *args)

    return fun


class JaxprTypeError(TypeError):
    pass


def check_jaxpr(jaxpr: Jaxpr) -> None:
    """Each var bound once before use, each eqn's outvars typed as its abstract_eval says."""
    # JAX: core.check_jaxpr (it also checks effects and subjaxprs).
    bound: set[int] = set()

    def read(atom: Atom, where: str) -> ShapedArray:
        if isinstance(atom, Var) and id(atom) not in bound:
            raise JaxprTypeError(f"Variable {atom!r} used before it is bound, in {where}")
        return atom.aval

    def bind(var: Var, where: str) -> None:
        if id(var) in bound:
            raise JaxprTypeError(f"Variable {var!r} bound twice, in {where}")
        bound.add(id(var))

    for v in [*jaxpr.constvars, *jaxpr.invars]:
        bind(v, "the binders")
    for eqn in jaxpr.eqns:
        where = f"equation `{eqn!r}`"
        in_avals = [read(x, where) for x in eqn.invars]
        out = eqn.primitive.abstract_eval(*in_avals, **eqn.params)
        out_avals = list(out) if eqn.primitive.multiple_results else [out]
        for var, aval in zip(eqn.outvars, out_avals, strict=True):
            if var.aval.strip_weak_type() != aval.strip_weak_type():
                raise JaxprTypeError(f"{where} binds {var.aval} but its rule gives {aval}")
            bind(var, where)
    for v in jaxpr.outvars:
        read(v, "the outputs")


# JAX keeps these printer functions in core.py itself; ours live in pretty_printer.py.
from .pretty_printer import JaxprPpContext, JaxprPpSettings, _pp_eqn, pp_eqn  # noqa: E402, F401
