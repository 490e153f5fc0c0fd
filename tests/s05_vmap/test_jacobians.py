"""jacfwd (vmap of jvp), jacrev (vmap of vjp) and hessian (jacfwd of jacrev) against JAX's."""

from __future__ import annotations

import inspect

import jax
import jax.numpy as jjnp
import jax.tree_util as jtu
import numpy as np
import pytest

from shared.testing import RTOL_REDUCTION, assert_same_typed_values
from stages.s02_tracing import lax as olax
from stages.s02_tracing import make_jaxpr
from stages.s02_tracing import numpy as onp
from stages.s05_vmap import hessian, jacfwd, jacrev

_rng = np.random.default_rng(11)
X = _rng.standard_normal(3).astype(np.float32)
M = _rng.standard_normal((2, 3)).astype(np.float32)


def _tall(lax):  # R^3 -> R^5
    return lambda x: lax.concatenate([lax.sin(x), lax.mul(lax.slice(x, (0,), (2,)), 2.0)], 0)


def _wide(lax):  # R^(2x3) -> R^2
    return lambda m: lax.reduce_sum(lax.mul(lax.tanh(m), m), (1,))


def _scalar(lax):
    return lambda x: lax.reduce_sum(lax.mul(lax.sin(x), lax.integer_pow(x, 2)), (0,))


def _pytree_fn(lax):
    def f(d, s):
        return {"o": lax.mul(d["a"], s),
                "p": (lax.reduce_sum(lax.mul(d["b"], d["b"]), (0,)),)}

    return f


PYTREE_ARGS = ({"a": _rng.standard_normal(2).astype(np.float32),
                "b": _rng.standard_normal((2, 3)).astype(np.float32)}, np.float32(1.5))

OURS = {"jacfwd": jacfwd, "jacrev": jacrev, "hessian": hessian}
THEIRS = {"jacfwd": jax.jacfwd, "jacrev": jax.jacrev, "hessian": jax.hessian}


@pytest.mark.parametrize("fn, arg", [(_tall, X), (_wide, M), (_scalar, X)],
                         ids=["tall", "wide", "scalar"])
@pytest.mark.parametrize("name", ["jacfwd", "jacrev", "hessian"])
def test_jacobian_equals_jaxs(name, fn, arg, close, tol):
    jac = OURS[name](fn(olax))
    close(jac(arg), THEIRS[name](fn(jax.lax))(arg), rtol=tol.rtol_for(jac, arg))


@pytest.mark.parametrize("fn, arg", [(_tall, X), (_wide, M), (_scalar, X)],
                         ids=["tall", "wide", "scalar"])
def test_jacfwd_and_jacrev_agree_and_have_shape_out_plus_in(fn, arg, close, tol):
    fwd, rev = jacfwd(fn(olax))(arg), jacrev(fn(olax))(arg)
    out_shape = np.shape(fn(olax)(arg))
    assert np.shape(fwd) == np.shape(rev) == out_shape + np.shape(arg)
    close(fwd, rev, rtol=tol.rtol_for(jacrev(fn(olax)), arg))


@pytest.mark.parametrize("argnums", [0, 1, (0, 1), (1, 0), (0,)])
@pytest.mark.parametrize("name", ["jacfwd", "jacrev", "hessian"])
def test_pytrees_and_argnums_give_jaxs_nesting(name, argnums, close, tol):
    fn = _pytree_fn if name != "hessian" else (
        lambda lax: lambda d, s: lax.mul(lax.reduce_sum(lax.mul(d["b"], d["b"]), (0, 1)), s))
    jac = OURS[name](fn(olax), argnums=argnums)
    want = THEIRS[name](fn(jax.lax), argnums=argnums)(*PYTREE_ARGS)
    close(jac(*PYTREE_ARGS), want, rtol=tol.rtol_for(jac, *PYTREE_ARGS))


@pytest.mark.parametrize("name", ["jacfwd", "jacrev", "hessian"])
def test_has_aux_returns_the_aux_output_untouched(name, close):
    def make(lax):
        return lambda x: (lax.reduce_sum(lax.mul(lax.sin(x), x), (0,)), {"aux": lax.cos(x)})

    got = OURS[name](make(olax), has_aux=True)(X)
    want = THEIRS[name](make(jax.lax), has_aux=True)(X)
    assert jtu.tree_structure(got) == jtu.tree_structure(want)
    close(got, want, rtol=RTOL_REDUCTION)  # the function sums


def test_jacobians_refuse_integer_inputs_with_jaxs_messages():
    x = np.arange(3, dtype=np.int32)
    for ours, theirs in ((jacfwd, jax.jacfwd), (jacrev, jax.jacrev)):
        with pytest.raises(TypeError) as mine:
            ours(lambda v: v)(x)
        with pytest.raises(TypeError) as want:
            theirs(lambda v: v)(x)
        assert str(mine.value) == str(want.value)


