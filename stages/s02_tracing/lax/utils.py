"""How a lax primitive is assembled from a shape rule, a dtype rule and a numpy impl.

JAX: jax/_src/lax/utils.py (`standard_primitive`, `standard_abstract_eval`) and the dtype/shape
helpers at the top of jax/_src/lax/lax.py (there private, `_float`, `_num`, ...: ours are shared
by several modules, so public); also dot_general's `Precision`.
"""

from __future__ import annotations

import enum
import operator
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from .. import core, dtypes

__all__ = ["Precision", "canonicalize_precision", "check_same_dtypes", "standard_primitive"]

# Dtype families a rule accepts; `dtypes.issubdtype(dtype, family)` decides membership.
BOOL = (np.bool_,)
INT = (np.integer,)
FLOAT = (np.floating,)
COMPLEX = (np.complexfloating,)
SIGNED_INT = (np.signedinteger,)
NUM = INT + FLOAT + COMPLEX
ANY = NUM + BOOL
ORDERED = INT + FLOAT + BOOL
BOOL_OR_INT = INT + BOOL

# lax ops refuse mixed dtypes; their message points at the promoting jnp function.
_JNP_FUNCTION_EQUIVALENTS = {
    "add": "add", "sub": "subtract", "mul": "multiply", "div": "divide", "max": "maximum",
    "min": "minimum", "eq": "equal", "ne": "not_equal", "select": "where",
    "bitwise_and": "bitwise_and", "bitwise_or": "bitwise_or", "bitwise_xor": "bitwise_xor",
    "shift_left": "left_shift", "shift_right_logical": "right_shift",
    "shift_right_arithmetic": "right_shift",
    "concatenate": "concatenate", "atan2": "arctan2",
}


def _family_names(families: Sequence[type]) -> str:
    return ", ".join(t.__name__ for t in families)


def _accepts(dtype: np.dtype, families: Sequence[type]) -> bool:
    return any(dtypes.issubdtype(dtype, t) for t in families)


def check_same_dtypes(name: str, *avals: core.ShapedArray) -> None:
    """lax never promotes: every operand must already have the same dtype (weak or not)."""
    if any(a.dtype != avals[0].dtype for a in avals[1:]):
        msg = f"lax.{name} requires arguments to have the same dtypes, got "
        msg += ", ".join(str(a.dtype) for a in avals) + "."
        if name in _JNP_FUNCTION_EQUIVALENTS:
            equiv = _JNP_FUNCTION_EQUIVALENTS[name]
            msg += (
                f" (Tip: jnp.{equiv} is a similar function that does automatic type "
                "promotion on inputs)."
            )
        raise TypeError(msg)


def unop_dtype_rule(
    result_dtype: Callable[[np.dtype], np.dtype],
    accepted: Sequence[type],
    name: str,
    aval: core.ShapedArray,
    **params: Any,
) -> np.dtype:
    """Check a unary op's operand dtype against the families it accepts."""
    if not _accepts(aval.dtype, accepted):
        raise TypeError(
            f"{name} does not accept dtype {aval.dtype.name}. "
            f"Accepted dtypes are subtypes of {_family_names(accepted)}."
        )
    return result_dtype(aval.dtype)


def naryop_dtype_rule(
    result_dtype: Callable[..., np.dtype],
    accepted: Sequence[Sequence[type]],
    name: str,
    *avals: core.ShapedArray,
    require_same: bool = True,
    **params: Any,
) -> np.dtype:
    """Check each operand against its accepted families, then that the dtypes agree."""
    for i, (aval, families) in enumerate(zip(avals, accepted, strict=True)):
        if not _accepts(aval.dtype, families):
            raise TypeError(
                f"{name} does not accept dtype {aval.dtype.name} at position {i}. "
                f"Accepted dtypes at position {i} are subtypes of {_family_names(families)}."
            )
    if require_same and params.get("out_dtype") is None:
        check_same_dtypes(name, *avals)
    return result_dtype(*avals, **params)


def broadcasting_shape_rule(name: str, *avals: core.ShapedArray, **params: Any) -> tuple:
    """Equal ranks with sizes that match or are 1; rank-0 operands broadcast to any shape."""
    shapes = [a.shape for a in avals if a.shape]
    if not shapes:
        return ()
    ranks = {len(s) for s in shapes}
    if len(ranks) != 1:
        raise TypeError(f"{name}: arrays must have the same number of dimensions, got {ranks}")
    out = []
    for sizes in zip(*shapes, strict=False):
        not_one = {d for d in sizes if d != 1}
        if len(not_one) > 1:
            shown = ", ".join(str(tuple(s)) for s in shapes)
            raise TypeError(f"{name} got incompatible shapes for broadcasting: {shown}.")
        out.append(not_one.pop() if not_one else 1)
    return tuple(out)


