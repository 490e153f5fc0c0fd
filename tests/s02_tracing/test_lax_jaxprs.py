"""Each lax primitive traced by our make_jaxpr prints exactly as jax.make_jaxpr prints it.

Every case is written against a `lax` module parameter, so the same source runs on
`stages.s02_tracing.lax` and on `jax.lax`. The printed params are JAX 0.10.2's, defaults included.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import stages.s02_tracing as s02

f32 = np.ones((2, 3), np.float32)
f32b = np.full((2, 3), 2.0, np.float32)
i32 = np.arange(6, dtype=np.int32).reshape(2, 3)
u32 = np.arange(6, dtype=np.uint32).reshape(2, 3)
bools = f32 > 0
vec = np.ones(3, np.float32)

# (id, fn(lax, *args), args): fn receives the lax module first
CASES = [
    *[(n, lambda lax, x, n=n: getattr(lax, n)(x), (f32,)) for n in
      "neg sin cos tan exp log log1p tanh logistic sqrt rsqrt abs sign floor ceil round erf"
      .split()],
    *[(n, lambda lax, x, y, n=n: getattr(lax, n)(x, y), (f32, f32b)) for n in
      "add sub mul div rem pow max min eq ne lt le gt ge".split()],
    *[(n, lambda lax, x, y, n=n: getattr(lax, n)(x, y), (i32, i32)) for n in
      "bitwise_and bitwise_or bitwise_xor shift_left shift_right_logical "
      "shift_right_arithmetic".split()],
    ("bitwise_not", lambda lax, x: lax.bitwise_not(x), (i32,)),
    ("shift_u32", lambda lax, x: lax.shift_right_logical(x, lax.full_like(x, 3)), (u32,)),
    ("round_even", lambda lax, x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN), (f32,)),
    ("integer_pow", lambda lax, x: lax.integer_pow(x, -2), (f32,)),
    ("weak_float_literal", lambda lax, x: lax.add(x, 2.0), (f32,)),
    ("weak_int_literal", lambda lax, x: lax.mul(x, 3), (i32,)),
    ("weak_scalar_arg", lambda lax, x, s: lax.mul(x, s), (f32, 2.0)),
    ("rank0_operand", lambda lax, x, s: lax.sub(x, s), (f32, np.float32(3))),
    ("select_n", lambda lax, p, x, y: lax.select_n(p, x, y), (bools, f32, f32b)),
    ("clamp_scalar_bounds", lambda lax, x: lax.clamp(np.float32(0), x, np.float32(1.5)),
     (f32b,)),
    ("clamp_array_bounds", lambda lax, lo, x, hi: lax.clamp(lo, x, hi), (f32, f32b, f32b)),
    ("clamp_weak_bounds", lambda lax, x: lax.clamp(0, x, 4), (i32,)),
    ("select", lambda lax, p, x, y: lax.select(p, x, y), (bools, f32, f32b)),
    ("select_n_int", lambda lax, w, x: lax.select_n(w, x, x, x), (i32 % 3, f32)),
    ("convert", lambda lax, x: lax.convert_element_type(x, np.int32), (f32,)),
    ("convert_same_dtype_is_no_eqn", lambda lax, x: lax.convert_element_type(x, np.float32),
     (f32,)),
    ("convert_weak_arg", lambda lax, x: lax.convert_element_type(x, np.float32), (2.0,)),
    ("convert_python_scalar", lambda lax, x: lax.add(x, lax.convert_element_type(2, np.float32)),
     (f32,)),
    ("convert_int64_constant_is_no_eqn",
     lambda lax, x: lax.add(x, lax.convert_element_type(np.arange(6).reshape(2, 3), np.int32)),
     (i32,)),
    ("broadcast_in_dim", lambda lax, x: lax.broadcast_in_dim(x, (4, 2, 3), (1, 2)), (f32,)),
    ("broadcast", lambda lax, x: lax.broadcast(x, (5,)), (vec,)),
    ("expand_dims", lambda lax, x: lax.expand_dims(x, (0, 2)), (f32,)),
    ("full", lambda lax, x: lax.add(x, lax.full((2, 3), 1.5)), (f32,)),
    ("full_dtype", lambda lax: lax.full((3,), 2, np.float32), ()),
    ("full_like", lambda lax, x: lax.full_like(x, 7), (i32,)),
    ("reshape", lambda lax, x: lax.reshape(x, (3, 2)), (f32,)),
    ("reshape_dimensions", lambda lax, x: lax.reshape(x, (6,), (1, 0)), (f32,)),
    ("transpose", lambda lax, x: lax.transpose(x, (1, 0)), (f32,)),
    ("transpose_identity_is_no_eqn", lambda lax, x: lax.transpose(x, (0, 1)), (f32,)),
    ("squeeze", lambda lax, x: lax.squeeze(x, (0,)), (f32[:1],)),
    ("slice", lambda lax, x: lax.slice(x, (0, 1), (2, 3)), (f32,)),
    ("slice_strides", lambda lax, x: lax.slice(x, (0, 0), (2, 3), (1, 2)), (f32,)),
    ("slice_in_dim", lambda lax, x: lax.slice_in_dim(x, 1, None, axis=1), (f32,)),
    ("index_in_dim", lambda lax, x: lax.index_in_dim(x, -1, 0, False), (f32,)),
    ("dynamic_slice_static", lambda lax, x: lax.dynamic_slice(x, (1, 0), (1, 3)), (f32,)),
    ("dynamic_slice_traced", lambda lax, x, k: lax.dynamic_slice(x, (k, 0), (1, 2)), (f32, 1)),
    ("dynamic_slice_traced_i32", lambda lax, x, k: lax.dynamic_slice(x, (k, k), (1, 2)),
     (f32, np.int32(1))),
    ("dynamic_update_slice", lambda lax, x, u, k: lax.dynamic_update_slice(x, u, (0, k)),
     (f32, vec[:2].reshape(1, 2), 1)),
    ("dynamic_index_in_dim", lambda lax, x, k: lax.dynamic_index_in_dim(x, k, 1, False),
     (f32, 2)),
    ("concatenate", lambda lax, x, y: lax.concatenate([x, y, x], 1), (f32, f32b)),
    ("pad", lambda lax, x: lax.pad(x, 0.0, ((1, 2, 0), (0, -1, 1))), (f32,)),
    ("iota", lambda lax: lax.iota(np.int32, 5), ()),
    ("broadcasted_iota", lambda lax: lax.broadcasted_iota(np.float32, (2, 3), 1), ()),
    ("reduce_sum", lambda lax, x: lax.reduce_sum(x, (0,)), (f32,)),
    ("reduce_sum_all", lambda lax, x: lax.reduce_sum(x, (0, 1)), (i32,)),
    ("reduce_max", lambda lax, x: lax.reduce_max(x, (1,)), (f32,)),
    ("reduce_min", lambda lax, x: lax.reduce_min(x, (0, 1)), (f32,)),
    ("argmax", lambda lax, x: lax.argmax(x, 1, np.int32), (f32,)),
    ("argmin", lambda lax, x: lax.argmin(x, 0, np.int32), (f32,)),
    ("cumsum", lambda lax, x: lax.cumsum(x, 1), (f32,)),
    ("cumsum_reverse", lambda lax, x: lax.cumsum(x, axis=0, reverse=True), (i32,)),
    ("dot_general", lambda lax, x, y: lax.dot_general(x, y, (((1,), (0,)), ((), ()))),
     (f32, f32.T)),
    ("dot_general_batch",
     lambda lax, x, y: lax.dot_general(x, y, (((2,), (1,)), ((0,), (0,)))),
     (np.ones((4, 2, 3), np.float32), np.ones((4, 3, 5), np.float32))),
    ("dot_general_preferred",
     lambda lax, x, y: lax.dot_general(x, y, (((1,), (1,)), ((), ())),
                                       preferred_element_type=np.float32), (f32, f32b)),
    ("dot_general_mixed", lambda lax, x, y: lax.dot_general(x, y, (((1,), (0,)), ((), ()))),
     (f32, i32.T)),
    ("dot", lambda lax, x, y: lax.dot(x, y), (f32, vec)),
    # precision is canonicalized to one lax.Precision per operand, printed as a pair
    *[(f"dot_general_precision_{name}",
       lambda lax, x, y, p=p: lax.dot_general(x, y, (((1,), (0,)), ((), ())),
                                              precision=p(lax)), (f32, f32.T))
      for name, p in [("highest", lambda lax: "highest"), ("enum", lambda lax: lax.Precision.HIGH),
                      ("strings", lambda lax: ("high", "default")), ("none", lambda lax: None),
                      ("pair", lambda lax: (lax.Precision.HIGHEST, lax.Precision.DEFAULT))]],
    ("dot_precision", lambda lax, x, y: lax.dot(x, y, precision="fastest"), (f32, vec)),
    ("closure_constant", lambda lax, x: lax.mul(x, np.arange(3, dtype=np.float32)), (vec,)),
    ("weak_only", lambda lax: lax.add(1.0, 2.0), ()),
]


@pytest.mark.parametrize("name, fn, args", CASES, ids=[c[0] for c in CASES])
def test_primitive_prints_like_jax(name, fn, args):
    ours = s02.make_jaxpr(lambda *a: fn(s02.lax, *a))(*args)
    # A few jax.lax wrappers (dynamic_index_in_dim) wrap themselves in `jit`, which stage 2
    # does not have; disable_jit inlines them, which is what ours does.
    with jax.disable_jit():
        theirs = jax.make_jaxpr(lambda *a: fn(jax.lax, *a))(*args)
    assert str(ours) == str(theirs)


@pytest.mark.parametrize("name, fn, args", CASES, ids=[c[0] for c in CASES])
def test_out_avals_and_weak_types_equal_jax(name, fn, args):
    ours = s02.make_jaxpr(lambda *a: fn(s02.lax, *a))(*args)
    theirs = jax.make_jaxpr(lambda *a: fn(jax.lax, *a))(*args)
    for o, t in zip(ours.out_avals, theirs.out_avals, strict=True):
        assert (o.shape, o.dtype, o.weak_type) == (t.shape, t.dtype, t.weak_type)


def _weak(lax, shape):
    return lax.broadcast(2.0, shape)  # a weakly typed f32 array, in both libraries


WEAK_CASES = [
    ("unary", lambda lax: lax.sin(_weak(lax, (3,)))),
    ("binary_weak_weak", lambda lax: lax.add(_weak(lax, (3,)), 1.0)),
    ("binary_weak_strong", lambda lax: lax.add(_weak(lax, (3,)), np.ones(3, np.float32))),
    ("compare", lambda lax: lax.lt(_weak(lax, (3,)), 1.0)),
    ("select_cases", lambda lax: lax.select_n(True, _weak(lax, (3,)), _weak(lax, (3,)))),
    ("integer_pow", lambda lax: lax.integer_pow(_weak(lax, (3,)), 2)),
    ("reduce_sum", lambda lax: lax.reduce_sum(_weak(lax, (3,)), (0,))),
    ("reduce_max", lambda lax: lax.reduce_max(_weak(lax, (3,)), (0,))),
    ("argmax_is_strong", lambda lax: lax.argmax(_weak(lax, (3,)), 0, np.int32)),
    ("cumsum", lambda lax: lax.cumsum(_weak(lax, (3,)))),
    ("reshape", lambda lax: lax.reshape(_weak(lax, (4,)), (2, 2))),
    ("transpose", lambda lax: lax.transpose(_weak(lax, (4, 1)), (1, 0))),
    ("squeeze", lambda lax: lax.squeeze(_weak(lax, (4, 1)), (1,))),
    ("slice", lambda lax: lax.slice(_weak(lax, (4,)), (1,), (3,))),
    ("dynamic_slice", lambda lax: lax.dynamic_slice(_weak(lax, (4,)), (1,), (2,))),
    ("dynamic_update_slice",
     lambda lax: lax.dynamic_update_slice(_weak(lax, (4,)), _weak(lax, (2,)), (1,))),
    ("concatenate_weak", lambda lax: lax.concatenate([_weak(lax, (2,)), _weak(lax, (2,))], 0)),
    ("concatenate_mixed",
     lambda lax: lax.concatenate([_weak(lax, (2,)), np.ones(2, np.float32)], 0)),
    ("pad_weak_value", lambda lax: lax.pad(_weak(lax, (4,)), 0.0, ((1, 1, 0),))),
    ("pad_strong_value", lambda lax: lax.pad(_weak(lax, (4,)), np.float32(0), ((1, 1, 0),))),
    ("dot_general", lambda lax: lax.dot_general(_weak(lax, (4,)), _weak(lax, (4,)),
                                                (((0,), (0,)), ((), ())))),
    ("convert_keeps_asked_weak_type", lambda lax: lax.convert_element_type(_weak(lax, (2,)),
                                                                           np.int32)),
    ("full_weak", lambda lax: lax.full((2,), 3.0)),
    ("full_strong", lambda lax: lax.full((2,), 3.0, np.float32)),
    ("expand_dims", lambda lax: lax.expand_dims(_weak(lax, (4,)), (0,))),
]


@pytest.mark.parametrize("name, fn", WEAK_CASES, ids=[c[0] for c in WEAK_CASES])
def test_weak_type_propagation_equals_jax(name, fn):
    # output weak iff JAX's rule says so (usually: iff every operand is weak)
    ours = s02.make_jaxpr(lambda: fn(s02.lax))()
    theirs = jax.make_jaxpr(lambda: fn(jax.lax))()
    assert [a.weak_type for a in ours.out_avals] == [a.weak_type for a in theirs.out_avals]
    assert str(ours) == str(theirs)


def test_precision_is_an_enum_canonicalized_like_jaxs():
    assert repr(s02.lax.Precision("highest")) == repr(jax.lax.Precision("highest"))
    assert str(s02.lax.Precision.HIGH) == str(jax.lax.Precision.HIGH) == "HIGH"
    assert s02.lax.Precision(2) is s02.lax.Precision.HIGHEST
    assert s02.lax.canonicalize_precision(None) is None
    assert s02.lax.canonicalize_precision("float32") == (s02.lax.Precision.HIGHEST,) * 2


def test_a_bad_precision_is_rejected_with_jaxs_first_and_last_lines():
    # JAX's list between them also names its DotAlgorithm options, which ours does not have
    for bad in ("bogus", 3, ("high",)):
        with pytest.raises(ValueError) as ours:
            s02.lax.dot_general(f32, f32.T, (((1,), (0,)), ((), ())), precision=bad)
        with pytest.raises(ValueError) as theirs:
            jax.lax.dot_general(f32, f32.T, (((1,), (0,)), ((), ())), precision=bad)
        ours_lines, their_lines = str(ours.value).splitlines(), str(theirs.value).splitlines()
        assert ours_lines[:3] == their_lines[:3] and ours_lines[-1] == their_lines[-1]
