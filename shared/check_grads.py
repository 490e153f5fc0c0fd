"""check_grads: derivatives from autodiff against finite differences, at first and higher order.

JAX: jax/_src/public_test_util.py (`check_grads`, `check_jvp`, `check_vjp`, `numerical_jvp`),
with the same signature and the same checks, run on stage 4's `jvp` and `vjp`:

- "fwd": jvp(f)(x; t) equals the central difference (f(x + eps t) - f(x - eps t)) / 2 eps
  for a random direction t;
- "rev": for random t and a random output cotangent c, <c, J t> equals <J^T c, t>, with J t
  again from finite differences, so vjp is checked against the same numbers;
- order 2 checks the jvp and the vjp of the functions those build (grad of grad), and so on.

Differences from JAX: everything here is float32 (the course has no x64 mode), so the default
step is 1e-2, not 1e-4 (a float64 step), and the default tolerance is 1e-2.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from stages.s01_pytrees import tree_flatten, tree_map
from stages.s04_autodiff import jvp, vjp

EPS = 1e-2
TOL = 1e-2


def _is_float(x: Any) -> bool:
    return np.issubdtype(np.asarray(x).dtype, np.floating)


def _rand_like(rng: np.random.RandomState, x: Any) -> Any:
    """A random tangent for x: float32 noise for a float, nothing (float0) for an int."""
    if not _is_float(x):
        return np.zeros(np.shape(x), np.dtype([("float0", np.void, 0)]))
    return rng.standard_normal(np.shape(x)).astype(np.asarray(x).dtype)


def _axpy(a: float, xs: Any, ys: Any) -> Any:
    """a * x + y leafwise, on float leaves (int leaves stay as y)."""
    return tree_map(lambda x, y: (np.asarray(y) + a * np.asarray(x)).astype(np.asarray(y).dtype)
                    if _is_float(y) else y, xs, ys)


def numerical_jvp(f: Callable, primals: Sequence[Any], tangents: Sequence[Any],
                  eps: float = EPS) -> Any:
    """The central difference of f at primals in the direction tangents."""
    f_pos = f(*_axpy(eps, tangents, primals))
    f_neg = f(*_axpy(-eps, tangents, primals))
    return tree_map(lambda p, n: (np.asarray(p, np.float64) - np.asarray(n, np.float64))
                    * (0.5 / eps) if _is_float(p) else None, f_pos, f_neg)


def _inner_prod(xs: Any, ys: Any) -> float:
    x_leaves, _ = tree_flatten(xs, is_leaf=lambda x: x is None)
    y_leaves, _ = tree_flatten(ys, is_leaf=lambda x: x is None)
    total = 0.0
    for x, y in zip(x_leaves, y_leaves, strict=True):
        if x is not None and y is not None and _is_float(x) and _is_float(y):
            total += float(np.sum(np.asarray(x, np.float64) * np.asarray(y, np.float64)))
    return total


def _assert_close(got: Any, want: Any, atol: float, rtol: float, err_msg: str) -> None:
    got_leaves, _ = tree_flatten(got, is_leaf=lambda x: x is None)
    want_leaves, _ = tree_flatten(want, is_leaf=lambda x: x is None)
    for g, w in zip(got_leaves, want_leaves, strict=True):
        if w is None or not _is_float(g):
            continue
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64),
                                   atol=atol, rtol=rtol, err_msg=err_msg)


def check_jvp(f: Callable, f_jvp: Callable, args: Sequence[Any], atol: float = TOL,
              rtol: float = TOL, eps: float = EPS, err_msg: str = "") -> None:
    """f_jvp(args, t) against f(*args) and the finite difference in a random direction t."""
    rng = np.random.RandomState(0)
    tangent = tree_map(partial(_rand_like, rng), tuple(args))
    v_out, t_out = f_jvp(tuple(args), tangent)
    _assert_close(v_out, f(*args), atol, rtol, f"{err_msg} primal")
    _assert_close(t_out, numerical_jvp(f, args, tangent, eps), atol, rtol, f"{err_msg} tangent")


def check_vjp(f: Callable, f_vjp: Callable, args: Sequence[Any], atol: float = TOL,
              rtol: float = TOL, eps: float = EPS, err_msg: str = "") -> None:
    """<c, J t> (finite differences) against <J^T c, t> (f_vjp) for random t and c."""
    rng = np.random.RandomState(0)
    v_out, vjpfun = f_vjp(*args)
    _assert_close(v_out, f(*args), atol, rtol, f"{err_msg} primal")
    tangent = tree_map(partial(_rand_like, rng), tuple(args))
    tangent_out = numerical_jvp(f, args, tangent, eps)
    cotangent = tree_map(partial(_rand_like, rng), v_out)
    cotangent_out = vjpfun(cotangent)
    ip = _inner_prod(tangent, cotangent_out)
    ip_expected = _inner_prod(tangent_out, cotangent)
    np.testing.assert_allclose(ip, ip_expected, atol=atol, rtol=rtol,
                               err_msg=f"{err_msg} cotangent projection")


def check_grads(f: Callable, args: Sequence[Any], order: int,
                modes: Sequence[str] = ("fwd", "rev"), atol: float | None = None,
                rtol: float | None = None, eps: float | None = None) -> None:
    """Check f's derivatives up to `order` against finite differences (AssertionError if not)."""
    args = tuple(args)
    atol = TOL if atol is None else atol
    rtol = TOL if rtol is None else rtol
    eps = eps or EPS

    def _check_grads(f: Callable, args: tuple, order: int, err_msg: str = "") -> None:
        if "fwd" in modes:
            fwd_msg = f"JVP of {err_msg}" if err_msg else "JVP"
            check_jvp(f, partial(jvp, f), args, atol, rtol, eps, fwd_msg)
            if order > 1:
                _check_grads(partial(jvp, f), (args, args), order - 1, fwd_msg)
        if "rev" in modes:
            rev_msg = f"VJP of {err_msg}" if err_msg else "VJP"
            check_vjp(f, partial(vjp, f), args, atol, rtol, eps, rev_msg)
            if order > 1:
                def f_vjp(*args: Any) -> Any:
                    out, vjp_fun = vjp(f, *args)
                    return vjp_fun(out)

                _check_grads(f_vjp, args, order - 1, rev_msg)

    _check_grads(f, args, order)


__all__ = ["check_grads", "check_jvp", "check_vjp", "numerical_jvp"]
