"""vmap, and the Jacobians built from it: jacfwd (vmap of jvp), jacrev (vmap of vjp), hessian.

JAX: jax/_src/api.py (`vmap`, `_mapped_axis_size`, `jacfwd`, `jacrev`, `hessian`) and
jax/_src/api_util.py (`flatten_axes`). `axis_name` names the mapped axis for the collectives of
parallel.py; `spmd_axis_name` is recorded for stage 11's meshes. The error texts are JAX's.
"""

from __future__ import annotations

import collections
import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from stages.s01_pytrees import (
    keystr,
    none_leaf_registry,
    prefix_errors,
    tree_flatten,
    tree_flatten_with_path,
    tree_leaves,
    tree_map,
    tree_structure,
    tree_transpose,
    tree_unflatten,
    treedef_children,
)
from stages.s02_tracing import core, dtypes, eval_shape, lax
from stages.s02_tracing import linear_util as lu
from stages.s02_tracing import numpy as jnp
from stages.s02_tracing.api_util import (
    argnums_partial2,
    check_arg,
    check_callable,
    debug_info,
    ensure_index,
    flatten_fun,
    wraps,
)
from stages.s02_tracing.errors import invalid_shape_error
from stages.s04_autodiff import jvp, vjp
from stages.s04_autodiff.ad_util import float0
from stages.s04_autodiff.api import check_input_dtype_revderiv, check_output_dtype_revderiv

from . import batching_rules, gather_batching  # noqa: F401  (rules for stage 2's primitives)
from .batching import AxisData, SpecMatchError, batch

# ------------------------------------------------------------------------------ axis specs


class PytreeLeaf:
    """Stands for one leaf of the arguments when an axis spec is matched against them."""

    def __repr__(self) -> str:
        return "pytree leaf"


def flatten_axes(name: str, treedef: Any, axis_tree: Any, *, kws: bool = False) -> list:
    """One axis per leaf of `treedef`, from `axis_tree`, a tree prefix of it (None a leaf).

    JAX: api_util.flatten_axes. `kws=True` means treedef is of (args, kwargs) and axis_tree of
    (in_axes, 0): a mismatch is then reported against the positional arguments only.
    """
    axis_leaves, axis_treedef = none_leaf_registry.flatten(axis_tree)
    dummy = tree_unflatten(treedef, [PytreeLeaf()] * treedef.num_leaves)
    try:
        subtrees = axis_treedef.flatten_up_to(dummy)
    except (ValueError, TypeError):
        if kws:
            treedef = treedef_children(treedef)[0]
            axis_tree = axis_tree[0]
            dummy = tree_unflatten(treedef, [PytreeLeaf()] * treedef.num_leaves)
        errors = prefix_errors(axis_tree, dummy, is_leaf=lambda x: x is None)
        details = "\n  ".join(make_error(name).args[0] for make_error in errors)
        raise ValueError(
            f"{name} specification must be a tree prefix of the corresponding value; "
            f"\n  Mismatch details ({len(errors)} found):\n  {details}"
        ) from None
    axes: list = []
    for axis, subtree in zip(axis_leaves, subtrees, strict=True):
        axes += [axis] * tree_structure(subtree).num_leaves
    return axes


