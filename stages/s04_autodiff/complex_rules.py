"""Complex numbers: the jvp and transpose rules of real, imag, complex and conj, and of abs,
whose derivative differs for a complex operand.

JAX: the same rules beside real_p, imag_p, complex_p, conj_p and abs_p in jax/_src/lax/lax.py.
JAX's convention, which these rules follow: a vjp is the transpose of the jvp, with no
conjugation of its own. A primitive that mixes a value with its conjugate (conj, imag, abs)
carries the conjugation in its rules, so that grad of a real-valued function of complex inputs
is the conjugate of df/dz, as in JAX (grad(abs)(1+1j) is (1-1j)/sqrt(2)).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from stages.s02_tracing import dtypes, lax
from stages.s02_tracing.lax import mul, neg, select
from stages.s02_tracing.lax.utils import const

from .ad import is_undefined_primal, primitive_transposes
from .jvp_rules import defjvp2, deflinear, replace_zero
from .transpose_rules import unbroadcast


def _is_complex(x: Any) -> bool:
    return dtypes.issubdtype(dtypes.dtype(x), np.complexfloating)


# --8<-- [start:abs_jvp]
def _abs_jvp(g, ans, x):
    if _is_complex(x):
        # d|z| = Re(g * conj(z) / |z|) (at 0, divided by 1 instead)
        scale = lax.div(lax.conj(x), replace_zero(lax.convert_element_type(ans, dtypes.dtype(x))))
        return lax.real(mul(g, scale))
    # d|x| = g where x >= 0, -g elsewhere (so +1 at 0, like JAX)
    return select(lax.ge(x, const(x, 0)), g, neg(g))
# --8<-- [end:abs_jvp]


def _zero_of(ct: Any) -> Any:
    return np.zeros((), dtypes.dtype(ct))[()]


def _real_transpose(ct, x):
    return [lax.complex(ct, _zero_of(ct))]  # Re(z) = x reads the real part only


def _imag_transpose(ct, x):
    return [lax.complex(_zero_of(ct), neg(ct))]  # Im(z): the conjugate's imaginary part


def _complex_transpose(ct, x, y):
    return [unbroadcast(x.aval, lax.real(ct)) if is_undefined_primal(x) else None,
            unbroadcast(y.aval, lax.imag(neg(ct))) if is_undefined_primal(y) else None]


def _conj_transpose(ct, x, *, input_dtype):
    # conj of a complex value transposes to conj; of a float (made complex), to real
    if dtypes.issubdtype(input_dtype, np.complexfloating):
        return [lax.conj(ct)]
    return [lax.real(ct)]


defjvp2(lax.abs_p, _abs_jvp)
for _p in (lax.real_p, lax.imag_p, lax.complex_p, lax.conj_p):
    deflinear(_p)
primitive_transposes[lax.real_p] = _real_transpose
primitive_transposes[lax.imag_p] = _imag_transpose
primitive_transposes[lax.complex_p] = _complex_transpose
primitive_transposes[lax.conj_p] = _conj_transpose
