"""The module around the program, against `jax.jit(...).lower(...)`: its name, @main's
arguments and results, donation, unused arguments, constants, every dtype, and calls."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jjnp
import ml_dtypes
import numpy as np
import pytest

import stages.s02_tracing as s02
import stages.s08_lowering as s08
from shared.xla_runner import run_text
from stages.s01_pytrees import tree_flatten
from stages.s02_tracing import core
from stages.s02_tracing import partial_eval as pe

lax, jnp = s02.lax, s02.numpy
F32 = np.float32


def _ours(f, *args, donate_argnums=(), keep_unused=False, **kwargs) -> str:
    """Lower f the way jit would: donated flags per leaf of the donated arguments."""
    closed, _, out_tree = pe.trace_to_jaxpr(f, args, {}, None)
    donated = [i in donate_argnums for i, a in enumerate(args)
               for _ in tree_flatten(a)[0]]
    return s08.lower_jaxpr(closed, f.__name__, donated=donated, keep_unused=keep_unused,
                           out_tree=out_tree, **kwargs).as_text()


def _theirs(f, *args, **jit_kwargs) -> str:
    return jax.jit(f, **jit_kwargs).lower(*args).as_text()


def _named(name: str, f):
    f.__name__ = name
    return f


@pytest.mark.parametrize("name", ["f", "<lambda>", "my fun!", "a.b-c", "trailing__"])
def test_the_module_is_named_jit_of_the_function_sanitized_as_jax_does(name):
    x = np.ones(2, F32)
    ours = _ours(_named(name, lambda x: lax.neg(x)), x)
    theirs = _theirs(_named(name, lambda x: jax.lax.neg(x)), x)
    assert ours.splitlines()[0] == theirs.splitlines()[0]
    assert ours == theirs


def test_results_are_named_by_their_key_paths_and_unnamed_without_an_out_tree():
    x = np.ones(2, F32)
    f = lambda lib: lambda x: {"b": (x, [lib.neg(x)]), "a": x * 2.0}
    assert _ours(_named("f", f(lax)), x) == _theirs(_named("f", f(jax.lax)), x)
    assert 'jax.result_info = "result[\'b\'][1][0]"' in _ours(_named("f", f(lax)), x)
    closed = s02.make_jaxpr(f(lax))(x)
    text = s08.lower_jaxpr(closed, "f").as_text()
    assert "jax.result_info" not in text and "-> (tensor<2xf32>, tensor<2xf32>" in text


# --8<-- [start:donation_cases]
DONATION_CASES = {
    # each donated input aliases an output of its shape and dtype
    "aliased": (lambda lib: lambda x, y: (x + 1.0, y * 2.0), (np.ones(3, F32), np.ones(4, F32))),
    # no output of the shape, but one of the same size: XLA may still reuse the buffer
    "buffer_donor": (lambda lib: lambda x: lib.reshape(x, (2, 2)), (np.ones(4, F32),)),
    # an input that aliases an output is not offered as a donor as well
    "aliased_only": (lambda lib: lambda x: (x * 2.0, lib.convert_element_type(x, np.int32)),
                     (np.ones(3, F32),)),
    # the same output cannot take two inputs; the second is reported unusable
    "unusable": (lambda lib: lambda x, y: (x * y,), (np.ones(3, F32), np.ones(3, F32))),
    # an unused input is dropped before donation is looked at: nothing to report
    "unused": (lambda lib: lambda x, y: lib.neg(y), (np.ones(3, F32), np.ones(2, F32))),
}
# --8<-- [end:donation_cases]


def _lowered_with_every_argument_donated(make, args):
    """Our text and JAX's, each with the warnings its lowering gave, after checking they agree."""
    donate = tuple(range(len(args)))
    with warnings.catch_warnings(record=True) as ours_warnings:
        warnings.simplefilter("always")
        ours = _ours(_named("f", make(lax)), *args, donate_argnums=donate)
    with warnings.catch_warnings(record=True) as their_warnings:
        warnings.simplefilter("always")
        theirs = _theirs(_named("f", make(jax.lax)), *args, donate_argnums=donate)
    assert ours == theirs
    assert [(w.category, str(w.message)) for w in ours_warnings] == \
        [(w.category, str(w.message)) for w in their_warnings]
    return ours, ours_warnings


