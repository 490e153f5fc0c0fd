"""The user-facing transforms: jvp, linearize, vjp, grad, value_and_grad, linear_transpose.

JAX: the autodiff half of jax/_src/api.py. Each one flattens its arguments' pytrees, calls the
machinery of ad.py on flat lists, and checks what JAX checks, with JAX's messages."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from stages.s01_pytrees import (
    PyTreeDef,
    equality_errors_pytreedef,
    keystr,
    register_pytree_node,
    tree_flatten,
    tree_leaves,
    tree_map,
    tree_unflatten,
)
from stages.s02_tracing import core, dtypes, lax
from stages.s02_tracing import linear_util as lu
from stages.s02_tracing.api_util import (
    argnums_partial2,
    check_arg,
    check_callable,
    debug_info,
    ensure_index,
    flatten_fun_nokwargs,
    wraps,
)
from stages.s02_tracing.core import ClosedJaxpr, ShapedArray

from . import ad
from .ad_util import (
    Zero,
    float0,
    instantiate,
    primal_dtype_to_tangent_dtype,
    tangent_aval,
)


@lu.transformation_with_aux2
def flatten_fun_nokwargs2(f: Callable, store: lu.Store, in_tree: PyTreeDef, *args_flat: Any
                          ) -> tuple[list[Any], list[Any]]:
    """flatten_fun_nokwargs for `f` returning (out, aux): stores (out_tree, aux_tree)."""
    pair = f(*tree_unflatten(in_tree, args_flat))
    if not isinstance(pair, (list, tuple)) or len(pair) != 2:
        raise TypeError("expected function with aux output to return a two-element tuple, but "
                        f"got type {type(pair)} with value {pair!r}")
    ans, aux = pair
    ans_flat, ans_tree = tree_flatten(ans)
    aux_flat, aux_tree = tree_flatten(aux)
    store.store((ans_tree, aux_tree))
    return ans_flat, aux_flat


def _tangent_type(x: Any) -> ShapedArray:
    """The aval of a tangent or cotangent: like core.get_aval, but float0 arrays are allowed."""
    if isinstance(x, np.ndarray) and x.dtype == float0:
        return ShapedArray(x.shape, float0)
    return core.get_aval(x)


# ------------------------------------------------------------------ jvp


# --8<-- [start:jvp]
def jvp(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any], has_aux: bool = False
        ) -> tuple[Any, ...]:
    """(fun(*primals), the derivative of fun at primals applied to tangents), over pytrees."""
    check_callable(fun)
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("primal and tangent arguments to jax.jvp must be tuples or lists; "
                        f"found {type(primals).__name__} and {type(tangents).__name__}.")
    ps_flat, tree_def = tree_flatten(primals)
    ts_flat, tree_def_2 = tree_flatten(tangents)
    if tree_def != tree_def_2:
        raise TypeError("primal and tangent arguments to jax.jvp must have the same tree "
                        f"structure; primals have tree structure {tree_def} whereas tangents "
                        f"have tree structure {tree_def_2}.")
    for p, t in zip(ps_flat, ts_flat, strict=True):
        p_dtype, t_dtype = core.get_aval(p).dtype, _tangent_type(t).dtype
        expected = primal_dtype_to_tangent_dtype(p_dtype)
        if expected != t_dtype:
            # float0 shows as numpy prints it, [('float0', 'V')], as in JAX's text
            raise TypeError(
                "primal and tangent arguments to jax.jvp do not match; dtypes must be equal, "
                "or in case of int/bool primal dtype the tangent dtype must be float0."
                f"Got primal dtype {p_dtype} and so expected tangent dtype "
                f"{expected}, but got tangent dtype {t_dtype} instead.")
        if np.shape(p) != np.shape(t):
            raise ValueError("jvp called with different primal and tangent shapes;"
                             f"Got primal shape {np.shape(p)} and tangent shape as {np.shape(t)}")
    # a float0 tangent carries no data: it enters as a symbolic Zero
    ts_flat = [Zero(_tangent_type(t)) if _tangent_type(t).dtype == float0 else t
               for t in ts_flat]
    dbg = debug_info("jvp", fun, tuple(primals), {})
    f = lu.wrap_init(fun, debug_info=dbg)
    if has_aux:
        flat_fun, out_trees = flatten_fun_nokwargs2(f, tree_def)
        jvp_fun, aux = ad.jvp(flat_fun, has_aux=True)
        out_primals, out_tangents = jvp_fun.call_wrapped(ps_flat, ts_flat)
        out_tree, aux_tree = out_trees()
        return (tree_unflatten(out_tree, out_primals), tree_unflatten(out_tree, out_tangents),
                tree_unflatten(aux_tree, aux()))
    flat_fun, out_tree = flatten_fun_nokwargs(f, tree_def)
    out_primals, out_tangents = ad.jvp(flat_fun).call_wrapped(ps_flat, ts_flat)
    return (tree_unflatten(out_tree(), out_primals), tree_unflatten(out_tree(), out_tangents))
# --8<-- [end:jvp]


# ------------------------------------------------------------------ linearize


class LinearizedFunction:
    """The f_jvp `linearize` returns: a linear jaxpr whose constants are the residuals."""

    # JAX: a tree_util.Partial over api._lift_linearized, its residuals as the Partial's args
    def __init__(self, jaxpr: ClosedJaxpr, in_tree: PyTreeDef, in_avals: list[ShapedArray],
                 out_tree: PyTreeDef, tangents_out: list[Any]):
        self.jaxpr = jaxpr
        self.in_tree, self.in_avals = in_tree, in_avals
        self.out_tree, self.tangents_out = out_tree, tangents_out

    residuals = property(lambda self: self.jaxpr.consts)

    def __call__(self, *tangents: Any) -> Any:
        ts_flat, tree = tree_flatten(tangents)
        if tree != self.in_tree:
            raise TypeError(f"expected {self.in_tree}, got {tree}")
        for t, aval in zip(ts_flat, self.in_avals, strict=True):
            expected, got = tangent_aval(aval), _tangent_type(t)
            if expected.shape != got.shape or expected.dtype != got.dtype:
                # JAX's expected type keeps the primal's weak type, float0 too: `~float0[]`
                got_str = ("~" if got.weak_type else "") + got.str_short()
                raise ValueError(
                    "linearized function called on tangent values inconsistent with the "
                    f"original primal values:\nGot tangent aval {got_str} for primal aval "
                    f"{aval} but expected {'~' if aval.weak_type else ''}"
                    f"{expected.str_short()}.")
        linear_in = [t for t, a in zip(ts_flat, self.in_avals, strict=True)
                     if tangent_aval(a).dtype != float0]
        outs = iter(core.eval_jaxpr(self.jaxpr.jaxpr, self.jaxpr.consts, *linear_in))
        tangents_out = [next(outs) if t is None else instantiate(t) for t in self.tangents_out]
        return tree_unflatten(self.out_tree, tangents_out)


def _linearize(fun: Callable, primals: Sequence[Any], has_aux: bool, traced_for: str):
    primals_flat, in_tree = tree_flatten(tuple(primals))
    for i, p in enumerate(primals_flat):  # a TypeError naming the value if it is not an array
        if traced_for == "vjp" and not isinstance(p, np.ndarray):
            check_arg(p)  # JAX's vjp words a non-array this way, a bad numpy dtype as get_aval
        core.get_aval(p)  # and JAX's vjp (so grad) canonicalizes: a float64 input is float32
        primals_flat[i] = dtypes.canonicalize_value(p) if traced_for == "vjp" else p
    f = lu.wrap_init(fun, debug_info=debug_info(traced_for, fun, tuple(primals), {}))
    if has_aux:
        flat_fun, out_trees = flatten_fun_nokwargs2(f, in_tree)
        outs, tangents_out, linear, aux = ad.linearize(flat_fun, *primals_flat, has_aux=True)
        out_tree, aux_tree = out_trees()
        aux = tree_unflatten(aux_tree, aux)
    else:
        flat_fun, out_tree_thunk = flatten_fun_nokwargs(f, in_tree)
        outs, tangents_out, linear = ad.linearize(flat_fun, *primals_flat)
        out_tree, aux = out_tree_thunk(), None
    in_avals = [core.get_aval(p) for p in primals_flat]
    return outs, out_tree, LinearizedFunction(linear, in_tree, in_avals, out_tree,
                                              tangents_out), aux, f.debug_info


def linearize(fun: Callable, *primals: Any, has_aux: bool = False) -> tuple[Any, ...]:
    """(fun(*primals), f_jvp) where f_jvp(*tangents) is the jvp at primals, from a jaxpr."""
    check_callable(fun)
    outs, out_tree, f_jvp, aux, _ = _linearize(fun, primals, has_aux, "linearize")
    out = tree_unflatten(out_tree, outs)
    return (out, f_jvp, aux) if has_aux else (out, f_jvp)


# ------------------------------------------------------------------ vjp


class VJP:
    """The f_vjp `vjp` returns: cotangents of the outputs in, of the inputs out."""

    # JAX: api.VJP (a dataclass over the same linear jaxpr and residuals)
    def __init__(self, f_jvp: LinearizedFunction, primal_out_avals: list[ShapedArray],
                 dbg: lu.DebugInfo | None):
        self.f_jvp, self.primal_out_avals, self.debug_info = f_jvp, primal_out_avals, dbg

    jaxpr = property(lambda self: self.f_jvp.jaxpr)
    residuals = property(lambda self: self.f_jvp.residuals)

    # --8<-- [start:vjp_call]
    def __call__(self, out_ct: Any, *extra_args: Any) -> tuple[Any, ...]:
        if extra_args:
            name = self.debug_info.func_name if self.debug_info else "<unknown>"
            raise TypeError(_VJP_TOO_MANY_ARGS.format(name, len(extra_args) + 1))
        f_jvp = self.f_jvp
        cts_flat, ct_tree = tree_flatten(out_ct)
        if ct_tree != f_jvp.out_tree:
            where = self.debug_info.func_src_info if self.debug_info else "<unknown>"
            raise ValueError(
                "unexpected tree structure.\n\nThe argument to a VJP function returned by "
                "`jax.vjp` must match the pytree\nstructure of the differentiated function "
                f"{where}.\n\nBut the tree structures differ:\n" + "\n".join(
                    f"  * out{keystr(p)} was a {a} in the original output, but a {b} here, so "
                    f"{why}." for p, a, b, why in equality_errors_pytreedef(f_jvp.out_tree,
                                                                            ct_tree)))
        for ct_leaf, aval in zip(cts_flat, self.primal_out_avals, strict=True):
            got, expected = _tangent_type(ct_leaf), tangent_aval(aval)
            if got.shape != expected.shape or got.dtype != expected.dtype != float0:  # JAX's
                raise ValueError(
                    "unexpected JAX type (e.g. shape/dtype) for argument to VJP function: got "
                    f"{got.str_short()}, but expected {expected.str_short()} because the "
                    "corresponding output of the differentiated function had JAX type "
                    f"{aval.str_short()}")
        # only the outputs the linear jaxpr computes take part; the rest had zero tangents
        linear_cts = [c for c, t in zip(cts_flat, f_jvp.tangents_out, strict=True) if t is None]
        linear = f_jvp.jaxpr
        undefined = [ad.UndefinedPrimal(v.aval) for v in linear.jaxpr.invars]
        cts_in = iter(ad.backward_pass(linear.jaxpr, linear.consts, undefined, linear_cts))
        arg_cts = [instantiate(next(cts_in)) if tangent_aval(a).dtype != float0
                   else np.zeros(a.shape, float0) for a in f_jvp.in_avals]
        return tree_unflatten(f_jvp.in_tree, arg_cts)
    # --8<-- [end:vjp_call]


# JAX: api._vjp_too_many_args
_VJP_TOO_MANY_ARGS = """
The function returned by `jax.vjp` applied to {} was called with {} arguments,
but functions returned by `jax.vjp` must be called with a single argument
corresponding to the single value returned by the function being differentiated
(even if that returned value is a tuple or other container).

