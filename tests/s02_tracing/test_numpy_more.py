"""jnp functions of lax_numpy_more.py and math_more.py against JAX 0.10.2's jax.numpy.

Values, dtypes and weak types always; printed jaxprs wherever JAX's own jaxpr uses only
primitives this stage has (JAX's jitted functions traced under `jax.disable_jit()`, as in
test_numpy_jaxprs.py), var and std with their `square` equations among them, split and
array_split with their one `split` equation, tile with its `tile` equation.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import stages.s02_tracing as s02
from shared.testing import RTOL_ELEMENTWISE, RTOL_REDUCTION
from stages.s02_tracing import numpy as snp
from stages.s02_tracing.array import Array

rng = np.random.default_rng(12)
X = (rng.standard_normal((3, 4)) * 3).astype(np.float32)
SQ = rng.standard_normal((4, 4)).astype(np.float32)
B = rng.standard_normal((2, 3, 4)).astype(np.float32)
POS = (rng.random((3, 4)) * 9 + 0.5).astype(np.float32)
V = rng.standard_normal(5).astype(np.float32)
I = rng.integers(-5, 6, size=(3, 4)).astype(np.int32)
I8 = I.astype(np.int8)
H = X.astype(np.float16)
C = (X + 1j * POS).astype(np.complex64)
TIES = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.125, 1.005], np.float32)

# (id, fn(np_mod, *args), args): the printed jaxprs must be equal
JAXPR_CASES = [
    ("round", lambda m, x: (m.round(x), m.around(x, 2), m.round(x, -1)), (X,)),
    ("round_int_is_no_eqn", lambda m, i: m.round(i), (I,)),
    ("round_f16_and_complex", lambda m, h, c: (m.round(h, 1), m.round(c, 1)), (H, C)),
    ("round_weak", lambda m, s: m.round(s * 2.0, 1), (1.25,)),
    ("linspace", lambda m: (m.linspace(0, 1, 5), m.linspace(0.0, 2, 4, endpoint=False),
                            m.linspace(-4, 4, 5, dtype=m.int32), m.linspace(1, 2, 1),
                            m.linspace(2, 5, 3, dtype=m.float16)), ()),
    ("eye", lambda m: (m.eye(3), m.eye(3, 4, k=1), m.eye(4, 2, k=-1, dtype=m.int32),
                       m.eye(2, dtype=bool), m.eye(3, k=5)), ()),
    ("tril_triu", lambda m, x, b: (m.tril(x), m.tril(x, -1), m.tril(x, 2), m.triu(x),
                                   m.triu(x, 1), m.triu(x, -2), m.tril(b, 1)), (X, B)),
    ("outer", lambda m, v, x, i: (m.outer(v, x), m.outer(i, v)), (V, X, I)),
    ("roll", lambda m, x: (m.roll(x, 1), m.roll(x, -1), m.roll(x, 5, axis=1),
                           m.roll(x, -2, axis=0), m.roll(x, (1, -1), axis=(0, 1))), (X,)),
    ("repeat", lambda m, x, i: (m.repeat(x, 2), m.repeat(x, 3, axis=0),
                                m.repeat(i, 2, axis=-1)), (X, I)),
    ("isclose", lambda m, x, y, i: (m.isclose(x, y), m.isclose(x, y, equal_nan=True),
                                    m.isclose(i, x, rtol=0.1, atol=1), m.allclose(x, y)),
     (X, POS, I)),
    ("log2_log10", lambda m, x, i, c: (m.log2(x), m.log10(x), m.log2(i), m.log10(i),
                                       m.log2(c), m.log10(c)), (POS, I, C)),
    ("trace", lambda m, x, sq, i, b: (m.trace(x), m.trace(sq, 1), m.trace(sq, -2),
                                      m.trace(i.astype(m.int8)), m.trace(b, axis1=1, axis2=2),
                                      m.trace(b, 1, 2, 0, m.float16)), (X, SQ, I, B)),
    ("diag", lambda m, v, x: (m.diag(v), m.diag(v, 2), m.diag(v, -1), m.diag(x), m.diag(x, 1),
                              m.diag(x, -2)), (V, X)),
    ("diagonal", lambda m, b: (m.diagonal(b), m.diagonal(b, 1, 1, 2), b.diagonal(0, 2, 0)),
     (B,)),
    ("count_nonzero", lambda m, i, x: (m.count_nonzero(i), m.count_nonzero(i, axis=0),
                                       m.count_nonzero(x > 0, axis=1, keepdims=True)), (I, X)),
    ("methods", lambda m, x, i: (x.round(1), x.trace(1), i.repeat(2, axis=1)), (X, I)),
    ("tile", lambda m, x, v, i: (m.tile(x, 2), m.tile(x, (2, 1)), m.tile(v, (3, 1, 2)),
                                 m.tile(i, (1, 1)), m.tile(x, (2, 1, 1)), m.tile(2.0, 3),
                                 m.tile(x, []), m.tile(v, np.int64(2))), (X, V, I)),
    ("split", lambda m, x, v: (m.split(x, 2, axis=1), m.split(v, [1, 3]), m.split(x, 3),
                               m.split(x, [1, 1], axis=-1), m.split(v, []),
                               m.split(x, np.array([2]), axis=1)), (X, V)),
    ("array_split", lambda m, x, v: (m.array_split(v, 3), m.array_split(x, 4, axis=1),
                                     m.array_split(x, 2), m.array_split(v, [2, 4]),
                                     m.array_split(v, 7), m.array_split(v, 2.0),
                                     m.split(x, 2, -1)), (X, V)),
]

# var/std: their deviations squared with the `square` primitive, as JAX's are
SQUARE_CASES = [
    ("var", lambda m, x, i: (m.var(x), m.var(x, axis=0), m.var(x, axis=1, ddof=1),
                             m.var(i, keepdims=True), m.var(x, (0, 1), ddof=2, keepdims=True),
                             m.var(x, 0, ddof=3), m.var(x, correction=1)), (X, I)),
    ("var_dtypes", lambda m, h, c, i: (m.var(h), m.var(c, axis=1), m.var(i, dtype=m.float16),
                                       m.var(i.astype(m.int8), 0)), (H, C, I)),
    ("std", lambda m, x, i: (m.std(x), m.std(x, axis=1, ddof=1), m.std(i, 0, keepdims=True),
                             x.std(), x.var(1), m.std(x, dtype=m.float32)), (X, I)),
]


def jaxprs_of(fn, args):
    """Ours and JAX's printed jaxprs of fn(numpy_module, *args), JAX's under disable_jit."""
    ours = s02.make_jaxpr(lambda *a: fn(snp, *a))(*args)
    with jax.disable_jit():
        theirs = jax.make_jaxpr(lambda *a: fn(jnp, *a))(*args)
    return str(ours), str(theirs)


@pytest.mark.parametrize("name, fn, args", JAXPR_CASES, ids=[c[0] for c in JAXPR_CASES])
def test_printed_jaxpr_equals_jax_numpys(name, fn, args):
    ours, theirs = jaxprs_of(fn, args)
    assert ours == theirs


@pytest.mark.parametrize("name, fn, args", SQUARE_CASES, ids=[c[0] for c in SQUARE_CASES])
def test_var_and_std_jaxprs_equal_jax_s_square_and_all(name, fn, args):
    ours, theirs = jaxprs_of(fn, args)
    assert " square " in ours
    assert ours == theirs


def _assert_same(ours, theirs, exact):
    ours_leaves, theirs_leaves = jax.tree.leaves(ours), jax.tree.leaves(theirs)
    assert len(ours_leaves) == len(theirs_leaves)
    for o, t in zip(ours_leaves, theirs_leaves, strict=True):
        assert isinstance(o, Array), type(o)
        assert bool(o.weak_type) == bool(t.weak_type), (o, t)
        o, t = np.asarray(o), np.asarray(t)
        assert o.dtype == t.dtype and o.shape == t.shape, (o, t)
        if exact:
            np.testing.assert_array_equal(o, t)
        else:
            np.testing.assert_allclose(o, t, rtol=RTOL_REDUCTION, atol=1e-5)


INEXACT = ("log2_log10", "round", "round_f16_and_complex", "round_weak", "linspace", "methods")
# (id, fn(np_mod, *args), args, exact): eager values, dtypes and weak types
VALUE_CASES = [
    # x * 10**d / 10**d: XLA divides by a constant as a multiply, one ulp off numpy's divide
    *[(name, fn, args, name not in INEXACT) for name, fn, args in JAXPR_CASES],
    *[(name, fn, args, False) for name, fn, args in SQUARE_CASES],
    ("round_ties_to_even", lambda m, t: (m.round(t), m.around(-t)), (TIES,), True),
    ("round_decimals", lambda m, t: (m.round(t, 1), m.round(t, 2)), (TIES,), False),
    ("round_python_scalars", lambda m: (m.round(2.5), m.round(3), m.round(-0.55, 1)), (), True),
    ("diag_beyond_the_matrix", lambda m, x: (m.diag(x, 7), m.diag(x, -3)), (X,), True),
    ("linspace_values", lambda m: (m.linspace(0, 10, 11), m.linspace(-1, 1, 7, endpoint=False),
                                   m.linspace(6, -2, 5, dtype=m.int32),
                                   m.linspace(0, 1, 0), m.linspace(0.5, 3, 2)), (), False),
    ("weak_scalars", lambda m: (m.log2(8.0), m.log10(100), m.isclose(1.0, 1.0 + 1e-7),
                                m.outer(2.0, 3), m.count_nonzero(0.0), m.var(2.0)), (), False),
]


@pytest.mark.parametrize("name, fn, args, exact", VALUE_CASES, ids=[c[0] for c in VALUE_CASES])
def test_values_dtypes_and_weak_types_equal_jax_numpys(name, fn, args, exact):
    ours = fn(snp, *[snp.asarray(a) if isinstance(a, np.ndarray) else a for a in args])
    theirs = fn(jnp, *[jnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args])
    _assert_same(ours, theirs, exact)


def test_tile_is_one_tile_equation():
    ours, _ = jaxprs_of(lambda m, x: m.tile(x, (2, 1)), (X,))
    assert "tile[reps=(2, 1)]" in ours and "broadcast" not in ours and "reshape" not in ours


def test_lax_tile_values_and_its_error_equal_jaxs():
    for reps in [(2, 1), (1, 3), (2, 2), (0, 1)]:
        ours, theirs = s02.lax.tile(X, reps), jax.lax.tile(X, reps)
        _assert_same(ours, theirs, exact=True)
    assert _error(s02.lax.tile, X, (2,)) == _error(jax.lax.tile, X, (2,))


def test_split_is_one_split_equation_with_jaxs_sizes():
    ours, _ = jaxprs_of(lambda m, v: m.array_split(v, 3), (V,))
    assert ours.count("= split[") == 1 and "slice" not in ours
    assert "sizes=(np.int64(2), np.int64(2), np.int64(1))" in ours


def test_off_by_one_pins_against_numpy():
    # each would fail if k, endpoint, a negative shift or ddof were read one off
    np.testing.assert_array_equal(snp.eye(3, 4, k=1), np.eye(3, 4, k=1, dtype=np.float32))
    np.testing.assert_array_equal(snp.tril(X, -1), np.tril(X, -1))
    np.testing.assert_array_equal(snp.triu(X, 1), np.triu(X, 1))
    np.testing.assert_array_equal(snp.diag(V, -2), np.diag(V, -2))
    np.testing.assert_array_equal(snp.diag(X, 1), np.diag(X, 1))
    np.testing.assert_array_equal(snp.trace(SQ, -1), np.float32(np.trace(SQ, -1)))
    np.testing.assert_array_equal(snp.linspace(0, 4, 5), np.arange(5, dtype=np.float32))
    np.testing.assert_array_equal(snp.linspace(0, 4, 4, endpoint=False),
                                  np.arange(4, dtype=np.float32))
    np.testing.assert_array_equal(snp.roll(np.arange(5), -2), np.roll(np.arange(5), -2))
    np.testing.assert_allclose(snp.var(X, ddof=1), np.var(X, ddof=1), rtol=RTOL_ELEMENTWISE)
    np.testing.assert_array_equal(snp.repeat(np.arange(3), 2), np.repeat(np.arange(3), 2))
    assert [np.shape(p) for p in snp.split(np.arange(6), [2, 5])] == [(2,), (3,), (1,)]


def _error(fn, *args, **kwargs):
    with pytest.raises(Exception) as info:  # noqa: PT011  (the type is compared)
        fn(*args, **kwargs)
    return type(info.value), str(info.value)


ERROR_CASES = [
    ("tril_1d", "tril", (V,), {}), ("triu_1d", "triu", (V,), {}),
    ("diag_3d", "diag", (B,), {}), ("diagonal_1d", "diagonal", (V,), {}),
    ("split_unequal", "split", (X, 3), {"axis": 1}),
    ("linspace_negative", "linspace", (0, 1, -1), {}),
    ("eye_negative", "eye", (-1,), {}), ("eye_k_float", "eye", (3,), {"k": 1.5}),
    ("round_int_negative_decimals", "round", (I, -1), {}),
    ("round_out", "round", (X,), {"out": X}),
    ("var_ddof_and_correction", "var", (X,), {"ddof": 1, "correction": 1}),
    ("std_int_dtype", "std", (X,), {"dtype": np.int32}),
    ("var_complex_to_real", "var", (C,), {"dtype": np.float32}),
    ("trace_same_axes", "trace", (X, 0, 1, 1), {}),
    ("roll_axis_out_of_range", "roll", (X, 1), {"axis": 2}),
    ("repeat_axis_out_of_range", "repeat", (X, 2), {"axis": -3}),
    ("outer_list", "outer", ([1, 2], V), {}),
    ("split_unsorted", "split", (V, [3, 1]), {}), ("split_past_the_end", "split", (V, [2, 9]), {}),
    ("split_negative_index", "split", (X, [-1]), {"axis": -1}),
    ("array_split_zero_sections", "array_split", (V, 0), {}),
    ("split_axis_out_of_range", "split", (X, 2), {"axis": 2}),
    # a float rep reaches the shape rule, which refuses the float shape it makes. Reps no other
    # test uses: JAX caches a primitive's eager call by its params, and (1, 2.0) == (1, 2), so
    # once jnp.tile(X, 2) has run, jnp.tile(X, 2.0) returns its cached answer instead of raising
    ("tile_float_rep", "tile", (X, 13.0), {}), ("tile_float_reps", "tile", (X, (11.0, 1)), {}),
    ("tile_numpy_float_rep", "tile", (X, [np.float32(17)]), {}),
    ("broadcast_to_float_shape", "broadcast_to", (V, (2.0, 5)), {}),
    ("broadcast_to_none_shape", "broadcast_to", (V, [None, 5]), {}),
    ("zeros_float_shape", "zeros", ((2.0, 3),), {}),
    ("full_none_size", "full", ([3, None], 1.0), {}),
]


@pytest.mark.parametrize("name, fn, args, kwargs", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_errors_match_jax_word_for_word(name, fn, args, kwargs):
    assert _error(getattr(snp, fn), *args, **kwargs) == \
        _error(getattr(jnp, fn), *args, **kwargs)


def test_lax_tile_refuses_a_float_rep_as_jaxs():
    assert _error(s02.lax.tile, X, (19.0, 1)) == _error(jax.lax.tile, X, (19.0, 1))


def test_broadcast_to_takes_an_int_as_a_one_dimensional_shape_as_jaxs():
    np.testing.assert_array_equal(snp.broadcast_to(np.float32(2), 3),
                                  jnp.broadcast_to(np.float32(2), 3))


def test_traced_static_arguments_are_refused():
    with pytest.raises(Exception, match="jnp.round"):  # noqa: PT011
        s02.make_jaxpr(lambda d: snp.round(X, d))(1)
    with pytest.raises(Exception, match="must be static"):  # noqa: PT011
        s02.make_jaxpr(lambda r: snp.repeat(X, r))(2)
    with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
        snp.repeat(V, [1, 2, 1, 2, 1])  # a list of repeats: refused, as JAX refuses it


def test_the_stage_12_front_door_exports_the_new_functions():
    import stages.s12_system as jax12

    for name in ("linspace", "var", "std", "round", "around", "eye", "tril", "triu", "outer",
                 "roll", "tile", "repeat", "split", "isclose", "allclose", "log2", "log10",
                 "trace", "diag", "diagonal", "count_nonzero"):
        assert getattr(jax12.numpy, name) is getattr(snp, name), name
        assert name in snp.__all__
    np.testing.assert_array_equal(jax12.numpy.linspace(0, 1, 3), np.array([0, 0.5, 1], "f4"))


ARRAY_METHOD_CASES = {
    "sort": lambda a: a.sort(), "sort_axis0": lambda a: a.sort(axis=0),
    "sort_descending": lambda a: a.sort(descending=True), "argsort": lambda a: a.argsort(),
    "argsort_flat": lambda a: a.argsort(axis=None),
    "take": lambda a: a.take(np.array([0, 2]), axis=1),
    "take_flat": lambda a: a.take(np.array([5, 0])),
    "mT": lambda a: a.mT, "mT_of_a_vector": lambda a: a[0].mT,
}


@pytest.mark.parametrize("name", sorted(ARRAY_METHOD_CASES))
def test_sort_argsort_take_and_mT_are_array_methods_as_in_jax(name):
    f, x = ARRAY_METHOD_CASES[name], np.array([[3., 1., 2.], [0., 5., 4.]], np.float32)

    def outcome(module, trace):
        try:
            if trace:
                return str(trace(f)(x))
            r = f(module.asarray(x))
            return np.asarray(r).tolist(), str(r.dtype)
        except Exception as e:  # noqa: BLE001 (the error is compared too)
            return type(e).__name__, str(e)

    assert outcome(snp, None) == outcome(jnp, None)
    if name != "mT_of_a_vector":  # JAX's printed jaxpr of the same method
        with jax.disable_jit():
            assert outcome(None, s02.make_jaxpr) == outcome(None, jax.make_jaxpr)