@pytest.mark.parametrize("case", sorted(DONATION_CASES))
def test_donation_attributes_and_warnings_are_jaxs(case):
    ours, ours_warnings = _lowered_with_every_argument_donated(*DONATION_CASES[case])
    expected = {"aliased": "tf.aliasing_output = 1 : i32", "buffer_donor": "jax.buffer_donor",
                "unusable": "tf.aliasing_output = 0 : i32", "unused": "main(%arg0: tensor<2x",
                "aliased_only": "%arg0: tensor<3xf32> {tf.aliasing_output = 0 : i32})"}
    assert expected[case] in ours
    assert bool(ours_warnings) == (case == "unusable")


def test_a_weak_typed_donation_that_cannot_be_used_is_reported_with_its_tilde():
    with pytest.warns(UserWarning, match=r"not usable: ~float32\[\]\.\nSee an explanation"):
        _ours(_named("f", lambda x: jnp.stack([x > 0, x < 0])), 1.0, donate_argnums=(0,))


def test_keep_unused_keeps_every_argument_and_every_equation_as_jax_does():
    w = np.arange(3, dtype=F32)

    def make(lib, sin):
        def g(x, y):
            sin(w)  # dead code on a closed-over constant
            return x * 2.0
        return g

    for keep in (False, True):
        ours = _ours(make(lax, lax.sin), 1.0, 2.0, keep_unused=keep)
        theirs = _theirs(make(jax.lax, jax.lax.sin), 1.0, 2.0, keep_unused=keep)
        assert ours == theirs
        assert ("%arg1" in ours) == keep and ("sine" in ours) == keep


@pytest.mark.parametrize("const", [np.broadcast_to(F32(2), (3,)), np.arange(3, dtype=F32),
                                   np.arange(150, dtype=F32)[:3], np.linspace(-1, 1, 3, F32)],
                         ids=["broadcast", "arange", "view", "linspace"])
def test_closed_over_constants_are_materialized_as_jax_does(const):
    x = np.ones(3, F32)
    assert _ours(lambda x: x + const, x) == _theirs(lambda x: x + const, x)


def test_a_large_constant_is_written_as_hex_bytes():
    big = np.arange(101, dtype=F32)
    x = np.ones(101, F32)
    ours = _ours(lambda x: x + big, x)
    assert ours == _theirs(lambda x: x + big, x)
    assert 'dense<"0x0000000000008' in ours
    np.testing.assert_array_equal(run_text(ours, [x])[0], x + big)


