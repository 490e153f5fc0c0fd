"""The running reductions, reduce_prod and associative_scan against jax.lax: values, printed
jaxprs, and their rules (jvp, grad, vmap); lowered by stage 8 and run by jaxlib."""

from __future__ import annotations

import re
from types import SimpleNamespace

import jax
import numpy as np
import pytest

import stages.s02_tracing as s02
import stages.s04_autodiff as s04
import stages.s05_vmap as s05
import stages.s08_lowering as s08
from shared.testing import RTOL_REDUCTION, assert_same_typed_values
from shared.xla_runner import run_text

OURS = SimpleNamespace(lax=s02.lax, jnp=s02.numpy, make_jaxpr=s02.make_jaxpr, jvp=s04.jvp,
                       grad=s04.grad, vmap=s05.vmap)
THEIRS = SimpleNamespace(lax=jax.lax, jnp=jax.numpy, make_jaxpr=jax.make_jaxpr, jvp=jax.jvp,
                         grad=jax.grad, vmap=jax.vmap)

_rng = np.random.default_rng(24)
X = _rng.uniform(0.5, 1.5, (4, 7)).astype(np.float32) * np.sign(_rng.standard_normal((4, 7))) \
    .astype(np.float32)
T = _rng.standard_normal((4, 7)).astype(np.float32)
XB = np.stack([X, T, X * T], axis=2)  # three examples, batched along the last axis

