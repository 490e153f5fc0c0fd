"""linear_transpose: the transpose of a function promised to be linear, with JAX's checks.

JAX: `linear_transpose` in jax/_src/api.py (kept beside our api.py for length). The function is
partially evaluated with every input unknown, so the whole of it is staged; pruned; then each
call runs the backward pass on it. Floats map to floats (complex included) and ints to ints;
a cotangent must have the output's shape and dtype. The result is a tree_util.Partial whose
leaves are the function's constants, as in JAX.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from stages.s01_pytrees import Partial, tree_flatten, tree_unflatten
from stages.s02_tracing import core, dtypes
from stages.s02_tracing import linear_util as lu
from stages.s02_tracing.api_util import debug_info, flatten_fun_nokwargs
from stages.s02_tracing.dtypes import canonicalize_dtype
from stages.s02_tracing.eval_shape import ShapeDtypeStruct
from stages.s03_partial_eval import partial_eval as pe

from . import ad
from .ad_util import instantiate, tangent_aval


def _typecheck(aval: core.ShapedArray, x: Any) -> bool:
    # JAX: core.typecheck (shape and dtype; a weak type is no mismatch)
    try:
        return core.get_aval(x).strip_weak_type() == aval.strip_weak_type()
    except TypeError:
        return False


def _shaped_abstractify(x: Any) -> core.ShapedArray:
    # JAX: core.shaped_abstractify, which takes a ShapeDtypeStruct for the array it stands for
    if isinstance(x, ShapeDtypeStruct):  # float64 stands for float32, as an array's would
        return core.ShapedArray(x.shape, canonicalize_dtype(x.dtype), x.weak_type)
    return core.get_aval(x)


# --8<-- [start:linear_transpose]
def linear_transpose(fun: Callable, *primals: Any) -> Callable:
    """The transpose of a linear `fun` (traced at the shapes of `primals`): ct -> input cts."""
    primals_flat, in_tree = tree_flatten(tuple(primals))
    in_avals = [_shaped_abstractify(p) for p in primals_flat]
    dbg = debug_info("linear_transpose", fun, tuple(primals), {})
    flat_fun, out_tree = flatten_fun_nokwargs(lu.wrap_init(fun, debug_info=dbg), in_tree)
    in_pvals = [pe.PartialVal.unknown(a) for a in in_avals]
    jaxpr, out_pvals, consts = pe.trace_to_jaxpr_nounits(flat_fun, in_pvals, instantiate=True)
    jaxpr, _ = pe.dce_jaxpr(jaxpr, True, instantiate=True)
    out_avals = tuple(pval.get_aval() for pval in out_pvals)
    in_dtypes, out_dtypes = [a.dtype for a in in_avals], [a.dtype for a in out_avals]
    dtypes_all = in_dtypes + out_dtypes
    if not (all(dtypes.issubdtype(d, np.inexact) for d in dtypes_all)
            or all(dtypes.issubdtype(d, np.integer) for d in dtypes_all)):
        raise TypeError("linear_transpose only supports [float or complex] -> [float or "
                        "complex], and integer -> integer functions, but got "
                        f"{in_dtypes} -> {out_dtypes}.")

    def transposed_fun(consts: list[Any], out_cotangent: Any) -> Any:
        out_cts, out_tree2 = tree_flatten(out_cotangent)
        if out_tree() != out_tree2:
            raise TypeError("cotangent tree does not match function output, "
                            f"expected {out_tree()} but got {out_tree2}")
        if not all(map(_typecheck, out_avals, out_cts)):
            raise TypeError("cotangent type does not match function output, "
                            f"expected {out_avals} but got {out_cts}")
        undefined = [ad.UndefinedPrimal(tangent_aval(a)) for a in in_avals]
        cts_in = ad.backward_pass(jaxpr, consts, undefined, out_cts)
        return tree_unflatten(in_tree, [instantiate(c) for c in cts_in])

    return Partial(transposed_fun, consts)  # a pytree: its leaves are the constants
# --8<-- [end:linear_transpose]