# --8<-- [start:mapped_axis_size]
def _mapped_axis_size(fn: Callable, tree: Any, vals: Sequence[Any], dims: Sequence[Any],
                      name: str, axis_size: int | None = None) -> int:
    """The one size every mapped axis has; JAX's error, listing the sizes, if they differ."""
    if not vals:
        if axis_size is not None:
            return axis_size
        args, kwargs = tree_unflatten(tree, vals)
        raise ValueError(
            f"{name} wrapped function must be passed at least one argument containing an "
            f"array or axis_size must be specified, got empty *args={args} and "
            f"**kwargs={kwargs}"
        )
    # EXERCISE 5.1 (axis-size): read each mapped axis's size; agree, or say who disagrees
    mapped_sizes = [None if d is None else _axis_size(name, x, d)
                    for x, d in zip(vals, dims, strict=True)]
    sizes = {s for s in mapped_sizes if s is not None}
    if axis_size is not None:
        sizes.add(axis_size)
    if len(sizes) == 1:
        return sizes.pop()
    if not sizes:
        raise ValueError(f"{name} must have at least one non-None value in in_axes or "
                         "axis_size must be specified")
    where = _leaf_descriptions(fn, tree, vals)
    msg = [f"{name} got inconsistent sizes for array axes to be mapped:\n"]
    if axis_size is not None:
        msg.append(f"  * the `axis_size` argument was {axis_size};\n")
    counts = collections.Counter(s for s in mapped_sizes if s is not None).most_common()
    for k, (size, count) in enumerate(counts):
        i = mapped_sizes.index(size)  # the first leaf with this size is the example
        example = f"axis {dims[i]} of {where[i]}"
        if count == 1:
            msg.append(f"  * one axis had size {size}: {example};\n")
        else:
            which = "most" if k == 0 else "some"
            msg.append(f"  * {which} axes ({count} of them) had size {size}, e.g. {example};\n")
    raise ValueError("".join(msg)[:-2])
    # END EXERCISE
# --8<-- [end:mapped_axis_size]


def _axis_size(name: str, x: Any, axis: int) -> int:
    shape = np.shape(x)
    if not -len(shape) <= axis < len(shape):
        min_rank = axis + 1 if axis >= 0 else -axis
        raise ValueError(
            f"{name} was requested to map its argument along axis {axis}, which implies that "
            f"its rank should be at least {min_rank}, but is only {len(shape)} "
            f"(its shape is {shape})"
        )
    return shape[axis]


def _check_axis_size(fun: Callable, size: Any, args_flat: list, in_axes_flat: list,
                     in_tree: Any, out_axes: Any) -> None:
    """A size that is not an integer (a bool included) fails here, at entry, with one of the
    TypeErrors JAX raises where it makes a shape of it: that of an op on a mapped argument if
    there is one, else that of the broadcast of an unmapped output. JAX raises only when such a
    shape is made, and takes `True` as the size 1 (see the page's list of differences)."""
    if isinstance(size, (int, np.integer)) and not isinstance(size, bool):
        return
    for x, d in zip(args_flat, in_axes_flat, strict=True):
        if d is not None:
            shape = list(np.shape(x))
            shape[d] = size
            raise invalid_shape_error(tuple(shape))
    args, kwargs = tree_unflatten(in_tree, args_flat)
    outs, out_tree = tree_flatten(eval_shape(fun, *args, **kwargs))
    for out, axis in zip(outs, flatten_axes("vmap out_axes", out_tree, out_axes), strict=True):
        if axis is not None:
            types = [type(d) for d in out.shape]
            types.insert(axis % (len(types) + 1), type(size))
            raise TypeError("broadcast_in_dim shape must have every element be an integer "
                            f"type, got {tuple(types)}.")


def _leaf_descriptions(fn: Callable, tree: Any, vals: Sequence[Any]) -> list[str]:
    """`argument b['q'] of type float32[3,3]` for each leaf, as JAX's message names them."""
    args, kwargs = tree_unflatten(tree, vals)
    try:
        params: list[str] | None = list(inspect.signature(fn).bind(*args, **kwargs)
                                        .signature.parameters)
    except (TypeError, ValueError):
        params = None

    def arg_name(path: tuple) -> str:
        i = path[0].idx
        if params is None or i >= len(params):  # *args: no parameter name to use
            return f"args{keystr(path)}"
        return f"argument {params[i]}{keystr(path[1:])}"

    def type_str(x: Any) -> str:
        try:
            return core.get_aval(x).str_short()
        except TypeError:
            return "unknown"

    arg_paths = tree_flatten_with_path(args)[0]
    kwarg_paths = tree_flatten_with_path(kwargs)[0]
    return ([f"{arg_name(p)} of type {type_str(x)}" for p, x in arg_paths]
            + [f"kwargs{keystr(p)} of type {type_str(x)}" for p, x in kwarg_paths])


