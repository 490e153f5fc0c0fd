"""Dtypes as JAX sees them: canonical dtypes (x64 disabled), weak types and the promotion lattice.

JAX: jax/_src/dtypes.py. JAX's default is `jax_enable_x64=False`, so every 64-bit dtype is
canonicalized to its 32-bit counterpart; we hard-wire that default.
"""

from __future__ import annotations

import warnings
from typing import Any

import ml_dtypes
import numpy as np

# bfloat16 (8 exponent bits, 7 mantissa bits) is not a numpy dtype: ml_dtypes defines it and
# registers numpy casts and ufuncs for it. Its numpy kind is "V", so ask `issubdtype` below, not
# `dtype.kind`, whether a dtype is a float (JAX: dtypes.bfloat16).
bfloat16: np.dtype = np.dtype(ml_dtypes.bfloat16)

# Python scalar types are "weak": they take the dtype of whatever they meet (JAX: _weak_types).
_weak_types: tuple[type, ...] = (int, float, complex)

# --8<-- [start:canonical]
_canonical_dtypes = {
    np.dtype("float64"): np.dtype("float32"),
    np.dtype("int64"): np.dtype("int32"),
    np.dtype("uint64"): np.dtype("uint32"),
    np.dtype("complex128"): np.dtype("complex64"),
}

_python_scalar_dtypes = {
    bool: np.dtype("bool"),
    int: np.dtype("int32"),
    float: np.dtype("float32"),
    complex: np.dtype("complex64"),
}


def canonicalize_dtype(dtype: Any) -> np.dtype:
    """The dtype JAX uses for `dtype` with x64 disabled: 64-bit types become 32-bit."""
    dt = np.dtype(dtype)
    return _canonical_dtypes.get(dt, dt)


_INT32 = np.iinfo(np.int32)


def check_python_int(value: int) -> None:
    """A Python int becomes a weak int32: one that does not fit is refused, not wrapped (JAX:
    scalar_type_to_dtype's check)."""
    if not _INT32.min <= value <= _INT32.max:
        raise OverflowError(f"Python int {value} too large to convert to int32")


def python_scalar_dtype(pytype: type, value: Any = None) -> np.dtype:
    """The dtype of a Python scalar type: bool, int32, float32 or complex64 (JAX's, weak); an
    int `value` is checked to fit."""
    # JAX: dtypes.python_scalar_types_to_dtypes, then canonicalize_dtype
    if pytype not in _python_scalar_dtypes:
        raise TypeError(f"{pytype} is not a Python scalar type")
    if pytype is int and value is not None:
        check_python_int(value)
    return _python_scalar_dtypes[pytype]
# --8<-- [end:canonical]


def check_and_canonicalize_user_dtype(dtype: Any, fun_name: str | None = None) -> np.dtype:
    """A dtype the caller named, as JAX takes it with x64 off: a Python type is its default
    dtype, and a 64-bit dtype is narrowed to 32 bits with JAX's warning, naming `fun_name`."""
    if isinstance(dtype, type) and dtype in _python_scalar_dtypes:
        return _python_scalar_dtypes[dtype]
    dt = np.dtype(dtype)
    if dt not in jax_dtypes and dt != float0:  # float0 too: the tangent dtype
        where = f" in {fun_name}" if fun_name else ""
        raise TypeError(f"JAX only supports number, bool, and string dtypes, got dtype {dtype}"
                        + where)
    narrow = canonicalize_dtype(dt)
    if narrow != dt:
        where = f" requested in {fun_name}" if fun_name else ""
        warnings.warn(f"Explicitly requested dtype {dt}{where} is not available, and will be "
                      f"truncated to dtype {narrow}. To enable more dtypes, set the "
                      "jax_enable_x64 configuration option or the JAX_ENABLE_X64 shell "
                      "environment variable. See https://github.com/jax-ml/jax#current-gotchas "
                      "for more.", stacklevel=3)
    return narrow


# The tangent dtype of an integer or boolean value (stage 4): a dtype with no data at all, so
# `np.zeros(shape, float0)` holds nothing. An aval may have it; an Array never holds it.
float0 = np.dtype([("float0", np.void, 0)])


def dtype_name(dtype: np.dtype) -> str:
    """A dtype's name as an aval prints it: numpy's, except float0 (numpy calls it void)."""
    return "float0" if dtype == float0 else dtype.name


def short_dtype_name(dtype: Any) -> str:
    """The name an aval prints with: float32 -> f32, uint8 -> u8, complex64 -> c64, bool -> bool."""
    if np.dtype(dtype) == float0:
        return "float0"
    name = np.dtype(dtype).name
    for long, short in (("float", "f"), ("uint", "u"), ("int", "i"), ("complex", "c")):
        name = name.replace(long, short)
    return name


