"""A corpus of small functions written once against a `lax` and a `jnp` module parameter.

Each case runs unchanged on ours (`stages.s02_tracing.lax`/`.numpy`) and on JAX
(`jax.lax`/`jax.numpy`), so tests can compare `str(make_jaxpr(...))`, eval_jaxpr results and eager
results side by side. Later stages reuse the corpus (jvp, vmap, jit of the same functions).

A case's function is `fn(lax, jnp, *args)`; `Case.bind(lax, jnp)` gives the plain function.
Tags: "operators" marks a case using Python operators (`x * 2.0`) on its arguments: run eagerly
on numpy inputs those are numpy's operators, not ours, so only its traced runs are ours.
"jit_inside_in_jax" marks a case calling a jnp function that JAX 0.10.2 wraps in `jit` (printed
as a nested `jit[...]` equation, which stage 2 cannot have): compare its jaxpr with JAX's traced
under `jax.disable_jit()`, which inlines that function as ours is written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

_rng = np.random.default_rng(0)


def _f32(*shape: int) -> np.ndarray:
    return _rng.standard_normal(shape).astype(np.float32)


def _pos32(*shape: int) -> np.ndarray:
    return (_rng.random(shape) + 0.5).astype(np.float32)


def _i32(*shape: int, low: int = -5, high: int = 6) -> np.ndarray:
    return _rng.integers(low, high, size=shape).astype(np.int32)


@dataclass(frozen=True)
class Case:
    name: str
    fn: Callable[..., Any]  # fn(lax, jnp, *args)
    args: tuple[Any, ...]
    static_argnums: tuple[int, ...] = ()
    tags: frozenset[str] = field(default_factory=frozenset)

    def bind(self, lax: Any, jnp: Any) -> Callable[..., Any]:
        """The function of the example arguments alone, for one pair of modules."""
        fn = self.fn

        def f(*args: Any, **kwargs: Any) -> Any:
            return fn(lax, jnp, *args, **kwargs)

        f.__name__ = self.name
        return f


CASES: list[Case] = []


def case(*args: Any, static_argnums: tuple[int, ...] = (), tags: str = "") -> Callable:
    """Decorator: register `fn(lax, jnp, ...)` with its example arguments."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        CASES.append(Case(fn.__name__, fn, args, static_argnums, frozenset(tags.split())))
        return fn

    return register


# Constants captured from the closure: arrays become constvars, scalars literals.
_W = _f32(4, 3)
_B = _f32(3)
_SCALE = np.float32(0.5)

# ------------------------------------------------------------------ elementwise and literals


@case(1.0)
def sin_times_two(lax, jnp, x):
    return lax.mul(lax.sin(x), 2.0)


@case(_f32(3))
def weak_scalar_stays_rank_zero(lax, jnp, x):
    return lax.add(lax.mul(x, 3.0), 1.0)


@case(np.int32(7))
def int_literal(lax, jnp, x):
    return lax.add(x, 1)


@case(_pos32(2, 3))
def unary_chain(lax, jnp, x):
    y = lax.exp(lax.neg(x))
    y = lax.add(lax.log(x), lax.tanh(y))
    y = lax.mul(lax.sqrt(x), lax.rsqrt(lax.add(y, 1.0)))
    return lax.logistic(lax.log1p(y))


@case(_f32(3))
def unused_value_prints_underscore(lax, jnp, x):
    lax.sin(x)  # recorded but never read: the printer names its binder `_`
    return lax.cos(x)


@case(_f32(5))
def rounding_family(lax, jnp, x):
    return (lax.floor(x), lax.ceil(x), lax.round(x), lax.sign(x), lax.abs(x))


@case(_f32(4), _pos32(4))
def binary_family(lax, jnp, x, y):
    a = lax.sub(lax.div(x, y), lax.max(x, y))
    b = lax.min(lax.rem(x, y), lax.pow(y, x))
    return lax.add(a, b)


@case(_f32(3))
def integer_pow_and_erf(lax, jnp, x):
    return lax.erf(lax.integer_pow(x, 3)), lax.integer_pow(x, -2)


