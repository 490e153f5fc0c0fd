"""Named axes and collectives: vmap(axis_name=...), psum & co., against jax.vmap and jax.lax.

Each case is written once against a namespace (ours or JAX's): the values, the printed jaxprs
and the error texts must agree. Derivatives go through the collectives' jvp and transpose rules.
"""

from __future__ import annotations

from types import SimpleNamespace

import jax
import numpy as np
import pytest

import stages.s02_tracing as s02
import stages.s04_autodiff as s04
import stages.s05_vmap as s05
from shared.testing import RTOL_REDUCTION, assert_same_typed_values

f32 = np.float32
_rng = np.random.default_rng(12)

OURS = SimpleNamespace(vmap=s05.vmap, lax=s05, ops=s02.lax, jnp=s02.numpy,
                       make_jaxpr=s02.make_jaxpr, grad=s04.grad, jvp=s04.jvp, vjp=s04.vjp)
THEIRS = SimpleNamespace(vmap=jax.vmap, lax=jax.lax, ops=jax.lax, jnp=jax.numpy,
                         make_jaxpr=jax.make_jaxpr, grad=jax.grad, jvp=jax.jvp, vjp=jax.vjp)


def _f(*shape):
    return _rng.standard_normal(shape).astype(f32)


X = _f(4, 3)
X3 = _f(2, 4, 6)
PERM = [(0, 1), (1, 2), (2, 3), (3, 0)]

