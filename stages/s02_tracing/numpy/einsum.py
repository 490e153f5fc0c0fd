"""einsum: a contraction written as subscripts, computed as a chain of dot_generals.

JAX: jax/_src/numpy/einsum.py, which asks opt_einsum for a contraction order and then contracts
pairwise with dot_general. Ours contracts left to right (the order the operands are given; no
search for a cheaper one), and reduces an index that appears in one operand only (and not in
the output) before its first contraction, as JAX's `sum_uniques` does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import lax
from . import lax_numpy
from .util import promote_dtypes

__all__ = ["einsum"]


def _parse(subscripts: str, n: int) -> tuple[list[str], str]:
    subscripts = subscripts.replace(" ", "")
    if "..." in subscripts:
        raise NotImplementedError("einsum with '...' is not supported here")
    inputs, arrow, output = subscripts.partition("->")
    specs = inputs.split(",")
    if len(specs) != n:
        raise ValueError(f"einsum: {len(specs)} subscripts for {n} operands")
    if not arrow:  # implicit output: the indices seen once, in alphabetical order
        counts = {c: inputs.count(c) for c in set(inputs) if c != ","}
        output = "".join(sorted(c for c, k in counts.items() if k == 1))
    return specs, output


def _sum_out(x: Any, spec: str, keep: set[str]) -> tuple[Any, str]:
    """Sum away the axes whose index nothing later needs."""
    axes = tuple(i for i, c in enumerate(spec) if c not in keep)
    if not axes:
        return x, spec
    return lax.reduce_sum(x, axes), "".join(c for c in spec if c not in keep)


def _contract(x: Any, xs: str, y: Any, ys: str, keep: set[str]) -> tuple[Any, str]:
    """x and y combined by one dot_general: shared indices that are kept are batch axes, shared
    ones that are not are contracted; the result's axes are batch, x's free, y's free."""
    shared = [c for c in xs if c in ys]
    batch = [c for c in shared if c in keep]
    contract = [c for c in shared if c not in keep]
    dims = (([xs.index(c) for c in contract], [ys.index(c) for c in contract]),
            ([xs.index(c) for c in batch], [ys.index(c) for c in batch]))
    out = lax.dot_general(x, y, dims)
    spec = "".join(batch) + "".join(c for c in xs if c not in shared) + \
        "".join(c for c in ys if c not in shared)
    return out, spec


def einsum(subscripts: str, *operands: Any, optimize: Any = "auto",
           precision: Any = None, preferred_element_type: Any = None) -> Any:
    """Sum of products over the indices missing from the output, e.g. 'ij,jk->ik'."""
    specs, output = _parse(subscripts, len(operands))
    operands = promote_dtypes(*[lax_numpy.asarray(x) for x in operands])
    for spec, x in zip(specs, operands, strict=True):
        if len(set(spec)) != len(spec):
            raise NotImplementedError("einsum with a repeated index in one operand (a diagonal)")
        if len(spec) != np.ndim(x):
            raise ValueError(f"einsum: subscripts '{spec}' for an operand of rank {np.ndim(x)}")
    later = [set(output).union(*specs[i + 1:]) for i in range(len(specs))]
    x, xs = _sum_out(operands[0], specs[0], later[0])
    for i in range(1, len(operands)):
        keep = set(output).union(*specs[i + 1:])
        y, ys = _sum_out(operands[i], specs[i], keep | set(xs))
        x, xs = _contract(x, xs, y, ys, keep)
        x, xs = _sum_out(x, xs, keep)
    if xs != output:
        x = lax.transpose(x, tuple(xs.index(c) for c in output))
    return x