DTYPES = ["bool", "int8", "int16", "int32", "uint8", "uint16", "uint32", "float16", "float32",
          "complex64"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_maps_to_its_tensor_type_and_runs(dtype):
    x = (np.arange(6) % 3).astype(dtype).reshape(2, 3)

    def f(lib):
        def g(x, s):
            same = lib.eq(x, x)
            if x.dtype == np.bool_:
                return lib.bitwise_xor(x, same), lib.reduce_max(x, (1,))
            return lib.add(lib.mul(x, x), x), lib.reduce_max(x, (1,)), lib.mul(s, 2.0)
        return g

    # s: a weak float32 scalar, which maps to tensor<f32> like any float32
    ours, theirs = _ours(f(lax), x, 1.5), _theirs(f(jax.lax), x, 1.5)
    assert ours == theirs
    kept = [x] if dtype == "bool" else [x, np.float32(1.5)]
    for a, e in zip(run_text(ours, kept), jax.jit(f(jax.lax))(x, 1.5), strict=True):
        np.testing.assert_array_equal(a, np.asarray(e))


def test_complex_sin_cos_max_and_abs_lower_through_real_parts_as_jax_does():
    x = np.array([1 + 2j, -1j, 3 - 1j], np.complex64)
    y = np.array([1 + 3j, 2 - 1j, 3 - 2j], np.complex64)

    def f(lib):
        return lambda x, y: (lib.sin(x), lib.cos(y), lib.max(x, y), lib.min(x, y), lib.abs(x),
                             lib.reduce_max(y, (0,)))

    ours = _ours(_named("f", f(lax)), x, y)
    assert ours == _theirs(_named("f", f(jax.lax)), x, y)
    assert "stablehlo.exponential_minus_one" in ours and "stablehlo.imag" in ours
    for a, e in zip(run_text(ours, [x, y]), jax.jit(f(jax.lax))(x, y), strict=True):
        np.testing.assert_allclose(a, np.asarray(e), rtol=1e-6)


def _hand_built(dtype, scale):
    """`x * scale + x` on a [3] array of `dtype`, built by hand (stage 2 cannot trace bf16)."""
    aval = core.ShapedArray((3,), dtype)
    x, y, z = core.Var(aval), core.Var(aval), core.Var(aval)
    lit = core.Literal(np.array(scale, dtype), core.ShapedArray((), dtype))
    eqns = [core.new_jaxpr_eqn([x, lit], [y], lax.mul_p, {}),
            core.new_jaxpr_eqn([y, x], [z], lax.add_p, {})]
    return core.ClosedJaxpr(core.Jaxpr([], [x], [z], eqns), [])


@pytest.mark.parametrize("dtype", [ml_dtypes.bfloat16, np.float64], ids=["bfloat16", "float64"])
def test_bfloat16_and_float64_map_to_their_types_and_run(dtype):
    text = s08.lower_jaxpr(_hand_built(dtype, 3), "f", out_tree=tree_flatten(0)[1]).as_text()
    x = np.array([1.0, 2.5, -4.0], dtype)
    if dtype == ml_dtypes.bfloat16:  # JAX lowers bf16 too (float64 needs jax_enable_x64)
        assert text == _theirs(_named("f", lambda x: x * jjnp.bfloat16(3) + x), x)
    assert f"tensor<3x{'bf16' if dtype == ml_dtypes.bfloat16 else 'f64'}>" in text
    with jax.enable_x64(True):  # else jaxlib's device_put makes a float64 array float32
        (out,) = run_text(text, [x])
    assert out.dtype == dtype
    np.testing.assert_array_equal(out, x * dtype(3) + x)


_BF16_CONSTS = np.array([0.1, 1e-3, 3.14159, 1e-40, 3.4e38, np.inf, -np.inf, np.nan],
                        F32).astype(ml_dtypes.bfloat16)


@pytest.mark.parametrize("name", ["constants", "sum_in_f32", "matmul", "to_and_from_f32"])
def test_bfloat16_programs_traced_by_stage_2_lower_as_jax_and_run_equal(name):
    programs = {
        "constants": lambda np_: lambda x: np_.maximum(x * np_.bfloat16(0.1), -np.inf)
        + np_.asarray(_BF16_CONSTS),
        "sum_in_f32": lambda np_: lambda x: np_.sum(x * 2) + np_.mean(x),
        "matmul": lambda np_: lambda x: np_.matmul(x.reshape(2, 4), x.reshape(4, 2)),
        "to_and_from_f32": lambda np_: lambda x: (x.astype(np_.float32) * 1.7).astype(
            np_.bfloat16) + x.astype(np_.float16).astype(np_.bfloat16),
    }
    x = np.array([1.1, 2.5, -3.3, 0.0, 7.0, 1e-3, -0.5, 100.0], F32).astype(ml_dtypes.bfloat16)
    text = _ours(_named("f", programs[name](jnp)), x)
    assert text == _theirs(_named("f", programs[name](jjnp)), x)
    (out,) = run_text(text, [x])
    assert out.tobytes() == np.asarray(jax.jit(programs[name](jjnp))(x)).tobytes()


# ------------------------------------------------------------------ a call primitive


toy_jit_p = core.Primitive("jit")  # stands in for stage 7's jit primitive
toy_jit_p.multiple_results = True
toy_jit_p.def_impl(lambda *args, jaxpr, name: core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *args))
toy_jit_p.def_abstract_eval(lambda *avals, jaxpr, name: list(jaxpr.out_avals))