@case(_f32(3), _f32(3))
def comparisons_and_select(lax, jnp, x, y):
    big = lax.gt(x, y)
    return lax.select(big, x, y), lax.select_n(lax.le(x, 0.0), x, lax.neg(x))


@case(_i32(4), _i32(4))
def integer_comparisons(lax, jnp, x, y):
    return lax.eq(x, y), lax.ne(x, y), lax.lt(x, 0), lax.ge(y, x)


@case(_i32(4, low=0, high=1000).astype(np.uint32), np.uint32(3))
def bitwise_ops(lax, jnp, x, k):
    # the pieces a threefry PRNG is built from
    y = lax.bitwise_xor(lax.shift_left(x, k), lax.shift_right_logical(x, k))
    return lax.bitwise_and(lax.bitwise_or(y, x), lax.bitwise_not(x))


@case(_f32(3), _i32(3))
def convert_element_type(lax, jnp, x, i):
    xi = lax.convert_element_type(x, np.int32)
    fi = lax.convert_element_type(i, np.float32)
    return lax.add(xi, i), lax.mul(fi, x), lax.convert_element_type(x, np.bool_)


# ------------------------------------------------------------------ pytrees, consts, outputs


@case({"b": (_f32(2), 2.0), "a": _f32(2)})
def pytree_input(lax, jnp, d):
    return lax.add(d["a"], lax.mul(d["b"][0], d["b"][1]))


@case(_f32(2, 4))
def pytree_output(lax, jnp, x):
    return {"sum": lax.reduce_sum(x, (1,)), "pair": (x, lax.neg(x)), "none": None}


@case(_f32(2, 4))
def closure_constants(lax, jnp, x):
    y = lax.dot_general(x, _W, (((1,), (0,)), ((), ())))
    return lax.add(lax.mul(y, _SCALE), lax.broadcast_in_dim(_B, (2, 3), (1,)))


@case(_f32(3))
def same_constant_twice_is_one_constvar(lax, jnp, x):
    return lax.add(lax.add(x, _B), _B)


@case(2.0)
def constant_output_and_passthrough(lax, jnp, x):
    return 1.0, x, _B


@case(_f32(3), 4, static_argnums=(1,))
def static_argument_unrolls(lax, jnp, x, n):
    for _ in range(n):
        x = lax.mul(x, 2.0)
    return x


@case(_f32(3), 1.5)
def weak_typed_argument(lax, jnp, x, s):
    return lax.mul(x, lax.convert_element_type(s, np.float32))


# ------------------------------------------------------------------ structure


@case(_f32(2, 3, 4))
def reshape_transpose_squeeze(lax, jnp, x):
    y = lax.transpose(x, (2, 0, 1))
    y = lax.reshape(y, (4, 6))
    z = lax.expand_dims(y, (0,))
    return lax.squeeze(z, (0,))


@case(_f32(6, 5))
def slices(lax, jnp, x):
    a = lax.slice(x, (1, 0), (5, 5), (2, 1))
    b = lax.dynamic_slice(x, (2, 1), (3, 2))
    return a, b


@case(_f32(6, 5), _f32(2, 5), np.int32(3))
def dynamic_update(lax, jnp, x, u, i):
    y = lax.dynamic_update_slice(x, u, (i, 0))
    return lax.dynamic_slice(y, (i, 0), (2, 5))


@case(_f32(2, 3), _f32(4, 3))
def pad_and_concatenate(lax, jnp, x, y):
    p = lax.pad(x, 0.0, ((1, 1, 0), (0, 2, 1)))
    c = lax.concatenate([x, y, x], 0)
    return p, c


@case(_f32(3))
def broadcasting(lax, jnp, x):
    row = lax.broadcast_in_dim(x, (4, 3), (1,))
    col = lax.broadcast_in_dim(x, (3, 4), (0,))
    return lax.add(row, lax.transpose(col, (1, 0))), lax.broadcast(x, (2,))


