"""checkpoint's options against JAX's: prevent_cse as one flag per argument, its type check,
a non-array argument, and the policies save_anything_except_these_names and
save_from_both_policies."""

from __future__ import annotations

from typing import Any

import jax
import jax._src.ad_checkpoint as jax_ad_checkpoint
import numpy as np
import pytest
from jax.ad_checkpoint import checkpoint_name as jax_checkpoint_name

import stages.s02_tracing as s02
import stages.s04_autodiff as s04
import stages.s05_vmap as s05
from stages.s04_autodiff import ad_checkpoint

pytestmark = pytest.mark.oracle

F32 = np.float32
X = np.arange(1, 4, dtype=F32)


def _ours() -> tuple[Any, Any, Any]:
    return s04, s02.numpy, s02.make_jaxpr


def _theirs() -> tuple[Any, Any, Any]:
    return jax, jax.numpy, jax.make_jaxpr


# ------------------------------------------------------------------ prevent_cse per argument


def _sin_times(lib: Any, jnp: Any, prevent_cse: Any) -> Any:
    return lib.checkpoint(lambda x, y: jnp.sin(x) * y, prevent_cse=prevent_cse)


PROGRAMS = {
    "staged": lambda lib, jnp, mk, g: mk(g)(F32(1.), F32(2.)),
    "grad": lambda lib, jnp, mk, g: mk(lib.grad(g, argnums=(0, 1)))(F32(1.), F32(2.)),
    "grad-one-argument": lambda lib, jnp, mk, g: mk(lib.grad(g))(F32(1.), F32(2.)),
    "jvp": lambda lib, jnp, mk, g: mk(lambda a, b: lib.jvp(g, (a, b), (a, b)))(F32(1.), F32(2.)),
    "linearize": lambda lib, jnp, mk, g: mk(
        lambda a, b: lib.linearize(g, a, b)[1](a, b))(F32(1.), F32(2.)),
    "unused-output": lambda lib, jnp, mk, g: mk(lib.grad(
        lambda a, b: lib.checkpoint(lambda x, y: (jnp.sin(x), y * 2),
                                    prevent_cse=(True, False))(a, b)[0]))(F32(1.), F32(2.)),
    "closure": lambda lib, jnp, mk, g: mk(lib.grad(
        lambda a, b: lib.checkpoint(lambda x, y: (jnp.sin(x) * y * X).sum(),
                                    prevent_cse=(True, False))(a, b)))(F32(1.), F32(2.)),
}


@pytest.mark.parametrize("program", list(PROGRAMS))
@pytest.mark.parametrize("prevent_cse", [(True, False), [False, True]])
def test_prevent_cse_per_argument_follows_each_operand_as_in_jax(program, prevent_cse):
    # one flag per remat2 operand: constants, residuals and tangents get theirs as JAX's do
    def jaxpr(lib, jnp, make_jaxpr):
        return str(PROGRAMS[program](lib, jnp, make_jaxpr, _sin_times(lib, jnp, prevent_cse)))

    assert jaxpr(*_ours()) == jaxpr(*_theirs())


@pytest.mark.parametrize("name, prevent_cse, call", [
    ("keyword", ((True,), {"y": False}), lambda g: lambda a, b: g(a, y=b)),
    ("pytree", (True, False), lambda g: lambda a, b: g({"a": a, "b": b}, b)),
])
def test_prevent_cse_is_a_prefix_of_the_arguments_as_in_jax(name, prevent_cse, call):
    def jaxpr(lib, jnp, make_jaxpr):
        if name == "keyword":
            g = lib.checkpoint(lambda x, y: jnp.sin(x) * y, prevent_cse=prevent_cse)
        else:
            g = lib.checkpoint(lambda d, y: jnp.sin(d["a"]) * d["b"] * y,
                               prevent_cse=prevent_cse)
        return str(make_jaxpr(lib.grad(call(g)))(F32(1.), F32(2.)))

    assert jaxpr(*_ours()) == jaxpr(*_theirs())


def test_prevent_cse_flags_skip_the_static_arguments_as_in_jax():
    def jaxpr(lib, jnp, make_jaxpr):
        g = lib.checkpoint(lambda x, n, y: jnp.sin(x) * y * n, prevent_cse=(True, False),
                           static_argnums=1)
        return str(make_jaxpr(lambda a, b: lib.grad(g)(a, 2., b))(F32(1.), F32(2.)))

    assert jaxpr(*_ours()) == jaxpr(*_theirs())