# id -> (builder(ns) -> function, args): every one a vmap with axis_name
VALUE_CASES = {
    "psum": (lambda ns: ns.vmap(lambda v: ns.lax.psum(v, "i"), axis_name="i"), (X,)),
    "normalize": (lambda ns: ns.vmap(lambda v: v / ns.lax.psum(v, "i"), axis_name="i"), (X,)),
    "psum_in_axes_1": (lambda ns: ns.vmap(lambda v: ns.lax.psum(v, "i"), in_axes=1,
                                          axis_name="i"), (X,)),
    "psum_named_and_positional": (lambda ns: ns.vmap(lambda v: ns.lax.psum(v, ("i", 0)),
                                                     axis_name="i"), (X3,)),
    # the batch axis last of three: moved to the front, not the front moved to it
    "psum_in_axes_2": (lambda ns: ns.vmap(lambda v: ns.lax.psum(v, ("i", 1)), in_axes=2,
                                          axis_name="i"), (X3,)),
    "psum_unbatched": (lambda ns: ns.vmap(lambda v, c: v + ns.lax.psum(c, "i"),
                                          in_axes=(0, None), axis_name="i"), (X, X[0])),
    "psum_of_a_constant": (lambda ns: ns.vmap(lambda v: v * ns.lax.psum(1.0, "i"),
                                              axis_name="i"), (X,)),
    "pmean": (lambda ns: ns.vmap(lambda v: ns.lax.pmean(v, "i"), axis_name="i"), (X,)),
    "pmax": (lambda ns: ns.vmap(lambda v: ns.lax.pmax(v, "i"), axis_name="i"), (X,)),
    "pmin_out_axes_1": (lambda ns: ns.vmap(lambda v: ns.lax.pmin(v, "i"), axis_name="i",
                                           out_axes=1), (X,)),
    "pmax_unbatched": (lambda ns: ns.vmap(lambda v, c: v + ns.lax.pmax(c, "i"),
                                          in_axes=(0, None), axis_name="i"), (X, X[0])),
    "psum_out_axes_none": (lambda ns: ns.vmap(lambda v: ns.lax.psum(v, "i"), axis_name="i",
                                              out_axes=None), (X,)),
    "axis_index": (lambda ns: ns.vmap(lambda v: v * ns.lax.axis_index("i"), axis_name="i"),
                   (X,)),
    "axis_size": (lambda ns: ns.vmap(lambda v: v * ns.lax.axis_size("i"), axis_name="i"),
                  (X,)),
    "all_gather": (lambda ns: ns.vmap(lambda v: ns.lax.all_gather(v, "i"), axis_name="i"),
                   (X,)),
    "all_gather_axis_1": (lambda ns: ns.vmap(lambda v: ns.lax.all_gather(v, "i", axis=1),
                                             in_axes=1, axis_name="i"), (X3,)),
    "all_gather_tiled": (lambda ns: ns.vmap(lambda v: ns.lax.all_gather(v, "i", tiled=True),
                                            axis_name="i"), (X3,)),
    "all_gather_unbatched": (lambda ns: ns.vmap(
        lambda v, c: v[0] + ns.lax.all_gather(c, "i"), in_axes=(0, None), axis_name="i"),
        (X, X[0])),
    # the batch axis already where the gathered axis goes: still an array of ours, never the
    # numpy input itself (JAX's batcher always transposes, which converts it)
    "all_gather_then_index": (lambda ns: ns.vmap(
        lambda v: ns.lax.all_gather(v, "i")[ns.lax.axis_index("i")], axis_name="i"), (X,)),
    "all_gather_then_at_set": (lambda ns: ns.vmap(
        lambda v: ns.lax.all_gather(v, "i").at[0].set(0.0), axis_name="i"), (X,)),
    "all_gather_int64_input_is_int32": (lambda ns: ns.vmap(
        lambda v: ns.lax.all_gather(v, "i") * 2**20, axis_name="i", out_axes=None),
        (np.array([2**20, 1]),)),
    "pmax_of_a_float64_constant_is_float32": (lambda ns: ns.vmap(
        lambda v: ns.lax.pmax(np.array([1.5, 2.5]), "i"), axis_name="i", out_axes=None),
        (X[:, 0],)),
    "psum_scatter": (lambda ns: ns.vmap(lambda v: ns.lax.psum_scatter(v, "i"),
                                        axis_name="i"), (_f(4, 4, 3),)),
    "psum_scatter_tiled": (lambda ns: ns.vmap(
        lambda v: ns.lax.psum_scatter(v, "i", scatter_dimension=1, tiled=True),
        axis_name="i"), (_f(4, 3, 8),)),
    "all_to_all": (lambda ns: ns.vmap(lambda v: ns.lax.all_to_all(v, "i", 0, 0),
                                      axis_name="i"), (_f(4, 4, 3),)),
    "all_to_all_split_concat": (lambda ns: ns.vmap(lambda v: ns.lax.all_to_all(v, "i", 1, 0),
                                                   axis_name="i"), (_f(4, 3, 4),)),
    "all_to_all_tiled": (lambda ns: ns.vmap(
        lambda v: ns.lax.all_to_all(v, "i", 0, 1, tiled=True), axis_name="i"), (_f(4, 8, 3),)),
    "ppermute": (lambda ns: ns.vmap(lambda v: ns.lax.ppermute(v, "i", PERM), axis_name="i"),
                 (X,)),
    "ppermute_in_axes_1": (lambda ns: ns.vmap(lambda v: ns.lax.ppermute(v, "i", PERM),
                                              in_axes=1, axis_name="i"), (X.T,)),
    "ppermute_unbatched": (lambda ns: ns.vmap(lambda v, c: v + ns.lax.ppermute(c, "i", PERM),
                                              in_axes=(0, None), axis_name="i"), (X, X[0])),
    "ppermute_nested_outer": (lambda ns: ns.vmap(ns.vmap(
        lambda v: ns.lax.ppermute(v, "i", [(0, 1), (1, 0)]), axis_name="j"), axis_name="i"),
        (X3,)),
    "spmd_axis_name": (lambda ns: ns.vmap(lambda v: ns.lax.psum(v, "i"), axis_name="i",
                                          spmd_axis_name="data"), (X,)),
    # nested names: each vmap binds its own; a collective may name the outer, or both
    "nested_outer": (lambda ns: ns.vmap(ns.vmap(lambda v: ns.lax.psum(v, "i"), axis_name="j"),
                                        axis_name="i"), (X3,)),
    "nested_both": (lambda ns: ns.vmap(ns.vmap(lambda v: ns.lax.psum(v, ("i", "j")),
                                               axis_name="j"), axis_name="i"), (X3,)),
    "nested_index": (lambda ns: ns.vmap(ns.vmap(lambda v: v * ns.lax.axis_index(("i", "j")),
                                                axis_name="j"), axis_name="i"), (X3,)),
    "nested_gather": (lambda ns: ns.vmap(ns.vmap(lambda v: ns.lax.all_gather(v, "i"),
                                                 axis_name="j", in_axes=1), axis_name="i"),
                      (X3,)),
    "nested_pmean_inner_over_outer_batch": (lambda ns: ns.vmap(
        ns.vmap(lambda v: ns.lax.pmean(v, "j") - ns.lax.pmax(v, "i"), axis_name="j"),
        axis_name="i", in_axes=1), (X3,)),
}