For example, if we have:

  def f(x):
    return (x, x)
  _, f_vjp = jax.vjp(f, 1.0)

the function `f` returns a single tuple as output, and so we call `f_vjp` with a
single tuple as its argument:

  x_bar, = f_vjp((2.0, 2.0))

If we instead call `f_vjp(2.0, 2.0)`, with the values 'splatted out' as
arguments rather than in a tuple, this error can arise.
"""


# Both are pytrees, as JAX's are (a tree_util.Partial and api.VJP): their leaves are the
# residuals and the known output tangents, so a transformation can return them.
def _flatten_linearized(f: LinearizedFunction) -> tuple[list[Any], tuple]:
    known = [t for t in f.tangents_out if t is not None and type(t) is not Zero]
    pattern = [t if t is None or type(t) is Zero else True for t in f.tangents_out]
    return [*f.residuals, *known], (f.jaxpr.jaxpr, len(f.residuals), f.in_tree, f.in_avals,
                                    f.out_tree, pattern)


def _unflatten_linearized(aux: tuple, leaves: Any) -> LinearizedFunction:
    jaxpr, num_res, in_tree, in_avals, out_tree, pattern = aux
    leaves = list(leaves)
    known = iter(leaves[num_res:])
    tangents_out = [next(known) if t is True else t for t in pattern]
    return LinearizedFunction(ClosedJaxpr(jaxpr, leaves[:num_res]), in_tree, in_avals, out_tree,
                              tangents_out)


register_pytree_node(LinearizedFunction, _flatten_linearized, _unflatten_linearized)
register_pytree_node(
    VJP, lambda f: ((f.f_jvp,), (f.primal_out_avals, f.debug_info)),
    lambda aux, children: VJP(children[0], *aux))


def vjp(fun: Callable, *primals: Any, has_aux: bool = False) -> tuple[Any, ...]:
    """(fun(*primals), f_vjp): f_vjp(ct) is the vector-Jacobian product at primals."""
    check_callable(fun)
    outs, out_tree, f_jvp, aux, dbg = _linearize(fun, primals, has_aux, "vjp")
    f_vjp = VJP(f_jvp, [core.get_aval(o) for o in outs], dbg)
    out = tree_unflatten(out_tree, outs)
    return (out, f_vjp, aux) if has_aux else (out, f_vjp)


# ------------------------------------------------------------------ grad


def check_input_dtype_revderiv(name: str, holomorphic: bool, allow_int: bool, x: Any) -> None:
    """A reverse-mode input must be a float or complex (int or bool only with allow_int);
    complex when `holomorphic`."""
    check_arg(x)
    dtype = core.get_aval(x).dtype
    if holomorphic and not dtypes.issubdtype(dtype, np.complexfloating):
        raise TypeError(f"{name} with holomorphic=True requires inputs with complex dtype, "
                        f"but got {dtype.name}.")
    if dtypes.issubdtype(dtype, np.integer) or dtype == np.bool_:
        if not allow_int:
            raise TypeError(
                f"{name} requires real- or complex-valued inputs (input dtype that is a "
                f"sub-dtype of np.inexact), but got {dtype.name}. If you want to use Boolean- "
                "or integer-valued inputs, use vjp or set allow_int to True.")
    elif not dtypes.issubdtype(dtype, np.inexact):
        raise TypeError(f"{name} requires numerical-valued inputs (input dtype that is a "
                        f"sub-dtype of np.bool_ or np.number), but got {dtype.name}.")


_check_input_dtype_grad = functools.partial(check_input_dtype_revderiv, "grad")


def _check_scalar(x: Any) -> None:
    msg = "Gradient only defined for scalar-output functions. Output {}.".format
    try:
        aval = core.get_aval(x)
    except TypeError as e:
        raise TypeError(msg(f"was {x}")) from e
    if aval.shape != ():
        raise TypeError(msg(f"had shape: {aval.shape}"))


def check_output_dtype_revderiv(name: str, holomorphic: bool, x: Any) -> None:
    """A reverse-mode output must be a real float (complex when `holomorphic`): the cotangent
    1 is seeded in its dtype."""
    dtype = core.get_aval(x).dtype
    if holomorphic:
        if not dtypes.issubdtype(dtype, np.complexfloating):
            raise TypeError(f"{name} with holomorphic=True requires outputs with complex "
                            f"dtype, but got {dtype.name}.")
    elif dtypes.issubdtype(dtype, np.complexfloating):
        raise TypeError(
            f"{name} requires real-valued outputs (output dtype that is a sub-dtype of "
            f"np.floating), but got {dtype.name}. For holomorphic differentiation, pass "
            "holomorphic=True. For differentiation of non-holomorphic functions involving "
            "complex outputs, use jax.vjp directly.")
    elif not dtypes.issubdtype(dtype, np.floating):
        raise TypeError(
            f"{name} requires real-valued outputs (output dtype that is a sub-dtype of "
            f"np.floating), but got {dtype.name}. For differentiation of functions with "
            "integer outputs, use jax.vjp directly.")


_check_output_dtype_grad = functools.partial(check_output_dtype_revderiv, "grad")


def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   holomorphic: bool = False, allow_int: bool = False) -> Callable:
    """A function returning (fun(*args), its gradient w.r.t. the arguments at argnums)."""
    check_callable(fun)
    argnums = ensure_index(argnums)  # a numpy integer is an index too
    argnums_t = (argnums,) if isinstance(argnums, int) else argnums

    # --8<-- [start:value_and_grad]
    @wraps(fun, docstr="Value and gradient of {fun} with respect to positional argument(s) "
           "{argnums}.", argnums=argnums)
    def value_and_grad_f(*args: Any, **kwargs: Any) -> Any:
        if max(argnums_t) >= len(args):
            raise TypeError(
                f"differentiating with respect to argnums={argnums} requires at least "
                f"{max(argnums_t) + 1} positional arguments to be passed by the caller, but "
                f"got only {len(args)} positional arguments.")
        # EXERCISE 4.6 (grad-from-vjp): vjp at the chosen arguments, then pull back a 1.0
        f_partial, dyn_args = argnums_partial2(fun, argnums_t, args, kwargs)
        for leaf in tree_leaves(dyn_args):
            _check_input_dtype_grad(holomorphic, allow_int, leaf)
        if has_aux:
            ans, f_vjp, aux = vjp(f_partial, *dyn_args, has_aux=True)
        else:
            ans, f_vjp = vjp(f_partial, *dyn_args)
        _check_scalar(ans)
        tree_map(functools.partial(_check_output_dtype_grad, holomorphic), ans)
        g = f_vjp(lax.full_like(ans, 1, shape=()))  # weak if ans is (JAX: _one_vjp)
        g = g[0] if isinstance(argnums, int) else g
        return ((ans, aux) if has_aux else ans), g
        # END EXERCISE
    # --8<-- [end:value_and_grad]

    return value_and_grad_f


def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
         holomorphic: bool = False, allow_int: bool = False) -> Callable:
    """A function returning the gradient of scalar-valued `fun` w.r.t. its arguments at
    `argnums` (with has_aux: the gradient and fun's auxiliary output). With holomorphic, a
    complex function of complex inputs: its derivative f'(z)."""
    value_and_grad_f = value_and_grad(fun, argnums, has_aux=has_aux, holomorphic=holomorphic,
                                      allow_int=allow_int)

    @wraps(fun, docstr="Gradient of {fun} with respect to positional argument(s) {argnums}.",
           argnums=argnums)
    def grad_f(*args: Any, **kwargs: Any) -> Any:
        ans_aux, g = value_and_grad_f(*args, **kwargs)
        return (g, ans_aux[1]) if has_aux else g

    return grad_f


from .api_transpose import linear_transpose  # noqa: E402, F401  (JAX: in api.py too)