CASES = {
    "cumsum_reverse": lambda ns: lambda x: ns.lax.cumsum(x, 1, reverse=True),
    "cumprod": lambda ns: lambda x: ns.lax.cumprod(x, 1),
    "cumprod_reverse": lambda ns: lambda x: ns.lax.cumprod(x, 0, reverse=True),
    "cummax": lambda ns: lambda x: ns.lax.cummax(x, 1),
    "cummin_reverse": lambda ns: lambda x: ns.lax.cummin(x, 1, reverse=True),
    "cumlogsumexp": lambda ns: lambda x: ns.lax.cumlogsumexp(x, 1),
    "reduce_prod": lambda ns: lambda x: ns.lax.reduce_prod(x, (1,)),
    "reduce_prod_all": lambda ns: lambda x: ns.lax.reduce_prod(x, (0, 1)),
    "scan_add": lambda ns: lambda x: ns.lax.associative_scan(ns.lax.add, x, axis=1),
    "scan_max_reverse": lambda ns: lambda x: ns.lax.associative_scan(ns.lax.max, x,
                                                                     reverse=True),
    "scan_pytree": lambda ns: lambda x: ns.lax.associative_scan(
        lambda a, b: (a[0] * b[0], a[1] * b[0] + b[1]), (x, 2 * x), axis=1),
    "scan_odd_length": lambda ns: lambda x: ns.lax.associative_scan(ns.lax.mul, x[:, :5],
                                                                    axis=1),
    "jnp_prod": lambda ns: lambda x: ns.jnp.prod(x, axis=1),
    "jnp_cumprod": lambda ns: lambda x: ns.jnp.cumprod(x, axis=-1),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_values_match_jax(case):
    assert_same_typed_values(CASES[case](OURS)(X), CASES[case](THEIRS)(X), rtol=RTOL_REDUCTION)


def _summed(f):
    """f's outputs summed to one number: what grad differentiates."""
    def g(x):
        out = f(x)
        return sum(l.sum() for l in (out if isinstance(out, tuple) else (out,)))
    return g


TRANSFORMS = {
    "plain": lambda ns, f: f,
    "jvp": lambda ns, f: lambda x: ns.jvp(f, (x,), (x,)),
    "grad": lambda ns, f: ns.grad(_summed(f)),
}


# jnp.cumprod is left out: JAX wraps it in a jit of its own, which ours inlines (page 2 says so)
@pytest.mark.parametrize("width", [7, 6, 4], ids=["odd", "even", "power_of_two"])
@pytest.mark.parametrize("transform", sorted(TRANSFORMS))
@pytest.mark.parametrize("case", sorted(set(CASES) - {"jnp_cumprod"}))
def test_jaxpr_prints_as_jax(case, transform, width):
    # an even length at some level of associative_scan's recursion orders its slices as
    # JAX's does; reduce_prod's jvp multiplies halves, as JAX's _reduce_jvp
    ours, theirs = (TRANSFORMS[transform](ns, CASES[case](ns)) for ns in (OURS, THEIRS))
    x = X[:, :width]
    assert str(OURS.make_jaxpr(ours)(x)) == str(THEIRS.make_jaxpr(theirs)(x))


@pytest.mark.parametrize("case", sorted(CASES))
def test_jvp_matches_jax(case):
    def run(ns):
        return ns.jvp(CASES[case](ns), (X,), (T,))
    assert_same_typed_values(run(OURS), run(THEIRS), rtol=RTOL_REDUCTION, atol=1e-5)


@pytest.mark.parametrize("case", sorted(CASES))
def test_vmap_of_grad_matches_jax(case):
    def run(ns):
        f = CASES[case](ns)

        def loss(x):
            return sum((y * y).sum() for y in jax.tree_util.tree_leaves(f(x)))
        return ns.vmap(ns.grad(loss), in_axes=2, out_axes=1)
    # JAX's side under jax.jit: one XLA compile, where its eager ops compile one by one (~10x)
    assert_same_typed_values(run(OURS)(XB), jax.jit(run(THEIRS))(XB), rtol=RTOL_REDUCTION,
                             atol=1e-5)


@pytest.mark.parametrize("case", ["cumprod", "cummax", "cummin_reverse", "cumlogsumexp",
                                  "reduce_prod"])
def test_lowered_module_runs_to_jaxs_values(case):
    text = s08.lower_jaxpr(OURS.make_jaxpr(CASES[case](OURS))(X), "f").as_text()
    np.testing.assert_allclose(run_text(text, [X])[0], jax.jit(CASES[case](THEIRS))(X),
                               rtol=RTOL_REDUCTION)


# imaginary parts past pi: logaddexp wraps them into [-pi, pi], the first element's too
XC = (X * 3 + 1j * np.flip(X, 1) * 4).astype(np.complex64)


@pytest.mark.parametrize("axis, reverse", [(1, False), (1, True), (0, True)])
def test_complex_cumlogsumexp_is_jaxs_eager_and_lowered(axis, reverse):
    f = lambda ns: lambda x: ns.lax.cumlogsumexp(x, axis, reverse=reverse)
    theirs = jax.jit(f(THEIRS))(XC)
    assert_same_typed_values(f(OURS)(XC), theirs, rtol=RTOL_REDUCTION, atol=1e-5)
    text = s08.lower_jaxpr(OURS.make_jaxpr(f(OURS))(XC), "f").as_text()
    np.testing.assert_allclose(run_text(text, [XC])[0], theirs, rtol=RTOL_REDUCTION, atol=1e-5)
    assert str(OURS.make_jaxpr(f(OURS))(XC)) == \
        str(THEIRS.make_jaxpr(f(THEIRS))(XC))


S = np.array([[3.0, np.nan, -0.0, 0.0, 1.0, -2.0, 1.0], [2.0, 2.0, 1.0, -1.0, 0.5, 7.0, 3.0]],
             np.float32)
SORTS = {
    "jnp_sort": lambda ns: lambda x: ns.jnp.sort(x),
    "jnp_sort_axis0": lambda ns: lambda x: ns.jnp.sort(x, axis=0),
    "jnp_argsort": lambda ns: lambda x: ns.jnp.argsort(x),
    "jnp_argsort_flat": lambda ns: lambda x: ns.jnp.argsort(x, axis=None),
    "lax_sort_two_keys": lambda ns: lambda x: ns.lax.sort((x[0], x[1], x[0] * 2), num_keys=2),
    "jnp_sort_descending": lambda ns: lambda x: ns.jnp.sort(x, descending=True),
    "jnp_sort_descending_flat": lambda ns: lambda x: ns.jnp.sort(x, axis=None, descending=True),
    "jnp_argsort_descending": lambda ns: lambda x: ns.jnp.argsort(x, descending=True),
    "jnp_argsort_descending_axis0": lambda ns: lambda x: ns.jnp.argsort(x, axis=0,
                                                                        descending=True),
    "lax_rev": lambda ns: lambda x: ns.lax.rev(x, (0, 1)),
}
# the unstable descending argsort skips the reversals that keep ties in first-come order
UNSTABLE = {"jnp_argsort_descending_unstable":
            lambda ns: lambda x: ns.jnp.argsort(x, descending=True, stable=False)}


@pytest.mark.parametrize("case", sorted(SORTS))
def test_sort_values_match_jax(case):
    assert_same_typed_values(SORTS[case](OURS)(S), SORTS[case](THEIRS)(S))


def test_sort_jaxpr_prints_as_jax():
    def f(ns):
        return lambda x: ns.lax.sort((x, x * 2), num_keys=1)
    assert str(OURS.make_jaxpr(f(OURS))(X)) == str(THEIRS.make_jaxpr(f(THEIRS))(X))


@pytest.mark.parametrize("case", sorted({**SORTS, **UNSTABLE}))
def test_jnp_sort_jaxprs_print_as_jax(case):
    # JAX wraps jnp.sort and argsort in jit; disable_jit inlines them as ours are written
    f = {**SORTS, **UNSTABLE}[case]
    with jax.disable_jit():
        want = str(THEIRS.make_jaxpr(f(THEIRS))(S))
    assert str(OURS.make_jaxpr(f(OURS))(S)) == want


def test_unstable_descending_argsort_of_distinct_keys_matches_jax():
    f = UNSTABLE["jnp_argsort_descending_unstable"]
    assert_same_typed_values(f(OURS)(X), f(THEIRS)(X))


def test_rev_shape_errors_match_jax():
    for dims in [(1, 1), (2,)]:
        with pytest.raises(TypeError) as theirs:
            jax.lax.rev(X, dims)
        with pytest.raises(TypeError, match=re.escape(str(theirs.value))):
            OURS.lax.rev(X, dims)


def test_sort_of_unbatched_operands_under_vmap_of_jvp_matches_jax():
    # vmap over tangents only: the jvp rule's sort of the primals sees nothing batched
    def run(ns):
        return ns.vmap(lambda t: ns.jvp(lambda x: ns.jnp.sort(x, descending=True), (S,),
                                        (t,)))(np.stack([S, 2 * S]))
    assert_same_typed_values(run(OURS), run(THEIRS))


@pytest.mark.parametrize("case", ["jnp_sort", "jnp_sort_axis0", "jnp_sort_descending",
                                  "lax_rev"])
def test_sort_derivatives_and_batching_match_jax(case):
    def run(ns):
        f = SORTS[case](ns)
        jvp = ns.jvp(f, (X,), (T,))
        grads = ns.vmap(ns.grad(lambda x: (f(x) * X).sum()), in_axes=2, out_axes=2)(XB)
        return jvp, grads
    assert_same_typed_values(run(OURS), run(THEIRS), rtol=RTOL_REDUCTION)


@pytest.mark.parametrize("case", sorted(SORTS))
def test_lowered_sort_runs_to_jaxs_values(case):
    text = s08.lower_jaxpr(OURS.make_jaxpr(SORTS[case](OURS))(S), "f").as_text()
    want = jax.tree_util.tree_leaves(jax.jit(SORTS[case](THEIRS))(S))
    for got, w in zip(run_text(text, [S]), want, strict=True):
        np.testing.assert_array_equal(got, np.asarray(w))


def test_associative_scan_refuses_what_is_not_a_function_as_jax_does():
    for ns in (OURS, THEIRS):
        with pytest.raises(TypeError) as info:
            ns.lax.associative_scan(3, X)
        assert str(info.value) == "lax.associative_scan: fn argument should be callable."


A6 = np.arange(6, dtype=np.float32)
ASSOCIATIVE = {  # only fn's leaves count, as in JAX; the axis is canonicalized after rev
    "a list for a tuple": lambda ns: ns.lax.associative_scan(
        lambda a, b: [a[0] + b[0], a[1] * b[1]], (A6, A6)),
    "a tuple for a dict": lambda ns: ns.lax.associative_scan(
        lambda a, b: (a["x"] + b["x"],), {"x": A6}),
    "two leaves for one": lambda ns: ns.lax.associative_scan(lambda a, b: (a, b), A6),
    "one leaf for two": lambda ns: ns.lax.associative_scan(lambda a, b: a[0] + b[0], (A6, A6)),
    "reverse, a negative axis": lambda ns: ns.lax.associative_scan(
        ns.lax.add, A6, reverse=True, axis=-1),
    "reverse, axis 0": lambda ns: ns.lax.associative_scan(ns.lax.add, A6, reverse=True),
    "no leaves": lambda ns: ns.lax.associative_scan(ns.lax.add, ()),
}


@pytest.mark.parametrize("name", sorted(ASSOCIATIVE))
def test_associative_scan_takes_and_refuses_what_jax_does(name):
    def outcome(ns):
        try:
            out = ASSOCIATIVE[name](ns)
        except Exception as e:  # the same refusal, word for word
            return type(e).__name__, str(e)
        return "ok", [np.asarray(x).tolist() for x in jax.tree_util.tree_leaves(out)]
    assert outcome(OURS) == outcome(THEIRS)
