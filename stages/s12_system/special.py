"""erf_inv, the primitive `random.normal` needs, and erfc, exact `gelu`'s: stages 2-8 lack both.

JAX: jax/_src/lax/special.py (`erf_inv_p`, `erfc_p`, their jvps, and the lowerings to
`chlo.erf_inv` and `chlo.erfc`). A new
primitive is not done until every table knows it, so its rules are all here, one per stage:
impl and abstract eval (stage 2), jvp (stage 4), batching (stage 5), lowering (stage 8).
The numpy impl uses Giles' single-precision polynomial, the approximation XLA expands
`chlo.erf_inv` into; through PJRT the compiled kernel itself runs, so values there are XLA's.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from stages.s02_tracing import lax
from stages.s02_tracing.lax.utils import FLOAT, const, same_dtype, unop
from stages.s04_autodiff.jvp_rules import defjvp, defjvp2
from stages.s05_vmap.batching import defvectorized
from stages.s08_lowering import hlo, ir
from stages.s08_lowering.mlir import LoweringRuleContext, register_lowering

# w < 5 and w >= 5 branches of Giles, "Approximating the erfinv function" (2010), highest first
_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
            -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
         -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _horner(coefficients: tuple, w: np.ndarray) -> np.ndarray:
    p = np.full_like(w, coefficients[0])
    for c in coefficients[1:]:
        p = p * w + w.dtype.type(c)
    return p


def _erf_inv_impl(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = -np.log((1 - x) * (1 + x))
        central = _horner(_CENTRAL, w - x.dtype.type(2.5))
        tail = _horner(_TAIL, np.sqrt(w) - x.dtype.type(3.0))
    out = np.where(w < 5, central, tail) * x
    return np.where(np.abs(x) == 1, np.copysign(np.inf, x), out).astype(x.dtype)


erf_inv_p = unop(same_dtype, FLOAT, "erf_inv", _erf_inv_impl)


def erf_inv(x: Any) -> Any:
    """Elementwise inverse error function (JAX: lax.erf_inv)."""
    return erf_inv_p.bind(x)


def _erf_inv_jvp(g: Any, ans: Any, x: Any) -> Any:
    # d/dx erfinv(x) = sqrt(pi)/2 * exp(erfinv(x)^2)
    return lax.mul(g, lax.mul(const(x, np.sqrt(np.pi) / 2), lax.exp(lax.mul(ans, ans))))


def _erf_inv_lowering(ctx: LoweringRuleContext, x: ir.Value, **params: Any) -> list[ir.Value]:
    return [hlo.chlo("erf_inv", x)]  # XLA expands it into the same polynomial


defjvp2(erf_inv_p, _erf_inv_jvp)
defvectorized(erf_inv_p)
register_lowering(erf_inv_p, _erf_inv_lowering)


# erfc(x) = 1 - erf(x), without the cancellation 1 - erf(x) suffers for large x
_erfc = np.vectorize(math.erfc, otypes=[np.float64])
erfc_p = unop(same_dtype, FLOAT, "erfc", lambda x: _erfc(x).astype(np.asarray(x).dtype))


def erfc(x: Any) -> Any:
    """Elementwise complementary error function (JAX: lax.erfc)."""
    return erfc_p.bind(x)


def _erfc_jvp(g: Any, x: Any) -> Any:
    # d/dx erfc(x) = -2/sqrt(pi) * exp(-x^2)
    return lax.mul(const(x, -2 / np.sqrt(np.pi)), lax.mul(g, lax.exp(lax.neg(lax.mul(x, x)))))


defjvp(erfc_p, _erfc_jvp)
defvectorized(erfc_p)
register_lowering(erfc_p, lambda ctx, x, **params: [hlo.chlo("erfc", x)])
