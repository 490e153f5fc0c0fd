"""Errors a learner meets, asserted by message, as JAX words them."""

from __future__ import annotations

import re

import jax
import numpy as np
import pytest

from stages.s02_tracing import core
from stages.s02_tracing import lax as olax
from stages.s04_autodiff import ad, custom_vjp, grad, jvp, linear_transpose, vjp


def _message(fn, *args):
    with pytest.raises(Exception) as info:
        fn(*args)
    return type(info.value), str(info.value)


def _same_error(ours_fn, theirs_fn, *args):
    ours_type, ours_msg = _message(ours_fn, *args)
    theirs_type, theirs_msg = _message(theirs_fn, *args)
    assert ours_type.__name__ == theirs_type.__name__
    assert ours_msg == theirs_msg
    return ours_msg


def test_grad_of_a_non_scalar_output():
    msg = _same_error(grad(lambda x: olax.sin(x)), jax.grad(lambda x: jax.lax.sin(x)),
                      np.ones(3, np.float32))
    assert msg == "Gradient only defined for scalar-output functions. Output had shape: (3,)."


def test_grad_of_a_tuple_output():
    # JAX shows its TypedFloat scalars here; ours shows numpy values after the same prefix
    with pytest.raises(TypeError, match=re.escape(
            "Gradient only defined for scalar-output functions. Output was (")):
        grad(lambda x: (x, x))(1.0)


def test_grad_with_respect_to_an_integer_input():
    msg = _same_error(grad(lambda x: olax.mul(x, 2)), jax.grad(lambda x: jax.lax.mul(x, 2)), 3)
    assert msg.startswith("grad requires real- or complex-valued inputs (input dtype that is a "
                          "sub-dtype of np.inexact), but got int32.")


def test_grad_of_an_integer_output():
    _same_error(grad(lambda x: olax.convert_element_type(x, np.int32)),
                jax.grad(lambda x: jax.lax.convert_element_type(x, np.int32)), 1.5)


def test_grad_of_a_non_scalar_integer_output_is_refused_for_its_shape_first():
    msg = _same_error(
        grad(lambda x: olax.convert_element_type(olax.broadcast(x, (3,)), np.int32)),
        jax.grad(lambda x: jax.lax.convert_element_type(jax.lax.broadcast(x, (3,)), np.int32)),
        1.0)
    assert msg == "Gradient only defined for scalar-output functions. Output had shape: (3,)."


def test_jvp_with_a_tangent_of_the_wrong_dtype():
    args = ((1.0,), (np.int32(1),))
    ours_type, ours_msg = _message(jvp, olax.sin, *args)
    _, theirs_msg = _message(jax.jvp, jax.lax.sin, *args)
    assert ours_type is TypeError
    # JAX's text, including its missing space before "Got"
    assert ours_msg == theirs_msg
    assert "must be float0.Got primal dtype float32" in ours_msg


@pytest.mark.parametrize("primal, tangent", [
    (np.int32(3), np.int32(1)),  # expects float0
    (np.float32(3), np.zeros((), jax.dtypes.float0)),  # got float0
], ids=["int_primal", "float0_tangent"])
def test_jvp_names_float0_as_numpy_prints_it(primal, tangent):
    # JAX's text shows float0 as numpy prints the dtype: [('float0', 'V')]
    msg = _same_error(lambda: jvp(lambda x: x, (primal,), (tangent,)),
                      lambda: jax.jvp(lambda x: x, (primal,), (tangent,)))
    assert "[('float0', 'V')]" in msg


def test_jvp_needs_tuples_of_primals_and_tangents():
    with pytest.raises(TypeError, match="primal and tangent arguments to jax.jvp must be tuples "
                                        "or lists; found float and float."):
        jvp(olax.sin, 1.0, 1.0)


def _no_rule_primitive(name):
    p = core.Primitive(name)
    p.def_impl(lambda x: x * 2)
    p.def_abstract_eval(lambda x: x)
    return p


def test_a_primitive_with_no_jvp_rule():
    my_nojvp_p = _no_rule_primitive("my_nojvp")
    expected = "Differentiation rule for 'my_nojvp' not implemented"
    with pytest.raises(NotImplementedError, match=re.escape(expected)):
        jvp(my_nojvp_p.bind, (1.0,), (1.0,))
    with pytest.raises(NotImplementedError, match=re.escape(expected)):
        grad(my_nojvp_p.bind)(1.0)


def test_a_primitive_with_a_jvp_rule_but_no_transpose_rule():
    # its jvp rule applies the primitive itself to the tangent, so reverse mode must transpose it
    my_double_p = _no_rule_primitive("my_double")
    ad.primitive_jvps[my_double_p] = lambda primals, tangents: (
        my_double_p.bind(primals[0]), my_double_p.bind(tangents[0]))
    try:
        assert jvp(my_double_p.bind, (1.0,), (1.0,))[1] == 2.0  # forward mode needs no transpose
        with pytest.raises(NotImplementedError, match=re.escape(
                "Transpose rule (for reverse-mode differentiation) for 'my_double' not "
                "implemented")):
            grad(my_double_p.bind)(1.0)
    finally:
        del ad.primitive_jvps[my_double_p]


