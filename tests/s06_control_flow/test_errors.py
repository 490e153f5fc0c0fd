"""Errors a learner meets, asserted by message: ours must say exactly what JAX says.

Each case runs on both sides and the messages are compared whole; the one difference allowed
is the module path of the ShapedArray class a structure message names.
"""

from __future__ import annotations

import numpy as np
import pytest

F32 = np.ones(3, np.float32)
ZERO = np.float32(0)


def _message(fn) -> tuple[type, str]:
    with pytest.raises(Exception) as info:
        fn()
    text = str(info.value).replace("jax._src.core.ShapedArray", "<ShapedArray>")
    return info.type, text.replace("stages.s02_tracing.core.ShapedArray", "<ShapedArray>")


# the branch functions are shared, so both sides name the same source lines in their messages
def returns_float(*_):
    return 1.0


def returns_int(*_):
    return 1


def returns_pair(x):
    return x, x


def returns_one(x):
    return x


def returns_dict(x):
    return {"a": x, "b": x * 2.0}


def returns_dict_of_int(x):
    return {"a": x, "b": np.int32(1)}


ERRORS = {
    # the carry-type check, scan
    "scan_carry_dtype": lambda ns: ns.cf.scan(lambda c, x: (c.astype(ns.jnp.int32), x), ZERO, F32),
    "scan_carry_shape": lambda ns: ns.cf.scan(lambda c, x: (c * F32[:2], x), ZERO, F32),
    "scan_carry_structure": lambda ns: ns.cf.scan(lambda c, x: ((c, c), x), ZERO, F32),
    "scan_two_leaves_differ": lambda ns: ns.cf.scan(
        lambda c, x: ({"a": c["a"].astype(ns.jnp.int32), "b": c["b"] * F32[:2]}, x),
        {"a": ZERO, "b": np.float32(1)}, F32),
    "scan_list_length": lambda ns: ns.cf.scan(
        lambda c, x: ([c[0], c[1], c[0]], x), [ZERO, np.float32(1)], F32),
    "scan_dict_keys": lambda ns: ns.cf.scan(
        lambda c, x: ({"a": c["a"], "z": c["a"]}, x), {"a": ZERO, "b": np.float32(1)}, F32),
    "scan_strong_int_init_is_not_promoted": lambda ns: ns.cf.scan(
        lambda c, x: (c + x, x), np.int32(0), F32),
    "while_carry_dtype": lambda ns: ns.cf.while_loop(
        lambda c: c < 3, lambda c: c.astype(ns.jnp.float16), ZERO),
    "fori_names_the_loop_carry": lambda ns: ns.cf.fori_loop(
        0, 3, lambda i, c: c * F32, np.float32(1)),
    # scan's other checks
    "scan_body_not_a_pair": lambda ns: ns.cf.scan(lambda c, x: c, ZERO, F32),
    "scan_body_a_triple": lambda ns: ns.cf.scan(lambda c, x: (c, x, x), ZERO, F32),
    "scan_length_disagrees": lambda ns: ns.cf.scan(lambda c, x: (c, x), ZERO, F32, length=4),
    "scan_leading_axes_differ": lambda ns: ns.cf.scan(
        lambda c, x: (c, x), ZERO, (F32, np.ones(4, np.float32))),
    "scan_no_xs_no_length": lambda ns: ns.cf.scan(lambda c, x: (c, x), ZERO, None),
    "scan_negative_unroll": lambda ns: ns.cf.scan(lambda c, x: (c, x), ZERO, F32, unroll=-1),
    # a float unroll is traced as given and refused where the loop is run
    "scan_float_unroll": lambda ns: ns.cf.scan(lambda c, x: (c + x, c), ZERO, F32, unroll=2.5),
    "scan_f_not_callable": lambda ns: ns.cf.scan(3, 0.0, F32),
    # while_loop's predicate
    "while_cond_not_bool": lambda ns: ns.cf.while_loop(lambda c: c, lambda c: c, ZERO),
    "while_cond_not_scalar": lambda ns: ns.cf.while_loop(lambda c: c < 1, lambda c: c, F32),
    "while_cond_a_tuple": lambda ns: ns.cf.while_loop(
        lambda c: (c < 1, c < 2), lambda c: c, ZERO),
    # cond and switch
    "cond_branch_dtypes": lambda ns: ns.cf.cond(True, returns_float, returns_int, 1.0),
    "cond_branch_structure": lambda ns: ns.cf.cond(True, returns_pair, returns_one, 1.0),
    "cond_branch_leaf_at_path": lambda ns: ns.cf.cond(True, returns_dict, returns_dict_of_int,
                                                      np.float32(1)),
    "switch_branch_dtypes": lambda ns: ns.cf.switch(
        1, [returns_float, returns_float, returns_int], 1.0),
    "cond_pred_not_scalar": lambda ns: ns.cf.cond(
        np.array([True, False]), lambda: 1.0, lambda: 2.0),
    "cond_pred_a_string": lambda ns: ns.cf.cond("a", lambda: 1.0, lambda: 2.0),
    "switch_float_index": lambda ns: ns.cf.switch(1.0, [lambda: 1.0, lambda: 2.0]),
    "switch_index_not_scalar": lambda ns: ns.cf.switch(np.array([1, 2]), [lambda: 1.0]),
    "switch_index_none": lambda ns: ns.cf.switch(None, [returns_one, returns_one], 1.0),
    "switch_no_branches": lambda ns: ns.cf.switch(1, []),
    # fori_loop's bounds
    "fori_unroll_with_traced_bounds": lambda ns: ns.make_jaxpr(
        lambda n: ns.cf.fori_loop(0, n, lambda i, c: c, 1.0, unroll=2))(3),
    "fori_unroll_0_with_traced_bounds": lambda ns: ns.make_jaxpr(  # 0 is not "no unrolling"
        lambda n: ns.cf.fori_loop(0, n, lambda i, c: c, 1.0, unroll=0))(3),
    "fori_bound_dtypes_differ": lambda ns: ns.cf.fori_loop(
        np.int16(0), np.int32(3), lambda i, c: c, 1.0),
    "fori_bound_none": lambda ns: ns.cf.fori_loop(None, 3, lambda i, c: c, 1.0),
    # reverse mode refuses while_loop, and fori_loop with traced bounds
    "grad_of_while_loop": lambda ns: ns.grad(lambda x: ns.cf.while_loop(
        lambda c: c < 10.0, lambda c: c * 2.0, x))(1.0),
    "grad_of_fori_loop_with_traced_bounds": lambda ns: ns.make_jaxpr(
        lambda n, x: ns.grad(lambda x: ns.cf.fori_loop(0, n, lambda i, c: c * x, 1.0))(x))(
        3, 2.0),
    # a value that is no array names where it sits in what the function returned
    "scan_body_returns_a_string": lambda ns: ns.cf.scan(
        lambda c, x: (c, {"k": (c, "a")}), ZERO, None, length=2),
    "cond_branch_returns_a_string": lambda ns: ns.cf.cond(
        True, lambda: {"q": "a"}, lambda: {"q": "b"}),
    "while_cond_returns_a_string": lambda ns: ns.cf.while_loop(lambda c: "a", lambda c: c, ZERO),
    # fori_loop's errors name the body the user wrote, not our wrapper (and below)
    "fori_body_returns_a_string": lambda ns: ns.cf.fori_loop(
        0, 2, lambda i, c: (c[0], "a"), (ZERO, ZERO)),
    "map_over_nothing": lambda ns: ns.cf.map(lambda a: 1.0, (), batch_size=2),
}