@case(_f32(4))
def iota_and_full(lax, jnp, x):
    i = lax.convert_element_type(lax.iota(np.int32, 4), np.float32)
    return lax.add(x, i), lax.full((2, 2), 3.0, np.float32)


# ------------------------------------------------------------------ reductions and dots


@case(_f32(3, 4))
def reductions(lax, jnp, x):
    return (lax.reduce_sum(x, (0,)), lax.reduce_max(x, (1,)), lax.reduce_min(x, (0, 1)))


@case(np.array([[True, False, True], [True, True, True]]), _i32(3, 4))
def logical_reductions(lax, jnp, b, i):
    return (lax.reduce_or(b, (0,)), lax.reduce_and(b, (0, 1)), lax.reduce_xor(b, (1,)),
            lax.reduce_or(i, (1,)), lax.reduce_and(i, (0,)), lax.reduce_xor(i, ()))


@case(_f32(3, 5))
def argmax_and_cumsum(lax, jnp, x):
    return lax.argmax(x, 1, np.int32), lax.cumsum(x, axis=1), lax.cumsum(x, 0, reverse=True)


@case(_f32(2, 3, 4), _f32(2, 4, 5))
def batched_dot_general(lax, jnp, a, b):
    return lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,))))


@case(_f32(3, 4), _f32(4))
def dot_matrix_vector(lax, jnp, m, v):
    return lax.dot(m, v)


@case(_f32(4, 3))
def softmax_by_hand(lax, jnp, x):
    m = lax.reduce_max(x, (1,))
    e = lax.exp(lax.sub(x, lax.broadcast_in_dim(m, (4, 3), (0,))))
    s = lax.reduce_sum(e, (1,))
    return lax.div(e, lax.broadcast_in_dim(s, (4, 3), (0,)))


# ------------------------------------------------------------------ through the numpy facade


@case(_f32(4, 3), _f32(3), tags="operators")
def jnp_operators(lax, jnp, x, b):
    return (x * 2.0 + b) / 3 - x ** 2, -x, x > 0.5, abs(x)


@case(_f32(4, 3), _f32(3, 2))
def jnp_mlp_layer(lax, jnp, x, w):
    return jnp.tanh(jnp.matmul(x, w) + 1.0).sum(axis=0)


@case(_f32(4, 3))
def jnp_reductions(lax, jnp, x):
    return jnp.mean(x, axis=0), jnp.max(x), jnp.sum(x, axis=(0, 1)), jnp.min(x, axis=1)


@case(_f32(4, 3))
def jnp_reshape_and_transpose(lax, jnp, x):
    return jnp.reshape(x, (3, 4)).T, jnp.exp(jnp.log(jnp.abs(x) + 1.0)), x.reshape(12)


@case(_f32(4, 3), _i32(2, 3))
def jnp_any_all(lax, jnp, x, i):
    return (jnp.any(x > 0.5), jnp.all(x, axis=0), i.any(axis=-1, keepdims=True), i.all(),
            jnp.sum(x < 0, axis=1, dtype=bool), jnp.prod(i, dtype=bool))


@case(np.array([1.0, np.nan, np.inf, -np.inf, -0.0], np.float32), _i32(5))
def jnp_logical_and_float_tests(lax, jnp, x, i):  # jnp.isinf is a jit in JAX: in test_numpy
    return (jnp.isnan(x), jnp.isfinite(x), jnp.isfinite(i), jnp.logical_and(x, i),
            jnp.logical_or(x > 0, i), jnp.logical_xor(i, True), jnp.logical_not(x))


# JAX 0.10.2 wraps jnp.where in a jit (a `jit[name=_where jaxpr={...}]` equation): see the tag.
@case(_f32(4, 3), tags="jit_inside_in_jax")
def jnp_where(lax, jnp, x):
    return jnp.where(x > 0, x, 0.0)


@case(np.arange(6, dtype=np.int32), tags="operators")
def jnp_int_promotion(lax, jnp, i):
    return i + 1, i * 2.5, i / 2