def _standard_weak_type_rule(*avals: core.ShapedArray, **params: Any) -> bool:
    # A result is weak only when everything it came from was weak.
    return all(a.weak_type for a in avals)


def never_weak(*avals: core.ShapedArray, **params: Any) -> bool:
    """The weak-type rule of a result that is never weak (argmax's index)."""
    return False


def argnum_weak_type(*argnums: int) -> Callable[..., bool]:
    """The weak-type rule of a result weak when the operands at `argnums` are."""
    return lambda *avals, **params: all(avals[i].weak_type for i in argnums)


# --8<-- [start:standard_primitive]
def standard_abstract_eval(
    shape_rule: Callable, dtype_rule: Callable, weak_type_rule: Callable,
    *avals: core.ShapedArray, **params: Any,
) -> core.ShapedArray:
    """The abstract-eval rule of a standard primitive: shape, dtype and weak type, each checked."""
    return core.ShapedArray(
        tuple(shape_rule(*avals, **params)),
        np.dtype(dtype_rule(*avals, **params)),
        weak_type=bool(weak_type_rule(*avals, **params)),
    )


# bfloat16 is computed as XLA's CPU backend computes it: operands widened to float32, one rounding
# of the result. Elementwise ops agree either way; reductions, dots and cumulative ops differ, as
# numpy's bfloat16 loops round every partial sum (and numpy's einsum refuses bfloat16).
# These are never widened: they act on the bits, or (integer_pow's products) XLA rounds each step.
_BFLOAT16_AS_IS = frozenset({"bitcast_convert_type", "convert_element_type", "integer_pow",
                             "reduce_precision"})


def _widen_bfloat16(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float32) if x.dtype == dtypes.bfloat16 else x


def _standard_impl(abstract_eval: Callable, numpy_impl: Callable, widen: bool, *args: Any,
                   **params: Any):
    # Eager calls check shapes/dtypes like traced ones, then run numpy on canonical inputs.
    avals = [core.get_aval(x) for x in args]
    out_aval = abstract_eval(*avals, **params)
    arrays = [np.asarray(x, dtype=a.dtype) for x, a in zip(args, avals, strict=True)]
    if widen:
        arrays = [_widen_bfloat16(a) for a in arrays]
    with np.errstate(all="ignore"):  # XLA returns nan/inf silently; numpy would warn
        out = numpy_impl(*arrays, **params)
    # numpy sometimes computes wider (erf in float64, einsum of mixed dtypes): cast back
    return np.asarray(out).astype(out_aval.dtype, copy=False)


def standard_primitive(
    shape_rule: Callable,
    dtype_rule: Callable,
    name: str,
    numpy_impl: Callable,
    weak_type_rule: Callable | None = None,
    primitive_class: type[core.Primitive] = core.Primitive,
) -> core.Primitive:
    """A primitive whose abstract eval is (shape_rule, dtype_rule, weak_type_rule)."""
    # JAX's impl is `dispatch.apply_primitive` (compile with XLA); ours runs numpy.
    prim = primitive_class(name)
    abstract_eval = partial(
        standard_abstract_eval, shape_rule, dtype_rule, weak_type_rule or _standard_weak_type_rule
    )
    prim.def_abstract_eval(abstract_eval)
    widen = name not in _BFLOAT16_AS_IS
    prim.def_impl(partial(_standard_impl, abstract_eval, numpy_impl, widen))
    prim.shape_rule = shape_rule  # read by rules that need the result's shape (stage 11)
    return prim
# --8<-- [end:standard_primitive]


def same_shape(aval: core.ShapedArray, **params: Any) -> tuple:
    """The shape rule of a one-operand primitive that keeps its operand's shape."""
    return aval.shape


def same_dtype(dtype: np.dtype) -> np.dtype:
    """The result-dtype function of an op whose result has its operand's dtype."""
    return dtype


def first_dtype(*avals: core.ShapedArray, **params: Any) -> np.dtype:
    """The dtype rule of a primitive whose result has its first operand's dtype."""
    return avals[0].dtype


def fixed_dtype(dtype: Any) -> Callable[..., np.dtype]:
    """The dtype rule of a primitive with one result dtype (bool for comparisons)."""
    return lambda *avals, **params: np.dtype(dtype)


def unop(
    result_dtype: Callable, accepted: Sequence[type], name: str, numpy_impl: Callable
) -> core.Primitive:
    """An elementwise one-operand primitive."""
    dtype_rule = partial(unop_dtype_rule, result_dtype, accepted, name)
    prim = standard_primitive(same_shape, dtype_rule, name, numpy_impl)
    elementwise_prims.add(prim)
    return prim