# ------------------------------------------------------------------------------ vmap

_IN_AXES_MSG = ("vmap in_axes must be an int, None, or a tuple of entries corresponding to the "
                "positional arguments passed to the function")


# --8<-- [start:vmap]
def vmap(fun: Callable, in_axes: int | None | Sequence[Any] = 0, out_axes: Any = 0,
         axis_name: Any = None, axis_size: int | None = None,
         spmd_axis_name: Any = None) -> Callable:
    """`fun` mapped over an axis of its arguments: one call computes every example at once.

    in_axes: per positional argument (a pytree prefix of it), the axis to map, or None to pass
    the argument whole to every example; negative axes count from the end. out_axes: where the
    mapped axis goes in each output (None: the output must not depend on the mapped axis).
    axis_name: a name for the mapped axis, so collectives (psum, ...) can reduce over it.
    axis_size: the size when no argument is mapped (or a check on it).
    spmd_axis_name: the mesh axis (or axes) the mapped axis is sharded over (stage 11).
    """
    check_callable(fun)
    if spmd_axis_name is not None and not isinstance(spmd_axis_name, tuple):
        spmd_axis_name = (spmd_axis_name,)
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)  # JAX accepts a list here, as a tuple
    if not (in_axes is None or type(in_axes) in (int, tuple)):
        raise TypeError(f"{_IN_AXES_MSG}, but got {in_axes}.")
    if not all(type(leaf) is int for leaf in tree_leaves(in_axes)):
        raise TypeError("vmap in_axes must be an int, None, or (nested) container with those "
                        f"types as leaves, but got {in_axes}.")
    if not all(type(leaf) is int for leaf in tree_leaves(out_axes)):
        raise TypeError("vmap out_axes must be an int, None, or (nested) container with those "
                        f"types as leaves, but got {out_axes}.")

    @functools.wraps(fun)
    def vmap_f(*args: Any, **kwargs: Any) -> Any:
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError(f"{_IN_AXES_MSG}, but got len(in_axes)={len(in_axes)}, "
                             f"len(args)={len(args)}")
        args_flat, in_tree = tree_flatten((args, kwargs))
        f = lu.wrap_init(fun, debug_info=debug_info("vmap", fun, args, kwargs))
        flat_fun, out_tree = flatten_fun(f, in_tree)
        # keyword arguments are always mapped over axis 0, as in JAX
        in_axes_flat = flatten_axes("vmap in_axes", in_tree, (in_axes, 0), kws=True)
        for x, axis in zip(args_flat, in_axes_flat, strict=True):
            if axis is not None:  # a mapped value must be an array (JAX's TypeError); an
                core.get_aval(x)  # unmapped one reaches the function as it is
        size = _mapped_axis_size(fun, in_tree, args_flat, in_axes_flat, "vmap", axis_size)
        _check_axis_size(fun, size if axis_size is None else axis_size, args_flat,
                         in_axes_flat, in_tree, out_axes)
        out_axes_thunk = lambda: flatten_axes("vmap out_axes", out_tree(), out_axes)
        try:
            out_flat = batch(flat_fun, AxisData(axis_name, size, spmd_axis_name), in_axes_flat,
                             out_axes_thunk).call_wrapped(*args_flat)
        except SpecMatchError as e:
            if axis_name is not None:
                raise ValueError(f"vmap has mapped output (axis_name={axis_name}) but out_axes "
                                 f"is {e.dst}") from None
            full = tree_unflatten(out_tree(), out_axes_thunk())
            paths = tree_flatten_with_path(full, is_leaf=lambda x: x is None)[0]
            raise ValueError(f"at vmap out_axes{keystr(paths[e.leaf_idx][0])}, got axis spec "
                             f"{e.dst} but output was batched on axis {e.src}") from None
        return tree_unflatten(out_tree(), out_flat)

    name = getattr(fun, "__name__", "fun")  # JAX's docstring, the function's own after it
    vmap_f.__doc__ = (f"Vectorized version of {name}. Takes similar arguments as {name} but "
                      f"with additional array axes over which {name} is mapped.")
    if fun.__doc__:
        vmap_f.__doc__ += "\n\nOriginal documentation:\n\n" + fun.__doc__
    return vmap_f
