"""gather and the scatters lowered: jaxlib runs our text to JAX's values, and the text is JAX's,
the FILL_OR_DROP gathers and CLIP scatters (small lax programs) included."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import stages.s02_tracing as s02
import stages.s05_vmap as s05
import stages.s08_lowering as s08
from shared.xla_runner import run_text

X = np.arange(12.0, dtype=np.float32).reshape(4, 3)
I = np.array([[1], [5], [-1]], np.int32)
U = np.full((3, 3), 7.0, np.float32)
STARTS = np.array([0, 3, 1], np.int32)
POINT = np.array([2, 1], np.int32)  # one index vector: index_vector_dim 0, which MLIR leaves out


def _programs(lax, vmap):
    g = lax.GatherDimensionNumbers((1,), (0,), (0,))
    d = lax.ScatterDimensionNumbers((1,), (0,), (0,))
    g0 = lax.GatherDimensionNumbers((), (0, 1), (0, 1))
    d0 = lax.ScatterDimensionNumbers((), (0, 1), (0, 1))
    return {
        "gather_point": (lambda x, i: lax.gather(x, i, g0, (1, 1)), (X, POINT), True),
        "scatter_point": (lambda x, i: lax.scatter(x, i, x[0, 0] * 3.0, d0), (X, POINT), True),
        "gather_clip": (lambda x, i: lax.gather(x, i, g, (1, 3), mode="clip"), (X, I), True),
        "gather_promise": (lambda x, i: lax.gather(x, i[:1], g, (1, 3)), (X, I), True),
        "gather_fill": (lambda x, i: lax.gather(x, i, g, (1, 3), mode="fill"), (X, I), True),
        "scatter": (lambda x, i, u: lax.scatter(x, i, u, d), (X, I, U), True),
        "scatter_add": (lambda x, i, u: lax.scatter_add(x, i, u, d), (X, I, U), True),
        "scatter_mul": (lambda x, i, u: lax.scatter_mul(x, i, u, d), (X, I, U), True),
        "scatter_min": (lambda x, i, u: lax.scatter_min(x, i, u, d), (X, I, U), True),
        "scatter_max_clip": (lambda x, i, u: lax.scatter_max(x, i, u, d, mode="clip"),
                             (X, I, U), True),
        "vmap_dynamic_slice": (vmap(lambda x, s: lax.dynamic_slice(x, (s, 0), (2, 3)),
                                    in_axes=(None, 0)), (X, STARTS), True),
        "vmap_dynamic_update_slice": (vmap(lambda x, s: lax.dynamic_update_slice(
            x, x[:1] * 2.0, (s, 0)), in_axes=(None, 0)), (X, STARTS), False),
    }


OURS = _programs(s02.lax, s05.vmap)
THEIRS = _programs(jax.lax, jax.vmap)


def _body(text: str) -> str:
    return text.split("\n", 2)[2]  # past the module and @main lines (JAX names @main jit_<fn>)


@pytest.mark.parametrize("name", sorted(OURS))
def test_lowered_gather_and_scatter_run_to_jaxs_values(name):
    f, args, same_text = OURS[name]
    text = s08.lower_jaxpr(s02.make_jaxpr(f)(*args), "f").as_text()
    got = run_text(text, [np.asarray(a) for a in args])
    want = jax.jit(THEIRS[name][0])(*args)
    np.testing.assert_array_equal(got[0], np.asarray(want))
    if same_text:
        assert _body(text) == _body(jax.jit(THEIRS[name][0]).lower(*args).as_text())


TALL = np.arange(900.0, dtype=np.float32).reshape(300, 3)  # more rows than an int8 counts
NARROW = {"uint8": np.array([[1], [255], [44]], np.uint8),
          "int8": np.array([[1], [127], [-1]], np.int8)}


def _narrow_programs(lax):
    g = lax.GatherDimensionNumbers((1,), (0,), (0,))
    d = lax.ScatterDimensionNumbers((1,), (0,), (0,))
    return {
        "gather_fill": lambda x, i, u: lax.gather(x, i, g, (1, 3), mode="fill"),
        "scatter_clip": lambda x, i, u: lax.scatter(x, i, u, d, mode="clip"),
        "scatter_add_clip": lambda x, i, u: lax.scatter_add(x, i, u, d, mode="clip"),
    }


@pytest.mark.parametrize("index_dtype", sorted(NARROW))
@pytest.mark.parametrize("name", sorted(_narrow_programs(s02.lax)))
def test_fill_gathers_and_clip_scatters_of_narrow_indices_are_jaxs(name, index_dtype):
    """Bounds past the indices' dtype (299 in uint8): the gather widens its indices to int32
    first, the scatter caps the bound at the dtype's largest value, as JAX does."""
    f, theirs = _narrow_programs(s02.lax)[name], _narrow_programs(jax.lax)[name]
    args = (TALL, NARROW[index_dtype], np.full((3, 3), 7.0, np.float32))
    text = s08.lower_jaxpr(s02.make_jaxpr(f)(*args), "f").as_text()
    assert _body(text) == _body(jax.jit(theirs).lower(*args).as_text())
    kept = list(args[:2]) if name.startswith("gather") else list(args)  # u is unused there
    (got,) = run_text(text, kept)
    np.testing.assert_array_equal(got, np.asarray(jax.jit(theirs)(*args)))