@pytest.mark.parametrize("case", sorted(VALUE_CASES))
def test_collective_values_match_jax(case):
    build, args = VALUE_CASES[case]
    assert_same_typed_values(build(OURS)(*args), build(THEIRS)(*args), rtol=RTOL_REDUCTION)


# the printed jaxpr of the same case: JAX's batching rules turn collectives into array code
# (ppermute's into a jnp.take, which JAX wraps in jit: compared below with jit disabled)
PPERMUTES = sorted(c for c in VALUE_CASES if c.startswith("ppermute"))
JAXPR_CASES = sorted(c for c in VALUE_CASES if c not in PPERMUTES)


@pytest.mark.parametrize("case", JAXPR_CASES)
def test_batched_collective_jaxpr_prints_as_jax(case):
    build, args = VALUE_CASES[case]
    assert str(OURS.make_jaxpr(build(OURS))(*args)) == str(THEIRS.make_jaxpr(build(THEIRS))(*args))


@pytest.mark.parametrize("case", PPERMUTES)
def test_batched_ppermute_jaxpr_prints_as_jax_with_its_take_inlined(case):
    build, args = VALUE_CASES[case]
    with jax.disable_jit():
        want = str(THEIRS.make_jaxpr(build(THEIRS))(*args))
    assert str(OURS.make_jaxpr(build(OURS))(*args)) == want


def test_a_ppermute_not_covering_the_axis_fails_as_in_jax():
    def run(ns):
        return ns.vmap(lambda v: ns.lax.ppermute(v, "i", [(0, 1), (1, 0)]), axis_name="i")(X)
    with pytest.raises(AssertionError) as theirs:
        run(THEIRS)
    with pytest.raises(AssertionError) as ours:
        run(OURS)
    assert str(ours.value) == str(theirs.value) == "Permutation doesn't match the axis size!"


# traced with the name bound but no vmap: the collective stays an equation of the jaxpr
STAGED_CASES = {
    "psum": lambda ns: lambda v: ns.lax.psum(v, "i"),
    "psum_two_names": lambda ns: lambda v: ns.lax.psum(v, ("i", "j")),
    "pmean": lambda ns: lambda v: ns.lax.pmean(v, "i"),
    "pmax": lambda ns: lambda v: ns.lax.pmax(v, "i"),
    "pmin": lambda ns: lambda v: ns.lax.pmin(v, "j"),
    "all_gather": lambda ns: lambda v: ns.lax.all_gather(v, "i"),
    "all_gather_tiled": lambda ns: lambda v: ns.lax.all_gather(v, "i", axis=1, tiled=True),
    "psum_scatter": lambda ns: lambda v: ns.lax.psum_scatter(v, "i"),
    "all_to_all": lambda ns: lambda v: ns.lax.all_to_all(v, "i", 0, 1),
    "all_to_all_tiled": lambda ns: lambda v: ns.lax.all_to_all(v, "i", 1, 0, tiled=True),
    "axis_index": lambda ns: lambda v: ns.lax.axis_index("i"),
    "axis_index_two_names": lambda ns: lambda v: ns.lax.axis_index(("i", "j")),
    "axis_size": lambda ns: lambda v: ns.lax.axis_size("i"),
    "ppermute": lambda ns: lambda v: ns.lax.ppermute(v, "i", [(0, 1), (1, 0)]),
}