def branches_on_carry(i, c):
    return c if c > 0 else -c


@pytest.mark.parametrize("name", list(ERRORS))
def test_error_message_is_jaxs(name, ours, theirs):
    ours_type, ours_text = _message(lambda: ERRORS[name](ours))
    jax_type, jax_text = _message(lambda: ERRORS[name](theirs))
    assert ours_text == jax_text
    assert ours_type.__name__ == jax_type.__name__


@pytest.mark.parametrize("bounds", ["concrete", "traced"])
def test_a_fori_body_that_branches_on_its_carry_is_named_as_jax_names_it(bounds, ours, theirs):
    def run(ns):
        if bounds == "concrete":
            return ns.cf.fori_loop(0, 2, branches_on_carry, ZERO)
        return ns.make_jaxpr(lambda n: ns.cf.fori_loop(0, n, branches_on_carry, ZERO))(3)
    # the sentence saying where: the rest of ours adds advice of its own
    where = [next(line for line in _message(lambda ns=ns: run(ns))[1].splitlines()
                  if "while tracing" in line) for ns in (ours, theirs)]
    assert where[0] == where[1] and "function branches_on_carry at " in where[0]


def test_the_carry_message_names_the_leaf_and_the_mismatch(ours):
    import stages.s06_control_flow as s06

    with pytest.raises(TypeError, match=r"The input carry component c\['b'\] has type "
                       r"float32\[\] but the corresponding output carry component has type "
                       r"int32\[\], so the dtypes do not match\."):
        s06.scan(lambda c, x: ({"a": c["a"], "b": c["b"].astype(np.int32)}, x),
                 {"a": ZERO, "b": ZERO}, F32)