# --8<-- [end:vmap]


# ------------------------------------------------------------------------------ Jacobians


def _check_input_dtype_jacfwd(holomorphic: bool, x: Any) -> None:
    check_arg(x)
    dtype = core.get_aval(x).dtype
    if holomorphic:
        if not np.issubdtype(dtype, np.complexfloating):
            raise TypeError("jacfwd with holomorphic=True requires inputs with complex dtype, "
                            f"but got {dtype.name}.")
    elif not np.issubdtype(dtype, np.floating):
        raise TypeError("jacfwd requires real-valued inputs (input dtype that is a sub-dtype of "
                        f"np.floating), but got {dtype.name}. For holomorphic differentiation, "
                        "pass holomorphic=True. For differentiation of non-holomorphic "
                        "functions involving complex inputs or integer inputs, use jax.jvp "
                        "directly.")


def _check_output_dtype_jacfwd(holomorphic: bool, x: Any) -> None:
    dtype = core.get_aval(x).dtype
    if holomorphic and not np.issubdtype(dtype, np.complexfloating):
        raise TypeError("jacfwd with holomorphic=True requires outputs with complex dtype, "
                        f"but got {dtype.name}.")


def _std_basis(pytree: Any) -> Any:
    """The identity matrix of size (total leaf size), unravelled into one pytree per row:
    each leaf gets a leading axis of that size. Row i is the i-th unit input."""
    leaves = tree_leaves(pytree)
    size = sum(int(np.size(x)) for x in leaves)
    eye = jnp.eye(size, dtype=dtypes.result_type(*leaves))  # staged: iota, eq, convert
    return _unravel_array_into_pytree(pytree, 1, None, eye, always_convert=True)


def _unravel_array_into_pytree(pytree: Any, axis: int, example: Any, arr: Any,
                               always_convert: bool = False) -> Any:
    """Split `arr` along `axis` into pieces of pytree's leaf sizes (one `split`, as JAX's), each
    reshaped to the leaf's shape there, cast to the leaf's dtype (or example's)."""
    leaves, treedef = tree_flatten(pytree)
    shape = np.shape(arr)
    is_float0 = getattr(arr, "dtype", None) == float0
    sizes = np.diff([0, *np.cumsum([np.size(leaf) for leaf in leaves])])  # np.int64s, as JAX's
    pieces = [arr] * len(leaves) if is_float0 else lax.split(arr, sizes, axis)
    parts = []
    for leaf, part in zip(leaves, pieces, strict=True):
        new_shape = (*shape[:axis], *np.shape(leaf), *shape[axis + 1:])
        like = leaf if example is None else example
        if np.iscomplexobj(part) and not np.issubdtype(dtypes.dtype(like), np.complexfloating):
            part = lax.real(part)  # JAX: _possible_downcast
        if is_float0:  # an int output's tangent: zeros, as in JAX
            part = lax.full(new_shape, 0, dtypes.dtype(like))
        elif np.shape(part) != new_shape:
            part = lax.reshape(part, new_shape)
        dtype, weak = dtypes.dtype(like), dtypes.is_weakly_typed(like)
        if always_convert and isinstance(part, core.Tracer):
            # JAX's basis is converted even to its own type (the sharding _std_basis passes)
            part = lax.convert_element_type_p.bind(part, new_dtype=dtype, weak_type=weak,
                                                   sharding=None)
        else:
            part = lax.convert_element_type(part, dtype, weak)
        parts.append(part)
    return tree_unflatten(treedef, parts)