# Every dtype a JAX array may have here (float8 and int4, also from ml_dtypes, are left out).
jax_dtypes = frozenset(
    np.dtype(name)
    for name in (
        "bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
        "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
    )
)

# numpy's abstract types that bfloat16 belongs to, though numpy does not know it
_bfloat16_supertypes = (np.floating, np.inexact, np.number, np.generic)


def issubdtype(a: Any, b: Any) -> bool:
    """np.issubdtype, with bfloat16 a floating type (JAX: dtypes.issubdtype)."""
    if any(b is t for t in _bfloat16_supertypes) and _is_bfloat16(a):
        return True
    return bool(np.issubdtype(a, b))


def _is_bfloat16(a: Any) -> bool:
    try:
        return np.dtype(a) == bfloat16
    except TypeError:  # an abstract type such as np.floating
        return False


def dtype_kind(dt: np.dtype) -> str:
    """numpy's one-letter kind, with "f" for bfloat16 (whose numpy kind is "V")."""
    return "f" if dt == bfloat16 else dt.kind


def check_valid_dtype(dtype: np.dtype) -> None:
    """Reject dtypes a JAX array cannot have (strings, objects, ...); float0 is a tangent's."""
    if dtype not in jax_dtypes and dtype != float0:
        raise TypeError(
            f"Dtype {dtype} is not a valid JAX array type. "
            "Only arrays of numeric types are supported by JAX."
        )


def dtype(x: Any) -> np.dtype:
    """The canonical dtype of a value, a Python scalar type, or a dtype specifier."""
    if x is None:  # numpy would read None as float64, its default: JAX refuses it
        raise ValueError(f"Invalid argument to dtype: {x}.")
    if isinstance(x, type) and x in _python_scalar_dtypes:
        return _python_scalar_dtypes[x]
    if type(x) in _python_scalar_dtypes:
        return _python_scalar_dtypes[type(x)]
    # arrays, numpy scalars, tracers and avals all carry a numpy dtype
    x_dtype = getattr(x, "dtype", None)
    dt = x_dtype if isinstance(x_dtype, np.dtype) else np.dtype(x)
    check_valid_dtype(dt)
    return canonicalize_dtype(dt)


def is_weakly_typed(x: Any) -> bool:
    """True for Python int/float/complex values and for values whose aval is weak."""
    if type(x) in _weak_types:
        return True
    aval = getattr(x, "aval", None)
    return bool(getattr(aval, "weak_type", False))


# --8<-- [start:lattice]
def _type_promotion_lattice() -> dict[Any, list[Any]]:
    """Each type's immediate successors on JAX's promotion lattice (x64 disabled).

    Nodes are numpy dtypes plus the Python types int/float/complex standing for weak types.
    """
    b1, u8, u16, u32, u64 = (np.dtype(n) for n in ("bool", "uint8", "uint16", "uint32", "uint64"))
    i8, i16, i32, i64 = (np.dtype(n) for n in ("int8", "int16", "int32", "int64"))
    f16, bf16, f32, f64, c64, c128 = (
        np.dtype(n)
        for n in ("float16", "bfloat16", "float32", "float64", "complex64", "complex128")
    )
    i_, f_, c_ = _weak_types
    return {
        b1: [i_],
        i_: [u8, i8],
        u8: [i16, u16],
        u16: [i32, u32],
        u32: [i32, u64],  # x64 disabled: u32 with i32 gives i32 rather than forming i64
        u64: [f_],
        i8: [i16],
        i16: [i32],
        i32: [i64],
        i64: [f_],
        f_: [f16, bf16, c_],  # neither f16 nor bf16 holds the other: together they give f32
        f16: [f32],
        bf16: [f32],
        f32: [f64, c64],
        f64: [c128],
        c_: [c64],
        c64: [c128],
        c128: [],
    }


def _make_lattice_upper_bounds() -> dict[Any, set[Any]]:
    """For each node, the set of all nodes reachable from it (itself included)."""
    lattice = _type_promotion_lattice()
    upper_bounds = {node: {node} for node in lattice}
    for node in lattice:
        frontier = list(lattice[node])
        while frontier:
            above = frontier.pop()
            if above not in upper_bounds[node]:
                upper_bounds[node].add(above)
                frontier.extend(lattice[above])
    return upper_bounds


_lattice_upper_bounds = _make_lattice_upper_bounds()
# --8<-- [end:lattice]


class TypePromotionError(ValueError):
    """No implicit promotion path between the given dtypes."""