@pytest.mark.parametrize("case", sorted(STAGED_CASES))
def test_staged_collective_jaxpr_prints_as_jax(case):
    x = _f(2, 4)
    env = [("i", 2), ("j", 3)]
    ours = OURS.make_jaxpr(STAGED_CASES[case](OURS), axis_env=env)(x)
    theirs = THEIRS.make_jaxpr(STAGED_CASES[case](THEIRS), axis_env=env)(x)
    assert str(ours) == str(theirs)


def test_staged_jvp_and_transpose_of_psum_print_as_jax():
    def f(ns):
        return lambda v: ns.vjp(lambda u: ns.lax.psum(ns.jnp.sin(u), "i"), v)[1](v)
    x = _f(3)
    env = [("i", 2)]
    assert str(OURS.make_jaxpr(f(OURS), axis_env=env)(x)) == \
        str(THEIRS.make_jaxpr(f(THEIRS), axis_env=env)(x))


# ------------------------------------------------------------------ derivatives


def _loss(ns, collective):
    def per_example(w, x):
        return collective(ns, ns.jnp.tanh(w * x))

    def loss(w, xs):
        out = ns.vmap(per_example, in_axes=(None, 0), axis_name="i")(w, xs)
        return ns.jnp.sum(out * out)
    return loss


GRAD_CASES = {
    "psum": lambda ns, y: ns.lax.psum(y, "i"),
    "pmean": lambda ns, y: y - ns.lax.pmean(y, "i"),
    "all_gather": lambda ns, y: ns.lax.all_gather(y, "i") * 2.0,
    "psum_scatter": lambda ns, y: ns.lax.psum_scatter(ns.jnp.stack([y] * 4), "i"),
    "all_to_all": lambda ns, y: ns.lax.all_to_all(ns.jnp.stack([y, 2 * y, y, y]), "i", 0, 0),
    "ppermute": lambda ns, y: ns.lax.ppermute(y, "i", PERM) * y,
    "axis_index": lambda ns, y: y * ns.lax.axis_index("i"),
}


@pytest.mark.parametrize("case", sorted(GRAD_CASES))
def test_grad_through_a_collective_matches_jax(case):
    w, xs = _f(3), _f(4, 3)
    ours = OURS.grad(_loss(OURS, GRAD_CASES[case]))(w, xs)
    theirs = THEIRS.grad(_loss(THEIRS, GRAD_CASES[case]))(w, xs)
    assert_same_typed_values(ours, theirs, rtol=RTOL_REDUCTION)


@pytest.mark.parametrize("case", ["psum", "all_gather", "psum_scatter", "all_to_all",
                                  "ppermute"])
def test_jvp_through_a_collective_matches_jax(case):
    w, xs, tw = _f(3), _f(4, 3), _f(3)
    ours = OURS.jvp(lambda w: _loss(OURS, GRAD_CASES[case])(w, xs), (w,), (tw,))
    theirs = THEIRS.jvp(lambda w: _loss(THEIRS, GRAD_CASES[case])(w, xs), (w,), (tw,))
    assert_same_typed_values(ours, theirs, rtol=RTOL_REDUCTION)


def test_pmax_has_no_derivative_as_in_jax():
    def pmax(ns, y):
        return ns.lax.pmax(y, "i") * y
    w, xs = _f(3), _f(4, 3)
    assert _error(lambda: OURS.grad(_loss(OURS, pmax))(w, xs)) == \
        _error(lambda: THEIRS.grad(_loss(THEIRS, pmax))(w, xs))


def test_vmap_of_grad_with_a_collective_inside_matches_jax():
    def build(ns):
        def f(w, x):
            return ns.jnp.sum(ns.jnp.tanh(w * x) / ns.lax.psum(ns.jnp.exp(x), "i"))
        return ns.vmap(ns.grad(f), in_axes=(None, 0), axis_name="i")
    w, xs = _f(3), _f(4, 3)
    assert_same_typed_values(build(OURS)(w, xs), build(THEIRS)(w, xs), rtol=RTOL_REDUCTION)