@pytest.mark.parametrize("name, build, expected", [
    # a weakly typed (Python scalar) init takes the body's output type instead of failing
    ("scan", lambda ns: ns.cf.scan(lambda c, x: (c + x, x), 0, F32)[0], 3.0),
    ("while_loop", lambda ns: ns.cf.while_loop(lambda c: c < 3, lambda c: c + 1.0, 0), 3.0),
    ("fori_loop", lambda ns: ns.cf.fori_loop(0, 3, lambda i, c: c * 1.5, 1), 3.375),
])
def test_a_weakly_typed_init_is_promoted_not_refused(name, build, expected, ours, theirs):
    ours_out, jax_out = build(ours), build(theirs)
    assert float(ours_out) == float(jax_out) == expected
    assert np.asarray(ours_out).dtype == jax_out.dtype == np.float32


def test_a_non_weak_mismatch_still_fails(ours):
    with pytest.raises(TypeError, match="int32\\[\\] but the corresponding output carry "
                                        "component has type float32\\[\\]"):
        ours.cf.while_loop(lambda c: c < 3, lambda c: c + np.float32(1), np.int32(0))


def test_jvp_of_while_loop_works_where_grad_refuses(ours, theirs):
    def f(ns):
        return lambda x: ns.cf.while_loop(lambda c: c < 10.0, lambda c: c * 2.0, x)

    ours_out = ours.jvp(f(ours), (1.0,), (1.0,))
    jax_out = theirs.jvp(f(theirs), (1.0,), (1.0,))
    assert [float(v) for v in ours_out] == [float(v) for v in jax_out] == [16.0, 16.0]


def test_scan_of_scalar_xs_says_which_value_has_no_axis(ours, theirs):
    # a deliberate difference: JAX lets `x.shape[0]`'s IndexError escape, we name the value
    with pytest.raises(IndexError, match="tuple index out of range"):
        theirs.cf.scan(lambda c, x: (c, x), ZERO, np.float32(1))
    with pytest.raises(ValueError, match=r"^scan got value with no leading axis to scan over: "
                                         r"1\.0\.$"):
        ours.cf.scan(lambda c, x: (c, x), ZERO, np.float32(1))


def test_a_body_returning_a_list_makes_scan_return_a_list(ours, theirs, close):
    # scan unflattens the body's own output pair, so its container type comes back
    def build(ns):
        return ns.cf.scan(lambda c, x: [c + x, x * 2.0], ZERO, F32)

    ours_out, jax_out = build(ours), build(theirs)
    assert type(ours_out) is type(jax_out) is list
    close(ours_out, jax_out)


def test_a_traced_scan_length_gets_jaxs_two_sentences(ours, theirs):
    # the lines around it are stage 2's ConcretizationTypeError text (make_jaxpr, not jit)
    def build(ns):
        return lambda: ns.make_jaxpr(
            lambda n: ns.cf.scan(lambda c, x: (c, x), ZERO, None, length=n))(3)

    ours_type, ours_text = _message(build(ours))
    jax_type, jax_text = _message(build(theirs))
    assert ours_type.__name__ == jax_type.__name__ == "ConcretizationTypeError"
    ours_lines, jax_lines = ours_text.splitlines(), jax_text.splitlines()
    assert ours_lines[:2] == jax_lines[:2]
    assert ours_lines[1] == ("The `length` argument to `scan` expects a concrete `int` value. "
                             "For scan-like iteration with a dynamic length, use `while_loop` "
                             "or `fori_loop`.")
