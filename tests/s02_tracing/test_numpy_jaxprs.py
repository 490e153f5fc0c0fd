"""Functions written once against a numpy module `np_mod` trace to the jaxprs jax.numpy gives.

Ours runs on `stages.s02_tracing.numpy`, JAX's on `jax.numpy`. JAX wraps a few jnp functions
(where, clip, floor_divide, remainder) in `jit`, printed as a nested `jit[...]` equation; stage 2
has no jit, so JAX is traced under `jax.disable_jit()`, which inlines them exactly as ours does.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import stages.s02_tracing as s02
from shared.testing import RTOL_REDUCTION

rng = np.random.default_rng(2)
x23 = rng.standard_normal((2, 3)).astype(np.float32)
y23 = rng.standard_normal((2, 3)).astype(np.float32)
w34 = rng.standard_normal((3, 4)).astype(np.float32)
b4 = rng.standard_normal(4).astype(np.float32)
v3 = rng.standard_normal(3).astype(np.float32)
i23 = rng.integers(-4, 5, size=(2, 3)).astype(np.int32)
CONST = np.arange(3, dtype=np.float32)
# 64-bit numpy operands: with x64 disabled JAX treats them as int32/float32 arrays
I64 = np.arange(3, dtype=np.int64)
F64 = np.linspace(-1.0, 1.0, 3)

# (id, fn(np_mod, *args), args)
CASES = [
    ("dense_tanh", lambda np_mod, x, w, b: np_mod.tanh(x @ w + b), (x23, w34, b4)),
    ("softmax", lambda np_mod, x: np_mod.exp(x - np_mod.max(x, axis=-1, keepdims=True))
     / np_mod.sum(np_mod.exp(x - np_mod.max(x, axis=-1, keepdims=True)), axis=-1,
                  keepdims=True), (x23,)),
    ("mse", lambda np_mod, x, y: np_mod.mean((x - y) ** 2), (x23, y23)),
    ("relu", lambda np_mod, x: np_mod.maximum(x, 0.0), (x23,)),
    ("leaky_relu_where", lambda np_mod, x: np_mod.where(x > 0, x, 0.01 * x), (x23,)),
    ("where_int_condition", lambda np_mod, c, x: np_mod.where(c, x, 0.0), (i23, x23)),
    ("clip", lambda np_mod, x: np_mod.clip(x, -0.5, 0.5), (x23,)),
    ("scalar_times_array", lambda np_mod, x: x * 2.0 + 1, (x23,)),
    ("reversed_operands", lambda np_mod, x: 1.0 - x, (x23,)),
    ("int_plus_float", lambda np_mod, i: i + 1.5, (i23,)),
    ("int_times_f32", lambda np_mod, i, x: i * x, (i23, x23)),
    ("int_true_divide", lambda np_mod, i: i / 2, (i23,)),
    ("rank_broadcast", lambda np_mod, x, v: x + v, (x23, v3)),
    ("comparisons", lambda np_mod, x, y: (x > 0) & (y <= x), (x23, y23)),
    ("bitwise", lambda np_mod, i: (i & 3) | (i << 1) ^ ~i, (i23,)),
    ("right_shift", lambda np_mod, i: i >> 1, (i23,)),
    ("powers", lambda np_mod, x: x**2 + x**-1 + x**0.5 + 2.0**x, (x23,)),
    ("abs_neg_sign", lambda np_mod, x: abs(-x) * np_mod.sign(x), (x23,)),
    ("floor_divide_float", lambda np_mod, x: x // 0.5, (x23,)),
    ("floor_divide_int", lambda np_mod, i: i // 2, (i23,)),
    ("remainder", lambda np_mod, i, x: (i % 3, x % 0.7), (i23, x23)),
    ("transpose_and_T", lambda np_mod, x: np_mod.transpose(x) + x.T, (x23,)),
    ("reshape_method", lambda np_mod, x: x.reshape(3, 2) @ x.reshape((2, -1)), (x23,)),
    ("dot", lambda np_mod, x, v: np_mod.dot(x, v), (x23, v3)),
    ("dot_scalar", lambda np_mod, x: np_mod.dot(x, 2.0), (x23,)),
    ("matmul_vector", lambda np_mod, v, w: v @ w, (v3, w34)),
    ("matmul_batched", lambda np_mod, a, b: a @ b,
     (np.ones((4, 2, 3), np.float32), np.ones((4, 3, 5), np.float32))),
    ("matmul_broadcast", lambda np_mod, a, b: np_mod.matmul(a, b),
     (np.ones((1, 2, 3), np.float32), np.ones((4, 3, 5), np.float32))),
    ("matmul_int", lambda np_mod, i: i @ i.T, (i23,)),
    ("sum_variants", lambda np_mod, x, i: (np_mod.sum(x), x.sum(0), np_mod.sum(i > 0),
                                            np_mod.sum(x, axis=-1, keepdims=True)), (x23, i23)),
    ("sum_narrow", lambda np_mod, a: (np_mod.sum(a), np_mod.sum(a.astype(np_mod.float16))),
     (i23.astype(np.int8),)),
    ("mean_variants", lambda np_mod, x, i: (np_mod.mean(x), x.mean(1), np_mod.mean(i),
                                             np_mod.mean(x, axis=0, keepdims=True)),
     (x23, i23)),
    ("max_min", lambda np_mod, x: (np_mod.max(x, axis=0), x.min(), np_mod.max(x, 1, keepdims=True)),
     (x23,)),
    ("argmax", lambda np_mod, x: (np_mod.argmax(x, axis=1), np_mod.argmax(x),
                                  x.argmin(-1), np_mod.argmax(x, keepdims=True)), (x23,)),
    ("cumsum", lambda np_mod, x: (np_mod.cumsum(x, axis=1), np_mod.cumsum(x)), (x23,)),
    ("astype", lambda np_mod, x: x.astype(np_mod.int32) + 1, (x23,)),
    ("astype_same_is_no_eqn", lambda np_mod, x: x.astype(np_mod.float32), (x23,)),
    ("constructors", lambda np_mod: (np_mod.zeros((2, 3)), np_mod.ones(3, np_mod.int32),
                                     np_mod.full((2,), 3.0), np_mod.arange(5),
                                     np_mod.arange(2, 7), np_mod.arange(0.0, 1.0, 0.25)), ()),
    ("like_constructors", lambda np_mod, x, i: (np_mod.zeros_like(x), np_mod.ones_like(i),
                                                np_mod.full_like(x, 2)), (x23, i23)),
    ("concatenate", lambda np_mod, x, i: np_mod.concatenate([x, i], axis=1), (x23, i23)),
    ("expand_squeeze", lambda np_mod, x: np_mod.squeeze(np_mod.expand_dims(x, 0)), (x23,)),
    ("broadcast_to", lambda np_mod, v: np_mod.broadcast_to(v, (2, 3)), (v3,)),
    ("getitem_int", lambda np_mod, x: (x[0], x[-1], x[1, 2]), (x23,)),
    ("getitem_slices", lambda np_mod, x: (x[:, 1:], x[::2], x[:, -2:], x[:]), (x23,)),
    ("getitem_none_ellipsis", lambda np_mod, x: (x[None], x[..., 0], x[:, None, 1]), (x23,)),
    ("getitem_traced", lambda np_mod, x, k: (x[k], x[k, 1], x[0, k]), (x23, 1)),
    ("getitem_traced_1d", lambda np_mod, v, k: v[k], (v3, np.int32(2))),
    ("getitem_out_of_range", lambda np_mod, x: (x[2], x[0, -5], x[1:, 9], x.at[-3].get()),
     (x23,)),
    ("asarray_of_a_list_of_tracers", lambda np_mod, x, v: (np_mod.asarray([x, 2]),
                                                          np_mod.asarray([v[0], 2.0])),
     (1.0, v3.astype(np.float16))),
    ("reductions_in_an_explicit_dtype", lambda np_mod, h: (
        np_mod.sum(h, dtype=np_mod.float16), np_mod.prod(h, dtype=np_mod.float16),
        np_mod.mean(h, dtype=np_mod.float16)), (v3.astype(np.float16),)),
    ("cumsum_to_bool", lambda np_mod, i: np_mod.cumsum(i, axis=1, dtype=bool), (i23,)),
    ("max_min_of_weak_values", lambda np_mod, x: (np_mod.max(x * 2.0), np_mod.min(x)), (1.0,)),
    ("left_shift_of_bools", lambda np_mod, i: np_mod.left_shift(i > 0, True), (i23,)),
    ("iterate_tracer", lambda np_mod, v: [a * 2 for a in v], (v3,)),
    ("closure_constant", lambda np_mod, v: v + CONST, (v3,)),
    ("int64_operands", lambda np_mod, i: (np_mod.add(i, I64), i * I64, np_mod.maximum(I64, i),
                                          np_mod.sum(I64) + i), (i23,)),
    ("float64_operands", lambda np_mod, x: (np_mod.multiply(x, F64), F64 - x,
                                            np_mod.where(x > 0, F64, x),
                                            np_mod.concatenate([x, F64[None]]),
                                            np_mod.exp(F64) + np_mod.mean(F64)), (x23,)),
    ("exp_of_int", lambda np_mod, i: np_mod.exp(i) + np_mod.log1p(np_mod.abs(i)), (i23,)),
    ("elementwise_zoo", lambda np_mod, x: np_mod.sin(x) * np_mod.cos(x) + np_mod.sqrt(x * x)
     - np_mod.floor(x) + np_mod.ceil(x) + np_mod.tan(x) + np_mod.log(x * x + 1.0), (x23,)),
]


def _jaxprs(fn, args):
    ours = s02.make_jaxpr(lambda *a: fn(s02.numpy, *a))(*args)
    with jax.disable_jit():
        theirs = jax.make_jaxpr(lambda *a: fn(jnp, *a))(*args)
    return ours, theirs


def test_the_numpy_corpus_has_at_least_a_dozen_functions():
    assert len(CASES) >= 12


@pytest.mark.parametrize("name, fn, args", CASES, ids=[c[0] for c in CASES])
def test_printed_jaxpr_equals_jax_numpys(name, fn, args):
    ours, theirs = _jaxprs(fn, args)
    assert str(ours) == str(theirs)


@pytest.mark.parametrize("name, fn, args", CASES, ids=[c[0] for c in CASES])
def test_values_and_dtypes_equal_jax_numpys(name, fn, args):
    ours_jaxpr = s02.make_jaxpr(lambda *a: fn(s02.numpy, *a))(*args)
    ours = s02.eval_jaxpr(ours_jaxpr.jaxpr, ours_jaxpr.consts, *jax.tree.leaves(args))
    jax_args = [jnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    theirs = jax.tree.leaves(fn(jnp, *jax_args))
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs, strict=True):
        t = np.asarray(t)
        assert np.asarray(o).dtype == t.dtype and np.shape(o) == t.shape
        np.testing.assert_allclose(o, t, rtol=RTOL_REDUCTION, atol=1e-5)


def test_jnp_stack_is_expand_dims_and_concatenate_not_jaxs_stack_primitive():
    # JAX 0.10.2 added a `stack` primitive; stage 2 keeps to the primitives it builds.
    ours, theirs = _jaxprs(lambda np_mod, a, b: np_mod.stack([a, b], axis=1), (v3, v3))
    assert "stack[axis=1]" in str(theirs)
    assert [e.primitive.name for e in ours.eqns] == [
        "broadcast_in_dim", "broadcast_in_dim", "concatenate"
    ]
    assert ours.out_avals[0].shape == theirs.out_avals[0].shape


def test_a_64bit_numpy_operand_is_one_32bit_constvar_and_no_convert_equation():
    # x64 disabled: an int64 array is an int32 constant, so adding it to int32 converts nothing
    ours, theirs = _jaxprs(lambda np_mod, i: (np_mod.add(i, I64), i - I64), (i23[0],))
    assert [e.primitive.name for e in ours.eqns] == ["add", "sub"]
    assert str(ours) == str(theirs)
    assert [c.dtype for c in ours.consts] == [np.int32]
    # eagerly the results are int32 arrays, as jnp's are
    assert s02.numpy.add(i23[0], I64).dtype == np.int32
    assert s02.lax.convert_element_type(I64, np.int32).dtype == np.int32


def test_square_is_jax_s_square_primitive_for_every_numeric_dtype():
    for x in (v3, np.arange(3, dtype=np.int32), v3.astype(np.complex64)):
        ours, theirs = _jaxprs(lambda np_mod, a: np_mod.square(a), (x,))
        assert str(ours) == str(theirs)
        assert [e.primitive.name for e in ours.eqns] == ["square"]


WEAK_CASES = {
    "c * 2": (lambda np_mod, c: c * 2, (1.0,)),
    "mixed weak scalars": (lambda np_mod, k, c: (k + 1.5, c - 3, 2**c, k * 2, np_mod.sin(k)),
                           (3, 0.5)),
}


@pytest.mark.parametrize("name", list(WEAK_CASES))
def test_a_python_scalar_promoted_against_a_weak_input_is_a_literal_of_the_new_dtype(name):
    # a weak float32 input times the Python int 2 prints `mul a 2.0:f32[]`: the conversion of
    # a constant folds while a jaxpr is staged, leaving no convert_element_type equation on 2:i32[]
    fn, args = WEAK_CASES[name]
    ours, theirs = _jaxprs(fn, args)
    assert str(ours) == str(theirs)
    if name == "c * 2":
        assert str(ours) == "{ lambda ; a:f32[]. let b:f32[] = mul a 2.0:f32[] in (b,) }"