# ------------------------------------------------------------------ errors

ERROR_CASES = {
    "psum": lambda ns: lambda v: ns.lax.psum(v, "j"),
    "pmax": lambda ns: lambda v: ns.lax.pmax(v, "j"),
    "axis_index": lambda ns: lambda v: ns.lax.axis_index("j"),
    "all_gather": lambda ns: lambda v: ns.lax.all_gather(v, "j"),
    "psum_scatter": lambda ns: lambda v: ns.lax.psum_scatter(v, "j"),
    "all_to_all": lambda ns: lambda v: ns.lax.all_to_all(v, "j", 0, 0),
    "axis_size": lambda ns: lambda v: ns.lax.axis_size("j"),
    "ppermute": lambda ns: lambda v: ns.lax.ppermute(v, "j", [(0, 1)]),
}


def _error(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value)


@pytest.mark.parametrize("case", sorted(ERROR_CASES))
def test_an_unbound_axis_name_fails_as_in_jax(case):
    x = _f(2, 3)
    ours = _error(lambda: OURS.vmap(ERROR_CASES[case](OURS), axis_name="i")(x))
    theirs = _error(lambda: THEIRS.vmap(ERROR_CASES[case](THEIRS), axis_name="i")(x))
    assert ours == theirs


@pytest.mark.parametrize("case", ["psum", "pmax", "axis_index", "all_gather"])
def test_an_unbound_axis_name_fails_while_tracing_as_in_jax(case):
    x = _f(2, 3)
    ours = _error(lambda: OURS.make_jaxpr(ERROR_CASES[case](OURS))(x))
    theirs = _error(lambda: THEIRS.make_jaxpr(ERROR_CASES[case](THEIRS))(x))
    assert ours == theirs


def test_an_eager_psum_outside_any_map_fails_as_in_jax():
    x = _f(3)
    assert _error(lambda: OURS.lax.psum(x, "i")) == _error(lambda: THEIRS.lax.psum(x, "i"))


def test_a_mapped_output_of_a_named_vmap_with_out_axes_none_fails_as_in_jax():
    def build(ns):
        return ns.vmap(lambda v: v * 2, axis_name="i", out_axes=None)
    assert _error(lambda: build(OURS)(X)) == _error(lambda: build(THEIRS)(X))


def test_the_name_is_bound_only_while_the_vmapped_function_runs():
    from stages.s02_tracing.axis_env import get_axis_env
    seen = []
    s05.vmap(lambda v: seen.append(get_axis_env().axis_names()) or v, axis_name="i")(X)
    assert seen == [("i",)] and get_axis_env().axis_names() == ()


# ------------------------------------------------------------------ axis_index_groups

GROUPS = [[0, 1], [2, 3]]
X4 = _f(4, 4)
# JAX 0.10.2 stages groups as a param, but its vmap rules refuse them over their own axis
GROUP_CASES = {
    "psum": lambda ns: lambda v: ns.lax.psum(v, "i", axis_index_groups=GROUPS),
    "psum_tuple_name": lambda ns: lambda v: ns.lax.psum(v, ("i",), axis_index_groups=GROUPS),
    "pmean": lambda ns: lambda v: ns.lax.pmean(v, "i", axis_index_groups=GROUPS),
    "pmax": lambda ns: lambda v: ns.lax.pmax(v, "i", axis_index_groups=GROUPS),
    "pmin": lambda ns: lambda v: ns.lax.pmin(v, "i", axis_index_groups=GROUPS),
    "all_gather": lambda ns: lambda v: ns.lax.all_gather(v, "i", axis_index_groups=GROUPS),
    "all_gather_tiled": lambda ns: lambda v: ns.lax.all_gather(v, "i", tiled=True,
                                                               axis_index_groups=GROUPS),
    "psum_scatter": lambda ns: lambda v: ns.lax.psum_scatter(v[:2], "i",
                                                             axis_index_groups=GROUPS),
    "all_to_all_group_size": lambda ns: lambda v: ns.lax.all_to_all(v, "i", 0, 0,
                                                                    axis_index_groups=GROUPS),
    "all_to_all": lambda ns: lambda v: ns.lax.all_to_all(v[:2], "i", 0, 0,
                                                         axis_index_groups=GROUPS),
    "uneven_groups": lambda ns: lambda v: ns.lax.psum(v, "i", axis_index_groups=[[0, 1], [2]]),
    "overlapping_groups": lambda ns: lambda v: ns.lax.psum(v, "i",
                                                           axis_index_groups=[[0, 1], [1, 2]]),
    "positional_axis": lambda ns: lambda v: ns.lax.psum(v, ("i", 0), axis_index_groups=GROUPS),
    "pmax_positional_axis": lambda ns: lambda v: ns.lax.pmax(v, ("i", 0),
                                                             axis_index_groups=GROUPS),
}