def test_a_primitive_that_calls_a_jaxpr_needs_one_line_to_lower_like_jit():
    s08.register_lowering(toy_jit_p, s08.call_primitive_lowering)  # the one line
    try:
        inner = s02.make_jaxpr(lambda x: lax.mul(x, 2.0))(np.ones(3, F32))

        def f(x):
            (a,) = toy_jit_p.bind(x, jaxpr=inner, name="inner_f")
            (b,) = toy_jit_p.bind(lax.add(x, 1.0), jaxpr=inner, name="inner_f")
            return lax.add(a, b)

        ij = jax.jit(_named("inner_f", lambda x: x * 2.0))
        x = np.ones(3, F32)
        ours = _ours(_named("f", f), x)
        assert ours == _theirs(_named("f", lambda x: ij(x) + ij(x + 1.0)), x)
        assert ours.count("func.func private @inner_f") == 1 and ours.count("call @") == 2
    finally:
        del s08.lowering_rules[toy_jit_p]


def test_a_cond_whose_branches_keep_their_own_constants_lowers_them_in_each_region():
    # cond hoists a branch's closed-over constants into operands, but a cond equation built by
    # hand (or by a transformation) may hand over branches that are closed jaxprs with consts
    from jax._src.lax.control_flow.conditionals import cond_p as jax_cond_p

    from stages.s06_control_flow import cond_p

    c, d = np.array([1.0, 2.0, 3.0], F32), np.array([-1.0, 0.5, 4.0], F32)
    x = np.linspace(-1, 1, 3, dtype=F32)

    def make(make_jaxpr, bind, sin):
        branches = (make_jaxpr(lambda x: x * c)(x), make_jaxpr(lambda x: sin(x) + d)(x))
        assert all(len(b.consts) == 1 for b in branches)
        return _named("f", lambda i, x: bind(i, x, branches=branches))

    ours = make(s02.make_jaxpr, cond_p.bind, jnp.sin)
    theirs = make(jax.make_jaxpr, jax_cond_p.bind, jjnp.sin)
    for i in (0, 1):
        assert _ours(ours, np.int32(i), x) == _theirs(theirs, np.int32(i), x)
        (got,) = run_text(_ours(ours, np.int32(i), x), [np.int32(i), x])
        (want,) = jax.jit(theirs)(np.int32(i), x)
        np.testing.assert_array_equal(got, want)


MORE_DONATION_CASES = {
    # an output of the shape but another dtype is no alias; its size still makes a donor
    "other_dtype": (lambda lib: lambda x: lib.convert_element_type(x, np.float32),
                    (np.ones(3, np.int32),)),
    # one free output of the size serves one leftover donor only; the other is unusable
    "one_free_size_two_donors": (lambda lib: lambda x, y: (lib.reshape(x + y, (2, 2)),),
                                 (np.ones(4, F32), np.ones(4, F32))),
    # a leftover donor needs an output of as many elements, not bytes: f32[4] gives bool[4]
    "other_itemsize": (lambda lib: lambda x: lib.gt(x, np.zeros(4, F32)), (np.ones(4, F32),)),
    # a weak type does not matter to a buffer: a weak f32[] aliases a strong f32[] output
    "weak_input": (lambda lib: lambda x: lib.mul(x, F32(2.0)), (1.0,)),
}


@pytest.mark.parametrize("case", sorted(MORE_DONATION_CASES))
def test_donation_matches_dtype_and_gives_each_free_output_one_donor_as_jax(case):
    ours, _ = _lowered_with_every_argument_donated(*MORE_DONATION_CASES[case])  # text: JAX's
    expected = {"other_dtype": "jax.buffer_donor", "one_free_size_two_donors": "jax.buffer_donor",
                "other_itemsize": "jax.buffer_donor", "weak_input": "tf.aliasing_output = 0 : i32"}
    assert expected[case] in ours