def test_transposing_a_nonlinear_primitive_names_it():
    # sin is never transposed by grad (only linear primitives reach the backward pass), but
    # linear_transpose of sin has to: the message names the primitive, as JAX's does
    _same_error(lambda x: linear_transpose(olax.sin, 1.0)(x),
                lambda x: jax.linear_transpose(jax.lax.sin, 1.0)(x), 1.0)
    with pytest.raises(ValueError, match="Transpose of 'mul' with all of its operands linear"):
        linear_transpose(lambda x: olax.mul(x, x), 1.0)(1.0)


def test_a_custom_vjp_bwd_returning_the_wrong_structure():
    @custom_vjp
    def f(x):
        return olax.sin(x)

    f.defvjp(lambda x: (f(x), olax.cos(x)), lambda res, ct: olax.mul(ct, res))  # not a tuple
    with pytest.raises(TypeError) as info:
        grad(f)(1.0)
    assert str(info.value) == (
        "Custom VJP bwd rule must produce an output with the same container (pytree) structure "
        "as the args tuple of the primal function, and in particular must produce a tuple of "
        "length equal to the number of arguments to the primal function, but got bwd output "
        "structure PyTreeDef(*) for primal input structure PyTreeDef((*,)).")


def test_jvp_of_a_custom_vjp_function():
    @custom_vjp
    def f(x):
        return olax.sin(x)

    f.defvjp(lambda x: (f(x), olax.cos(x)), lambda res, ct: (olax.mul(ct, res),))
    with pytest.raises(TypeError, match=re.escape(
            "can't apply forward-mode autodiff (jvp) to a custom_vjp function.")):
        jvp(f, (1.0,), (1.0,))


def test_vjp_cotangent_with_the_wrong_structure_or_type():
    _, f_vjp = vjp(lambda x: (x, x), 1.0)
    with pytest.raises(ValueError, match="unexpected tree structure"):
        f_vjp(1.0)
    _, f_vjp = vjp(olax.sin, 1.0)
    _, their_f_vjp = jax.vjp(jax.lax.sin, 1.0)
    ct = np.ones(2, np.float32)
    assert _message(f_vjp, ct) == (ValueError, _message(their_f_vjp, ct)[1])


@pytest.mark.parametrize("argnums", [(0, 0), (0, -2)])
def test_grad_with_a_repeated_argnum_fails_like_jax(argnums):
    # the repeat finds its argument already taken and passes None: never a doubled gradient
    f = lambda x, y: x * y * y
    msg = _same_error(grad(f, argnums=argnums), jax.grad(f, argnums=argnums), 1.0, 2.0)
    assert "NoneType" in msg


@pytest.mark.parametrize("argnums", [np.int64(1), (np.int32(0),), [0, np.int8(1)]], ids=repr)
def test_numpy_integers_are_argnums_as_in_jax(argnums):
    f = lambda x, y: x * y
    ours, theirs = grad(f, argnums=argnums)(2.0, 3.0), jax.grad(f, argnums=argnums)(2.0, 3.0)
    assert jax.tree_util.tree_structure(ours) == jax.tree_util.tree_structure(theirs)
    assert jax.tree_util.tree_leaves(ours) == [float(t) for t in jax.tree_util.tree_leaves(theirs)]


def test_an_argnum_that_is_no_integer_fails_like_jax():
    f = lambda x, y: x * y
    msg = _same_error(lambda: grad(f, argnums="a"), lambda: jax.grad(f, argnums="a"))
    assert msg == "'str' object cannot be interpreted as an integer"


def test_grad_with_a_repeated_unused_argnum_returns_none_like_jax():
    f = lambda x, y: y * y
    ours = grad(f, argnums=(0, 0))(1.0, 2.0)
    theirs = jax.grad(f, argnums=(0, 0))(1.0, 2.0)
    assert ours[1] is None and theirs[1] is None
    assert float(ours[0]) == float(theirs[0]) == 0.0


def _pair(x):
    return (x, {"a": x, "b": [x, x]})


@pytest.mark.parametrize("ct", [
    1.0, None, [1.0, 1.0], (1.0,), (1.0, 1.0, 1.0), ((1.0, 1.0), {"a": 1.0, "b": [1.0, 1.0]}),
    (1.0, {"a": 1.0}), (1.0, {"a": 1.0, "c": [1.0, 1.0]}), (1.0, {"a": 1.0, "b": [1.0]}),
], ids=repr)
def test_vjp_cotangent_tree_mismatch_says_where_like_jax(ct):
    _, f_vjp = vjp(_pair, 1.0)
    _, their_f_vjp = jax.vjp(_pair, 1.0)
    assert _message(f_vjp, ct) == _message(their_f_vjp, ct)
