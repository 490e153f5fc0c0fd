"""A bad lax call fails while tracing, with JAX's error class and JAX's message.

The message names the primitive and the shapes (or dtypes) involved, so a learner can find the
line. Each case runs under our make_jaxpr and under jax.make_jaxpr and the two errors must have
the same class name and the same text.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import stages.s02_tracing as s02
from shared.testing import canonical_error_text

f23 = np.ones((2, 3), np.float32)
f32_ = np.ones((3, 2), np.float32)
i23 = np.ones((2, 3), np.int32)
f222 = np.ones((2, 2, 2), np.float32)

BAD = [
    ("add_f32_i32", lambda lax, x, y: lax.add(x, y), (f23, i23)),
    ("add_f32_python_int", lambda lax, x: lax.add(x, 2), (f23,)),
    ("mul_f16_python_float", lambda lax, x: lax.mul(x, 2.0), (f23.astype(np.float16),)),
    ("add_shapes", lambda lax, x, y: lax.add(x, y), (f23, f32_)),
    ("add_ranks", lambda lax, x, y: lax.add(x, y), (f23, np.ones(3, np.float32))),
    ("dot_general_contracting",
     lambda lax, x, y: lax.dot_general(x, y, (((1,), (0,)), ((), ()))), (f23, f23)),
    ("dot_general_contracting_pairwise",  # the same sizes, but not pair by pair
     lambda lax, x, y: lax.dot_general(x, y, (((0, 1), (0, 1)), ((), ()))), (f23, f32_)),
    ("dot_general_batch",
     lambda lax, x, y: lax.dot_general(x, y, (((2,), (1,)), ((0,), (0,)))),
     (np.ones((2, 3, 4), np.float32), np.ones((3, 4, 5), np.float32))),
    ("dot_general_axis_out_of_range",
     lambda lax, x, y: lax.dot_general(x, y, (((2,), (0,)), ((), ()))), (f23, f32_)),
    ("dot_general_rhs_axis_out_of_range",
     lambda lax, x, y: lax.dot_general(x, y, (((1,), (3,)), ((), ()))), (f23, f32_)),
    # a negative axis is not counted from the end: JAX refuses it
    ("dot_general_negative_lhs_contracting",
     lambda lax, x, y: lax.dot_general(x, y, (((-1,), (0,)), ((), ()))),
     (f23, np.ones((3, 4), np.float32))),
    ("dot_general_negative_rhs_batch",
     lambda lax, x, y: lax.dot_general(x, y, (((2,), (1,)), ((0,), (-3,)))), (f222, f222)),
    ("dot_general_batch_counts",
     lambda lax, x, y: lax.dot_general(x, y, (((1,), (0,)), ((0,), ()))), (f23, f32_)),
    ("dot_general_disjoint",
     lambda lax, x, y: lax.dot_general(x, y, (((0,), (0,)), ((0,), (0,)))), (f23, f23)),
    ("dot_general_lhs_contracting_repeated",
     lambda lax, x, y: lax.dot_general(x, y, (((1, 1), (0, 1)), ((), ()))), (f23, f32_)),
    ("dot_general_rhs_contracting_repeated",
     lambda lax, x, y: lax.dot_general(x, y, (((0, 1), (1, 1)), ((), ()))), (f23, f32_)),
    ("dot_general_lhs_batch_repeated",
     lambda lax, x, y: lax.dot_general(x, y, (((), ()), ((0, 0), (0, 1)))), (f222, f222)),
    ("dot_general_rhs_batch_repeated",
     lambda lax, x, y: lax.dot_general(x, y, (((), ()), ((0, 1), (1, 1)))), (f222, f222)),
    # two rules broken at once: the message is the one JAX checks first
    ("dot_general_repeated_and_unequal_batch_counts",
     lambda lax, x, y: lax.dot_general(x, y, (((), ()), ((0, 0), (0,)))), (f222, f222)),
    ("dot_general_repeated_and_not_disjoint",
     lambda lax, x, y: lax.dot_general(x, y, (((0, 0), (0, 1)), ((0,), (2,)))), (f222, f222)),
    ("dot_general_rhs_out_of_range_and_lhs_repeated",
     lambda lax, x, y: lax.dot_general(x, y, (((1, 1), (0, 5)), ((), ()))), (f23, f32_)),
    ("dot_general_rhs_batch_and_lhs_contracting_repeated",  # both batches before contracting
     lambda lax, x, y: lax.dot_general(x, y, (((2, 2), (1, 2)), ((0, 1), (0, 0)))),
     (np.ones((2, 2, 3, 3), np.float32), np.ones((2, 3, 3), np.float32))),
    ("reduce_sum_axis", lambda lax, x: lax.reduce_sum(x, (2,)), (f23,)),
    ("reduce_max_negative_axis", lambda lax, x: lax.reduce_max(x, (-1,)), (f23,)),
    ("reduce_sum_duplicate_axes", lambda lax, x: lax.reduce_sum(x, (0, 0)), (f23,)),
    ("reduce_sum_bool", lambda lax, x: lax.reduce_sum(x, (0,)), (f23 > 0,)),
    ("argmax_axis", lambda lax, x: lax.argmax(x, 2, np.int32), (f23,)),
    ("argmax_index_dtype", lambda lax, x: lax.argmax(x, 0, np.float32), (f23,)),
    ("cumsum_axis", lambda lax, x: lax.cumsum(x, 2), (f23,)),
    ("cumsum_negative_axis", lambda lax, x: lax.cumsum(x, -1), (f23,)),
    ("transpose_perm", lambda lax, x: lax.transpose(x, (0, 0)), (f23,)),
    ("broadcast_in_dim_sizes", lambda lax, x: lax.broadcast_in_dim(x, (4, 3), (0, 1)), (f23,)),
    ("broadcast_in_dim_ndim", lambda lax, x: lax.broadcast_in_dim(x, (2, 3), (0,)), (f23,)),
    ("broadcast_in_dim_duplicates",
     lambda lax, x: lax.broadcast_in_dim(x, (2, 2), (0, 0)), (np.ones((2, 2), np.float32),)),
    ("broadcast_in_dim_rank", lambda lax, x: lax.broadcast_in_dim(x, (3,), (0, 1)), (f23,)),
    ("broadcast_in_dim_negative_dimension",
     lambda lax, x: lax.broadcast_in_dim(x, (2, 3), (-2, 1)), (f23,)),
    ("broadcast_in_dim_negative_size",
     lambda lax, x: lax.broadcast_in_dim(x, (2, -3), (0, 1)), (f23,)),
    ("rev_negative_dimension", lambda lax, x: lax.rev(x, (-1,)), (f23,)),
    ("cummax_bool", lambda lax, x: lax.cummax(x), (f23 > 0,)),
    ("cummin_bool", lambda lax, x: lax.cummin(x, 1), (f23 > 0,)),
    ("convert_python_complex_to_real", lambda lax: lax.convert_element_type(1 + 2j, np.float32),
     ()),
    ("convert_python_complex_to_int", lambda lax: lax.convert_element_type(1 + 2j, np.int32), ()),
    ("full_of_python_complex", lambda lax: lax.full((2,), 1 + 2j, np.float32), ()),
    ("concatenate_shapes", lambda lax, x, y: lax.concatenate([x, y], 0),
     (f23, np.ones((2, 4), np.float32))),
    ("concatenate_dimension", lambda lax, x: lax.concatenate([x, x], 2), (f23,)),
    ("concatenate_dtypes", lambda lax, x, y: lax.concatenate([x, y], 0), (f23, i23)),
    ("squeeze_size", lambda lax, x: lax.squeeze(x, (0,)), (f23,)),
    ("slice_limit", lambda lax, x: lax.slice(x, (0, 0), (3, 3)), (f23,)),
    ("slice_start", lambda lax, x: lax.slice(x, (2, 0), (1, 3)), (f23,)),
    ("dynamic_slice_sizes", lambda lax, x: lax.dynamic_slice(x, (0, 0), (3, 3)), (f23,)),
    ("dynamic_update_slice_dtypes",
     lambda lax, x, u: lax.dynamic_update_slice(x, u, (0, 0)), (f23, i23[:1])),
    ("select_dtypes", lambda lax, p, x, y: lax.select_n(p, x, y), (f23 > 0, f23, i23)),
    ("select_which", lambda lax, x: lax.select_n(x, x, x), (f23,)),
    ("sin_int", lambda lax, x: lax.sin(x), (i23,)),
    ("floor_int", lambda lax, x: lax.floor(x), (i23,)),
    ("neg_bool", lambda lax, x: lax.neg(x), (f23 > 0,)),
    ("and_float", lambda lax, x: lax.bitwise_and(x, x), (f23,)),
    ("pow_int_base", lambda lax, x: lax.pow(x, x), (i23,)),
    ("pow_mixed_floats", lambda lax, x, y: lax.pow(x, y), (f23, f23.astype(np.float16))),
    ("integer_pow_negative_int", lambda lax, x: lax.integer_pow(x, -2), (i23,)),
    ("pad_config", lambda lax, x: lax.pad(x, 0.0, ((1, 2, 0),)), (f23,)),
    ("pad_dtypes", lambda lax, x: lax.pad(x, 0, ((1, 2, 0), (0, 0, 0))), (f23,)),
    ("iota_bool", lambda lax: lax.iota(np.bool_, 3), ()),
    ("clamp_min_shape", lambda lax, x: lax.clamp(np.zeros(3, np.float32), x, 1.0), (f23,)),
    ("clamp_max_shape", lambda lax, x: lax.clamp(0.0, x, np.ones(2, np.float32)), (f23,)),
    ("clamp_dtypes", lambda lax, x: lax.clamp(np.int32(0), x, np.float32(1)), (f23,)),
]


def _error(make_jaxpr, fn, lax, args):
    with pytest.raises(Exception) as info:
        make_jaxpr(lambda *a: fn(lax, *a))(*args)
    return info.value


# JAX warns that a complex value loses its imaginary part before it refuses the conversion
@pytest.mark.filterwarnings("ignore:Casting complex values to real:numpy.exceptions.ComplexWarning")
@pytest.mark.parametrize("name, fn, args", BAD, ids=[c[0] for c in BAD])
def test_bad_call_fails_at_trace_time_like_jax(name, fn, args):
    ours = _error(s02.make_jaxpr, fn, s02.lax, args)
    theirs = _error(jax.make_jaxpr, fn, jax.lax, args)
    assert type(ours).__name__ == type(theirs).__name__
    assert canonical_error_text(str(ours)) == canonical_error_text(str(theirs))


def test_messages_name_the_primitive_and_the_shapes():
    with pytest.raises(TypeError) as info:
        s02.make_jaxpr(lambda x, y: s02.lax.add(x, y))(f23, f32_)
    assert str(info.value) == "add got incompatible shapes for broadcasting: (2, 3), (3, 2)."
    with pytest.raises(TypeError) as info:
        s02.make_jaxpr(lambda x, y: s02.lax.dot_general(x, y, (((1,), (0,)), ((), ()))))(f23, f23)
    assert str(info.value) == (
        "dot_general requires contracting dimensions to have the same shape, got (3,) and (2,)."
    )
    with pytest.raises(TypeError, match=r"lax\.add requires arguments to have the same dtypes, "
                       r"got float32, int32\. \(Tip: jnp\.add is a similar function"):
        s02.make_jaxpr(lambda x, y: s02.lax.add(x, y))(f23, i23)
    with pytest.raises(TypeError) as info:
        s02.make_jaxpr(lambda x: s02.lax.clamp(np.zeros(3, np.float32), x, 1.0))(f23)
    assert str(info.value) == ("clamp requires min.shape == operand.shape or min.shape == (), "
                               "got min.shape=(3,), operand.shape=(2, 3).")


def test_reshape_to_a_different_size_fails_at_trace_time_unlike_jax():
    # JAX 0.10.2's shape rule skips this check (it fails later, when compiling); ours fails at
    # once, naming both shapes: a choice we make for learners.
    jax.make_jaxpr(lambda x: jax.lax.reshape(x, (4, 2)))(f23)
    with pytest.raises(TypeError) as info:
        s02.make_jaxpr(lambda x: s02.lax.reshape(x, (4, 2)))(f23)
    assert str(info.value) == (
        "reshape total size must be unchanged, got new_sizes (4, 2) (8 elements) for shape "
        "(2, 3) (6 elements)."
    )


def test_eager_calls_raise_the_same_errors():
    with pytest.raises(ValueError, match=r"reduction axes \(2,\) contains out-of-bounds indices "
                       r"for float32\[2,3\]\."):
        s02.lax.reduce_sum(f23, (2,))


# Eager calls on Python scalars. JAX 0.10.2 crashes on a Python scalar in reshape, slice,
# dynamic_slice and sort, so those are not compared. Where JAX's message prints the operand's
# type, it prints a Python scalar as weak (`~int32[]`): ours prints that only while tracing
# (below), since an eager impl here sees numpy arrays, which are never weak.
EAGER_WEAK = [
    ("transpose", lambda lax: lax.transpose(3, (1,))),
    ("squeeze", lambda lax: lax.squeeze(3, (0,))),
    ("pad", lambda lax: lax.pad(3, 0, [(1, 1, 0)] * 2)),
    ("concatenate", lambda lax: lax.concatenate([3, 4], 0)),
    ("select_n_dtypes", lambda lax: lax.select_n(True, 1, 2.0)),
    ("clamp_dtypes", lambda lax: lax.clamp(0, 1.5, 2)),
    ("cumsum_axis", lambda lax: lax.cumsum(3, axis=1)),
    ("argmax_axis", lambda lax: lax.argmax(3, 1, np.int32)),
    ("rev", lambda lax: lax.rev(3, (0,))),
    ("expand_dims", lambda lax: lax.expand_dims(3, (2,))),
    ("div_bool", lambda lax: lax.div(True, True)),
]


@pytest.mark.parametrize("name, fn", EAGER_WEAK, ids=[c[0] for c in EAGER_WEAK])
def test_an_eager_call_on_python_scalars_raises_jaxs_error(name, fn):
    with pytest.raises(Exception) as ours:
        fn(s02.lax)
    with pytest.raises(Exception) as theirs:
        fn(jax.lax)
    assert (type(ours.value).__name__, str(ours.value)) == (
        type(theirs.value).__name__, str(theirs.value))


@pytest.mark.parametrize("fn", [lambda lax, x: lax.integer_pow(x, -3),
                                lambda lax, x: lax.reduce_sum(x, axes=(1,))],
                         ids=["integer_pow_negative", "reduce_sum_axis"])
def test_a_traced_python_scalar_is_printed_weak_in_errors_as_jax(fn):
    ours = _error(s02.make_jaxpr, lambda lax: fn(lax, 3), s02.lax, ())
    theirs = _error(jax.make_jaxpr, lambda lax: fn(lax, 3), jax.lax, ())
    assert (type(ours), str(ours)) == (type(theirs), str(theirs))
    assert "~int32[]" in str(ours)