def _jax_type(dt: np.dtype, weak_type: bool) -> Any:
    """The lattice node of a (dtype, weak_type) pair: weak values sit at int/float/complex."""
    if not weak_type or dt == np.dtype(bool):
        return dt
    return {"i": int, "u": int, "f": float, "c": complex}[dtype_kind(dt)]


# --8<-- [start:lub]
def _least_upper_bound(*nodes: Any) -> Any:
    """The join of lattice nodes: the smallest node above all of them."""
    # EXERCISE 2.5 (promotion): join the nodes on the lattice using _lattice_upper_bounds
    common = set.intersection(*(_lattice_upper_bounds[n] for n in nodes))
    # the least common bound is the one all the other common bounds sit above
    least = [c for c in common if common <= _lattice_upper_bounds[c]]
    if len(least) != 1:  # never on this lattice (all reach complex128); JAX's float8s join nothing
        names = tuple(str(n) for n in nodes)
        raise TypePromotionError(
            f"Input dtypes {names} have no available implicit dtype promotion path. "
            "Try explicitly casting inputs to the desired output type."
        )
    return least[0]
    # END EXERCISE
# --8<-- [end:lub]


def _as_node(x: Any) -> Any:
    # Identity, not equality: np.dtype('int32') == int is True in numpy.
    if any(x is t for t in _weak_types):
        return x
    return np.dtype(x)


def promote_types(a: Any, b: Any) -> np.dtype:
    """The dtype a binary op casts both arguments to (jnp.promote_types).

    The Python types int, float and complex stand for weak types: `promote_types('uint8', int)` is
    uint8. Unlike result_type, the inputs are not canonicalized (float64 stays float64).
    """
    return np.dtype(_least_upper_bound(_as_node(a), _as_node(b)))


_default_types = {
    "b": np.dtype("bool"),
    "i": np.dtype("int32"),
    "u": np.dtype("uint32"),
    "f": np.dtype("float32"),
    "c": np.dtype("complex64"),
}


# --8<-- [start:result_type]
def _dtype_and_weak_type(x: Any) -> tuple[np.dtype, bool]:
    weak = any(x is t for t in _weak_types) or is_weakly_typed(x)
    return dtype(x), weak


def lattice_result_type(*args: Any) -> tuple[np.dtype, bool]:
    """The joined (dtype, weak_type) of `args`, before weak results take a default width."""
    pairs = [_dtype_and_weak_type(a) for a in args]
    dtypes = [d for d, _ in pairs]
    weak_types = [w for _, w in pairs]
    if len(pairs) == 1:
        out_dtype, out_weak = pairs[0]
    elif len(set(dtypes)) == 1 and not all(weak_types):
        out_dtype, out_weak = dtypes[0], False
    elif all(weak_types):
        # all weak: join the strong counterparts, then mark the result weak
        out_dtype, out_weak = np.dtype(_least_upper_bound(*set(dtypes))), True
    else:
        node = _least_upper_bound(*{_jax_type(d, w) for d, w in pairs})
        out_weak = any(node is t for t in _weak_types)
        out_dtype = _python_scalar_dtypes[node] if out_weak else node
    return out_dtype, out_weak and out_dtype != np.dtype(bool)


def result_type(*args: Any, return_weak_type_flag: bool = False) -> Any:
    """The dtype (and weak flag) of an operation combining `args` (values or dtypes).

    A weak input only decides the kind (int/float/complex), never the width, so `x_f16 * 2.0` is
    f16; the result is weak only when every input is weak.
    """
    if not args:
        raise ValueError("at least one array or dtype is required")
    out_dtype, out_weak = lattice_result_type(
        *(np.dtype("float32") if a is None else a for a in args)
    )
    if out_weak:
        # a weak result takes the default width of its kind (int32, float32, ...)
        out_dtype = _default_types[dtype_kind(out_dtype)]
    return (out_dtype, out_weak) if return_weak_type_flag else out_dtype
# --8<-- [end:result_type]


def canonicalize_value(x: Any) -> Any:
    """numpy values in their canonical dtype (x64 disabled); everything else unchanged."""
    if isinstance(x, (np.ndarray, np.generic)):
        dt = canonicalize_dtype(x.dtype)
        if dt != x.dtype:
            return x.astype(dt)
    return x


def is_literalable(x: Any) -> bool:
    """Python and numpy scalars (0-d numpy arrays too) are inlined into a jaxpr; arrays, and
    eager Arrays of any shape, are not (as in JAX)."""
    if type(x) in (bool, int, float, complex) or isinstance(x, np.generic):
        return True
    return isinstance(x, np.ndarray) and x.ndim == 0