def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False) -> Callable:
    """The Jacobian of `fun`, one column per input element: vmap of jvp over the identity.

    Each leaf of the result has shape out_shape + in_shape; the result is a pytree of the
    output's structure, of pytrees of the inputs' structure. Cost: one jvp per input element.
    """
    check_callable(fun)
    argnums = ensure_index(argnums)  # a numpy integer is an index too

    @wraps(fun, docstr="Jacobian of {fun} with respect to positional argument(s) {argnums}.",
           argnums=argnums)
    def jacfun(*args: Any, **kwargs: Any) -> Any:
        f_partial, dyn_args = argnums_partial2(fun, argnums, args, kwargs)
        for leaf in tree_leaves(dyn_args):
            _check_input_dtype_jacfwd(holomorphic, leaf)
        pushfwd = lambda tangents: jvp(f_partial, dyn_args, tangents, has_aux=has_aux)
        # the outputs (and aux) do not depend on the tangent: out_axes None
        out_axes = (None, -1, None) if has_aux else (None, -1)
        y, jac, *aux = vmap(pushfwd, out_axes=out_axes)(_std_basis(dyn_args))
        for leaf in tree_leaves(y):
            _check_output_dtype_jacfwd(holomorphic, leaf)
        example = dyn_args[0] if isinstance(argnums, int) else dyn_args
        # each output leaf's columns, split by input leaf: an output-of-input tree
        jac_tree = tree_map(
            lambda y_leaf, j: _unravel_array_into_pytree(example, np.ndim(j) - 1, y_leaf, j),
            y, jac)
        return (jac_tree, aux[0]) if has_aux else jac_tree

    return jacfun


# --8<-- [start:jacrev]
def jacrev(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False, allow_int: bool = False) -> Callable:
    """The Jacobian of `fun`, one row per output element: vmap of vjp's pullback over the
    identity. Same result as jacfwd; cost: one vjp per output element."""
    check_callable(fun)  # argnums as given, as JAX's: a numpy integer gives a tuple back
    # the checks grad makes, in jacrev's name (JAX: both use _check_*_dtype_revderiv)
    _check_input_dtype_jacrev = functools.partial(check_input_dtype_revderiv, "jacrev",
                                                  holomorphic, allow_int)
    _check_output_dtype_jacrev = functools.partial(check_output_dtype_revderiv, "jacrev",
                                                   holomorphic)

    @wraps(fun, docstr="Jacobian of {fun} with respect to positional argument(s) {argnums}.",
           argnums=argnums)
    def jacfun(*args: Any, **kwargs: Any) -> Any:
        f_partial, dyn_args = argnums_partial2(fun, argnums, args, kwargs)
        for leaf in tree_leaves(dyn_args):
            _check_input_dtype_jacrev(leaf)
        # EXERCISE 5.6 (jacrev): one vjp, its pullback vmapped over the output basis
        y, pullback, *aux = vjp(f_partial, *dyn_args, has_aux=has_aux)
        for leaf in tree_leaves(y):
            _check_output_dtype_jacrev(leaf)
        jac = vmap(pullback)(_std_basis(y))  # one cotangent per output element, all at once
        jac = jac[0] if isinstance(argnums, int) else jac
        example = dyn_args[0] if isinstance(argnums, int) else dyn_args
        # each input leaf's rows, split by output leaf: an input-of-output tree, transposed
        jac_tree = tree_map(lambda x_leaf, j: _unravel_array_into_pytree(y, 0, x_leaf, j),
                            example, jac)
        jac_tree = tree_transpose(tree_structure(example), tree_structure(y), jac_tree)
        # END EXERCISE
        return (jac_tree, aux[0]) if has_aux else jac_tree

    return jacfun
# --8<-- [end:jacrev]


def hessian(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
            holomorphic: bool = False) -> Callable:
    """The Hessian of scalar-valued `fun`: jacfwd of jacrev (forward over reverse)."""
    return jacfwd(jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic), argnums,
                  has_aux=has_aux, holomorphic=holomorphic)