def test_jacrev_refuses_integer_outputs_with_jaxs_message():
    x = np.ones(3, np.float32)
    with pytest.raises(TypeError) as mine:
        jacrev(lambda v: olax.convert_element_type(v, np.int32))(x)
    with pytest.raises(TypeError) as want:
        jax.jacrev(lambda v: jax.lax.convert_element_type(v, np.int32))(x)
    assert str(mine.value) == str(want.value)
    assert str(mine.value).startswith("jacrev requires real-valued outputs")


def test_jacrev_refuses_an_integer_output_after_a_float_one_with_jaxs_message():
    x = np.ones(3, np.float32)
    with pytest.raises(TypeError) as mine:
        jacrev(lambda v: (olax.sin(v), olax.convert_element_type(v, np.int32)))(x)
    with pytest.raises(TypeError) as want:
        jax.jacrev(lambda v: (jax.lax.sin(v), jax.lax.convert_element_type(v, np.int32)))(x)
    assert str(mine.value) == str(want.value)
    assert str(mine.value).startswith("jacrev requires real-valued outputs")


@pytest.mark.parametrize("argnums", [1, -2, (0, 1)])
def test_jacobians_refuse_argnums_out_of_range_with_jaxs_message(argnums):
    for ours, theirs in ((jacfwd, jax.jacfwd), (jacrev, jax.jacrev)):
        with pytest.raises(ValueError) as mine:
            ours(lambda v: v, argnums=argnums)(X)
        with pytest.raises(ValueError) as want:
            theirs(lambda v: v, argnums=argnums)(X)
        assert str(mine.value) == str(want.value)
        assert str(mine.value).startswith("Positional argument indices")


@pytest.mark.parametrize("name", ["jacfwd", "jacrev", "hessian"])
def test_an_aux_that_is_not_an_array_is_returned_or_refused_like_jax(name, close):
    # jacrev returns it untouched; jacfwd (and hessian, a jacfwd outside) vmaps the aux out,
    # and a string is not a value vmap can return
    def make(lax):
        return lambda x: (lax.reduce_sum(lax.mul(x, x), (0,)), {"n": 3, "s": "str"})

    try:
        want = THEIRS[name](make(jax.lax), has_aux=True)(X)
    except TypeError as err:
        with pytest.raises(TypeError) as mine:
            OURS[name](make(olax), has_aux=True)(X)
        assert str(mine.value) == str(err)
        return
    got = OURS[name](make(olax), has_aux=True)(X)
    assert got[1] == want[1] == {"n": 3, "s": "str"}
    close(got[0], want[0], rtol=RTOL_REDUCTION)


@pytest.mark.parametrize("fun", [lambda np_: lambda a: np_.astype(a > 0.3, np_.int32),
                                 lambda np_: lambda a: (np_.astype(a > 0.3, np_.int32), a * 2)],
                         ids=["int_output", "int_and_float_outputs"])
@pytest.mark.parametrize("arg", [np.array([0.1, 0.5, 0.9], np.float32), np.float32(0.5)],
                         ids=["vector", "scalar"])
def test_jacfwd_of_an_integer_output_is_integer_zeros_as_in_jax(fun, arg):
    assert_same_typed_values(jacfwd(fun(onp))(arg), jax.jacfwd(fun(jjnp))(arg))


@pytest.mark.parametrize("name", ["grad", "value_and_grad", "jacfwd", "jacrev", "hessian"])
def test_a_transformed_function_has_the_name_of_the_function_it_transforms(name):
    # as JAX's: so jit(grad(f)) prints name=f and lowers to module @jit_f
    import stages.s04_autodiff as s04
    import stages.s05_vmap as s05

    def loss(x):
        return x

    ours = (getattr(s04, name, None) or getattr(s05, name))(loss)
    theirs = getattr(jax, name)(loss)
    assert (ours.__name__, ours.__qualname__) == (theirs.__name__, theirs.__qualname__)
    assert inspect.unwrap(ours) is loss and inspect.unwrap(theirs) is loss


JAXPR_CASES = [(name, fn, args) for name in ("jacfwd", "jacrev", "hessian")
               for fn, args in ((_tall, (X,)), (_wide, (M,)), (_scalar, (X,)),
                                (_pytree_fn, PYTREE_ARGS))
               if not (name == "hessian" and fn is _pytree_fn)]  # a dict output: no hessian


@pytest.mark.parametrize("name, fn, args", JAXPR_CASES,
                         ids=[f"{n}-{f.__name__.strip('_')}" for n, f, _ in JAXPR_CASES])
def test_the_jacobian_jaxpr_prints_as_jaxs(name, fn, args):
    # the basis is staged as JAX stages it (jnp.eye's iota, eq, convert_element_type, then one
    # split per pytree, each piece converted), and hessian's forward-over-reverse adds a zero
    # tangent instantiated, as JAX's add_any jvp does: the whole program reads the same
    ours = make_jaxpr(OURS[name](fn(olax)))(*args)
    theirs = jax.make_jaxpr(THEIRS[name](fn(jax.lax)))(*args)
    assert str(ours) == str(theirs)