def naryop(
    result_dtype: Callable,
    accepted: Sequence[Sequence[type]],
    name: str,
    numpy_impl: Callable,
    require_same_dtypes: bool = True,
) -> core.Primitive:
    """An elementwise primitive over operands of one shape (rank-0 operands broadcast)."""
    dtype_rule = partial(
        naryop_dtype_rule, result_dtype, accepted, name, require_same=require_same_dtypes
    )
    shape_rule = partial(broadcasting_shape_rule, name)
    prim = standard_primitive(shape_rule, dtype_rule, name, numpy_impl)
    elementwise_prims.add(prim)
    return prim


# unop's and naryop's primitives: later stages give every elementwise op one rule (stage 11)
elementwise_prims: set[core.Primitive] = set()


_SCALAR_TYPES = {"b": bool, "i": int, "u": int, "f": float, "c": complex}


def const(example: Any, value: Any) -> Any:
    """`value` with `example`'s dtype, for a rule's constants (`x + 1`, `x < 0`): a Python scalar
    when `example` is a weakly typed scalar, so the result stays weak; else a numpy scalar (a
    strongly typed literal). JAX: lax._const."""
    dtype = dtypes.dtype(example)
    if dtypes.is_weakly_typed(example) and np.ndim(example) == 0:
        val = _SCALAR_TYPES[dtypes.dtype_kind(dtype)](value)
        return val if dtypes.dtype(val) == dtype else np.array(val, dtype)[()]
    return np.array(value, dtype)[()]


def canonicalize_axis(axis: int, ndim: int) -> int:
    """A non-negative axis, or a ValueError naming the axis and rank; an axis that is not an
    integer (a tuple, a float) is refused by operator.index, as in JAX's util.py."""
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def check_shapelike(fun_name: str, arg_name: str, dims: Sequence[int]) -> None:
    """A shape or a list of dimensions must not hold a negative entry."""
    if any(d < 0 for d in dims):
        raise TypeError(f"{fun_name} {arg_name} must have every element be nonnegative, "
                        f"got {dims}.")


def drop_params(*names: str, only_none: bool = True):
    """A printing rule hiding params JAX's printer hides (JAX: the *_pp_rule functions):
    `names` when None, or always with only_none=False."""

    def rule(eqn, context, settings):
        params = {
            k: v
            for k, v in eqn.params.items()
            if k not in names or (only_none and v is not None)
        }
        return core.default_pp_eqn(eqn.replace(params=params), context, settings)

    return rule


# JAX: Precision and canonicalize_precision in lax/lax.py.
class Precision(enum.Enum):
    """How hard an accelerator works on a float32 dot (numpy, and XLA on CPU, ignore it)."""

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value: object) -> Precision | None:
        return _PRECISION_STRINGS.get(value)  # Precision("highest") is Precision.HIGHEST

    def __repr__(self) -> str:
        return f"Precision.{self.name}"  # how a jaxpr prints it

    def __str__(self) -> str:
        return self.name


_PRECISION_STRINGS = {
    "highest": Precision.HIGHEST, "float32": Precision.HIGHEST, "high": Precision.HIGH,
    "bfloat16_3x": Precision.HIGH, "tensorfloat32": Precision.HIGH,
    "default": Precision.DEFAULT, "bfloat16": Precision.DEFAULT, "fastest": Precision.DEFAULT,
    None: Precision.DEFAULT,
}


def canonicalize_precision(precision: Any) -> tuple[Precision, Precision] | None:
    """None, or one Precision per operand: "highest" becomes (HIGHEST, HIGHEST)."""
    # JAX also accepts DotAlgorithm presets, and reads a None from a config flag
    if precision is None:
        return None
    if isinstance(precision, str) and precision in _PRECISION_STRINGS:
        return Precision(precision), Precision(precision)
    if isinstance(precision, Precision):
        return precision, precision
    if isinstance(precision, (list, tuple)) and len(precision) == 2:
        if all(isinstance(p, Precision) for p in precision):
            return tuple(precision)
        if all(isinstance(p, str) for p in precision):
            first, second = (canonicalize_precision(p) for p in precision)
            return first[0], second[0]
    raise ValueError(
        "Precision argument must be one of:\n- None,\n"
        f"- a string in {list(_PRECISION_STRINGS)},\n- a lax.Precision value,\n"
        f"- a tuple of two lax.Precision values or strings;\nbut got {precision}."
    )


def maybe_upcast(result: np.dtype, preferred: Any) -> np.dtype:
    """A dot's result dtype given `preferred_element_type` (XLA's MaybeUpcast, JAX's
    `_maybe_upcast`): an integer or bool result may only widen."""
    if preferred is None or preferred == result:
        return result
    def bits(d: Any) -> int:
        return 1 if d == np.bool_ else np.dtype(d).itemsize * 8
    if not dtypes.issubdtype(result, np.floating) and bits(preferred) < bits(result):
        raise TypeError("`preferred_element_type` must not be narrower than the original "
                        f"type, got preferred_element_type of {preferred} for result type "
                        f"of {result}.")
    return preferred