@pytest.mark.parametrize("case", sorted(GROUP_CASES))
def test_axis_index_groups_under_vmap_fail_as_in_jax(case):
    def run(ns):
        return ns.vmap(GROUP_CASES[case](ns), axis_name="i")(X4)
    ours, theirs = _error(lambda: run(OURS)), _error(lambda: run(THEIRS))
    assert ours == theirs


@pytest.mark.parametrize("case", sorted(GROUP_CASES))
def test_axis_index_groups_staged_print_as_jax(case):
    # the name bound with no vmap to handle it: the groups are a param of the equation
    def run(ns):
        return str(ns.make_jaxpr(GROUP_CASES[case](ns), axis_env=[("i", 4)])(X4[0]))
    try:
        theirs = run(THEIRS)
    except Exception:
        assert _error(lambda: run(OURS)) == _error(lambda: run(THEIRS))
        return
    assert run(OURS) == theirs


def test_axis_index_groups_pass_through_a_vmap_over_another_name_as_in_jax():
    def run(ns):
        f = ns.vmap(lambda v: ns.lax.psum(v, "i", axis_index_groups=GROUPS), axis_name="j")
        return str(ns.make_jaxpr(f, axis_env=[("i", 4)])(X4))
    assert run(OURS) == run(THEIRS)

    def nested(ns):
        # the inner vmap passes the groups on; the outer one, over "i", refuses them
        return ns.vmap(ns.vmap(GROUP_CASES["psum"](ns), axis_name="j"), axis_name="i")
    x = _f(4, 2, 3)
    assert _error(lambda: nested(OURS)(x)) == _error(lambda: nested(THEIRS)(x))


def test_the_derivatives_of_a_grouped_psum_keep_the_groups_as_in_jax():
    def run(ns):
        f = ns.grad(lambda v: ns.jnp.sum(ns.lax.psum(v, "i", axis_index_groups=GROUPS) * v))
        return str(ns.make_jaxpr(f, axis_env=[("i", 4)])(X4[0]))
    assert run(OURS) == run(THEIRS)


def test_a_grouped_psum_of_an_unbatched_value_matches_jax():
    # a constant, or an argument vmap does not batch, sums to group size * x
    def run(ns):
        def const(v):
            return v + ns.lax.psum(X4[0], "i", axis_index_groups=GROUPS)

        def unbatched(v, c):
            return v + ns.lax.psum(c * 2, "i", axis_index_groups=GROUPS)
        return (ns.vmap(const, axis_name="i")(X4),
                ns.vmap(unbatched, in_axes=(0, None), axis_name="i")(X4, X4[0]))
    assert_same_typed_values(run(OURS), run(THEIRS))

    def staged(ns):
        f = ns.vmap(lambda v, c: v + ns.lax.psum(c, "i", axis_index_groups=GROUPS),
                    in_axes=(0, None), axis_name="i")
        return ns.make_jaxpr(f)(X4, X4[0])
    assert _error(lambda: staged(OURS)) == _error(lambda: staged(THEIRS))