def test_prevent_cse_per_argument_in_a_nested_checkpoint_equals_jax():
    def run(lib, jnp, make_jaxpr):
        inner = lib.checkpoint(lambda a, b: jnp.sin(a) * b, prevent_cse=(False, True))
        outer = lib.checkpoint(lambda x, y: inner(jnp.cos(x), y) * x, prevent_cse=(True, False))
        return (lib.grad(outer, argnums=(0, 1))(F32(1.), F32(2.)),
                str(make_jaxpr(lib.grad(outer))(F32(1.), F32(2.))))

    (ours, ours_jaxpr), (theirs, their_jaxpr) = run(*_ours()), run(*_theirs())
    assert ours_jaxpr == their_jaxpr
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6)


def test_prevent_cse_per_argument_under_vmap_of_grad_gives_jax_values():
    ours = s05.vmap(s04.grad(_sin_times(s04, s02.numpy, (True, False))))(X, X)
    theirs = jax.vmap(jax.grad(_sin_times(jax, jax.numpy, (True, False))))(X, X)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6)


def test_a_prevent_cse_that_is_not_a_bool_or_tuple_is_refused_as_in_jax():
    with pytest.raises(TypeError) as got:
        s04.checkpoint(lambda x: x, prevent_cse=1)
    with pytest.raises(TypeError) as want:
        jax.checkpoint(lambda x: x, prevent_cse=1)
    assert str(got.value) == str(want.value)
    assert str(got.value) == ("prevent_cse must be a bool or tuple of bools, got "
                              "type(prevent_cse)=<class 'int'>")


def test_a_non_array_argument_is_named_as_jax_names_it():
    with pytest.raises(TypeError) as got:
        s04.checkpoint(lambda x, s: x)(F32(1.), "s")
    with pytest.raises(TypeError) as want:
        jax.checkpoint(lambda x, s: x)(F32(1.), "s")
    assert str(got.value) == str(want.value)
    assert str(got.value) == "Argument 's' of type <class 'str'> is not a valid JAX type"


# ------------------------------------------------------------------ two more policies


def _block(lax: Any, name: Any) -> Any:
    def f(w, x):
        h = name(lax.sin(lax.dot_general(w, x, (((1,), (0,)), ((), ())))), "h")
        z = name(lax.cos(h), "z")
        return lax.reduce_sum(lax.mul(h, z), (0,))
    return f


W = np.arange(9, dtype=F32).reshape(3, 3) / 10


def _without_source(description: str) -> str:
    return description.split(" from /")[0]  # JAX adds where the value was computed


@pytest.mark.parametrize("policy", ["save_anything_except_these_names",
                                    "save_from_both_policies"])
def test_the_residuals_each_policy_saves_equal_jaxs(policy):
    if policy == "save_anything_except_these_names":
        mine = ad_checkpoint.save_anything_except_these_names("h")
        theirs = jax.checkpoint_policies.save_anything_except_these_names("h")
    else:
        mine = ad_checkpoint.save_from_both_policies(
            ad_checkpoint.dots_saveable, ad_checkpoint.save_only_these_names("z"))
        theirs = jax.checkpoint_policies.save_from_both_policies(
            jax.checkpoint_policies.dots_saveable,
            jax.checkpoint_policies.save_only_these_names("z"))
    f = s04.checkpoint(_block(s02.lax, s04.checkpoint_name), policy=mine)
    their_f = jax.checkpoint(_block(jax.lax, jax_checkpoint_name), policy=theirs)
    ours = ad_checkpoint.saved_residuals(f, W, X)
    want = jax_ad_checkpoint.saved_residuals(their_f, W, X)
    assert [(a.shape, s) for a, s in ours] == [(a.shape, _without_source(s)) for a, s in want]
    np.testing.assert_allclose(np.asarray(s04.grad(f)(W, X)),
                               np.asarray(jax.grad(their_f)(W, X)), rtol=1e-5, atol=1e-6)


def test_saved_residuals_differentiates_keyword_arguments_too_as_jax():
    # y given by keyword is differentiated as well, so sin(x) is needed for y's tangent
    def f(lax):
        return lambda x, y: lax.mul(lax.sin(x), y)

    ours = ad_checkpoint.saved_residuals(f(s02.lax), X, y=X)
    want = jax_ad_checkpoint.saved_residuals(f(jax.lax), X, y=X)
    assert [s for _, s in ours] == [_without_source(s) for _, s in want]
    assert "output of sin" in [s for _, s in ours]
