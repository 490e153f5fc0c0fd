"""Products: dot and matmul, each one dot_general with JAX's output dtype.

JAX: jax/_src/numpy/tensor_contractions.py.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from .. import core, dtypes, lax
from .util import check_arraylike

__all__ = ["dot", "matmul"]


def _product_dtype(name: str, a: Any, b: Any, preferred_element_type: Any
                   ) -> tuple[np.dtype, bool]:
    # the promoted (dtype, weak_type) of a and b, unless the caller asked for a dtype
    if preferred_element_type is None:
        return dtypes.result_type(a, b, return_weak_type_flag=True)
    return dtypes.check_and_canonicalize_user_dtype(preferred_element_type, name), False


def dot(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """a's last axis contracted with b's second-to-last (or only) axis; scalars multiply."""
    check_arraylike("dot", a, b)
    out_dtype, out_weak = _product_dtype("dot", a, b, preferred_element_type)
    a_ndim, b_ndim = np.ndim(a), np.ndim(b)
    if a_ndim == 0 or b_ndim == 0:
        contract = ((), ())
    else:
        contract = ((a_ndim - 1,), (0 if b_ndim == 1 else b_ndim - 2,))
    out = lax.dot_general(a, b, (contract, ((), ())), precision, out_dtype)
    return lax.convert_element_type(out, out_dtype, out_weak)


def matmul(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None):
    """a @ b: matrix products over the last two axes, broadcasting the leading (batch) axes."""
    check_arraylike("matmul", a, b)
    for i, x in enumerate((a, b)):
        if np.ndim(x) < 1:
            raise ValueError(
                f"matmul input operand {i} must have ndim at least 1, but it has ndim "
                f"{np.ndim(x)}"
            )
    out_dtype, out_weak = _product_dtype("matmul", a, b, preferred_element_type)
    a_is_mat, b_is_mat = np.ndim(a) > 1, np.ndim(b) > 1
    a_batch = tuple(np.shape(a)[:-2]) if a_is_mat else ()
    b_batch = tuple(np.shape(b)[:-2]) if b_is_mat else ()
    nbatch = builtins.max(len(a_batch), len(b_batch))
    a_batch = (None,) * (nbatch - len(a_batch)) + a_batch
    b_batch = (None,) * (nbatch - len(b_batch)) + b_batch
    # Sort each batch axis: shared (a dot_general batch dim), one-sided (a free dim), or
    # size 1 on a side (squeezed away there). idx_* record where each lands in the output.
    a_squeeze, b_squeeze, both_squeeze, a_bdims, b_bdims = [], [], [], [], []
    idx_batch, idx_a_other, idx_b_other = [], [], []
    for i, (da, db) in enumerate(zip(a_batch, b_batch, strict=False)):
        if da is None:
            idx_b_other.append(i)
        elif db is None:
            idx_a_other.append(i)
        elif da == 1 and db == 1:
            a_squeeze.append(len(idx_batch) + len(idx_a_other) + len(a_squeeze))
            b_squeeze.append(len(idx_batch) + len(idx_b_other) + len(b_squeeze))
            both_squeeze.append(i)
        elif da == 1:
            idx_b_other.append(i)
            a_squeeze.append(len(idx_batch) + len(idx_a_other) + len(a_squeeze))
        elif db == 1:
            idx_a_other.append(i)
            b_squeeze.append(len(idx_batch) + len(idx_b_other) + len(b_squeeze))
        elif da == db:
            a_bdims.append(len(idx_batch) + len(idx_a_other))
            b_bdims.append(len(idx_batch) + len(idx_b_other))
            idx_batch.append(i)
        else:
            raise ValueError(
                f"Incompatible types for matmul arguments: {core.get_aval(a)} and "
                f"{core.get_aval(b)}"
            )
    if a_is_mat:
        idx_a_other.append(nbatch)
    if b_is_mat:
        idx_b_other.append(nbatch + a_is_mat)
    perm = tuple(int(p) for p in np.argsort(idx_batch + idx_a_other + idx_b_other))
    a = lax.squeeze(a, tuple(a_squeeze))
    b = lax.squeeze(b, tuple(b_squeeze))
    contract = ((np.ndim(a) - 1,), (np.ndim(b) - 1 - b_is_mat,))
    out = lax.dot_general(a, b, (contract, (tuple(a_bdims), tuple(b_bdims))), precision,
                          out_dtype)
    out = lax.transpose(out, perm)
    if both_squeeze:
        out = lax.expand_dims(out, tuple(both_squeeze))
    return lax.convert_element_type(out, out_dtype, out_weak)
