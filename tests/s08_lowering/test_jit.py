"""Stage 7's jit lowered by stage 8.

A jit inside a jit is a call of a private function, as in JAX. Under the "stablehlo" backend
(`jax_platforms`), `Lowered.as_text()` is the module `jax.jit(f).lower(...)` prints, the
persistent cache key hashes that text (which carries no debug info), and the executable still
interprets the jaxpr. Without it, nothing of stage 7 changes by importing stage 8.
"""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import stages.s02_tracing as s02
import stages.s07_caches as s07
import stages.s08_lowering as s08
from stages.s02_tracing import config
from stages.s07_caches import cache_key, compilation_cache, compiler, xla_bridge
from stages.s07_caches.interpreter import InterpreterBackend, InterpreterExecutable

from .conftest import CORPUS, jax_text, lower_ours
from .test_fidelity import KNOWN_DIFFERENCES

jnp = s02.numpy
X = np.linspace(-1.0, 1.0, 3, dtype=np.float32)


@pytest.fixture
def stablehlo():
    with config.platforms("stablehlo"):
        yield xla_bridge.get_backend()


def _nested(ns, jit):
    """Two jits of one function, another function of the same name, a closed-over constant, an
    unused argument, a dict output: each a private function, named and numbered as JAX does."""
    c = np.arange(3, dtype=np.float32)

    def g(x, unused):
        return ns.sin(x) * c

    g1 = g

    def g(x):
        return ns.cos(x) + 1.0

    return lambda x: (jit(g1)(x, x) + jit(g1)(x * 2.0, x), jit(g)(x), {"a": jit(lambda y: y)(x)})


def test_a_jit_inside_a_jit_lowers_to_jaxs_call_of_a_private_function():
    def g(ns):
        return lambda x: ns.sin(x) * 2.0

    theirs = jax.jit(lambda x: jax.jit(g(jjnp))(x)).lower(X).as_text()
    closed = s07.jit(lambda x: s07.jit(g(jnp))(x)).trace(X).jaxpr
    assert "name=<lambda>" in str(closed)
    assert s08.lower_jaxpr(closed, "_lambda", result_names=["result"]).as_text() == theirs
    assert 'call @"<lambda>"(%arg0)' in theirs  # a private function, its name quoted
    closed = s07.jit(_nested(jnp, s07.jit)).trace(X).jaxpr
    text = s08.lower_jaxpr(closed, "_lambda",
                           result_names=["result[0]", "result[1]", "result[2]['a']"]).as_text()
    assert text == jax.jit(_nested(jjnp, jax.jit)).lower(X).as_text()
    assert "func.func private @g_0" in text


def test_importing_stage_8_leaves_jits_backend_alone_until_jax_platforms_names_it():
    assert type(xla_bridge.get_backend()) is InterpreterBackend
    f = s07.jit(lambda x: jnp.sin(x) * 2.0)
    assert f.lower(X).as_text().startswith("{ lambda ; a:f32[3]. let")  # a jaxpr
    with config.platforms("stablehlo"):
        assert type(xla_bridge.get_backend()) is s08.StableHloBackend
        assert f.lower(X).as_text().startswith("module @jit__lambda attributes")
    assert f.lower(X).as_text().startswith("{ lambda")


CLEAN = [p for p in CORPUS if p.name not in KNOWN_DIFFERENCES]


@pytest.mark.oracle
@pytest.mark.parametrize("program", CORPUS, ids=[p.name for p in CORPUS])
def test_lowered_text_is_stage_8s_module_and_jaxs_text(program, stablehlo):
    assert program.ours.__name__ == program.theirs.__name__  # jit names the module by it
    text = s07.jit(program.ours, static_argnums=program.static_argnums).lower(
        *program.args).as_text()
    assert text == lower_ours(program)
    if program in CLEAN:
        assert text == jax_text(program)


def test_most_of_the_corpus_is_jaxs_text_through_jit():
    assert len(CLEAN) >= 2 / 3 * len(CORPUS)


def test_the_executable_still_interprets_the_jaxpr(stablehlo):
    def f(x, y):
        return {"s": jnp.sum(jnp.tanh(x) * y), "d": jnp.dot(x, y)}

    def fj(x, y):
        return {"s": jjnp.sum(jjnp.tanh(x) * y), "d": jjnp.dot(x, y)}

    lowered = s07.jit(f).lower(X, X * 2.0)
    compiled = lowered.compile()
    assert isinstance(compiled.runtime_executable(), InterpreterExecutable)
    assert compiled.as_text() == str(s07.jit(f).trace(X, X * 2.0).jaxpr)  # what runs
    assert lowered.cost_analysis() == compiled.cost_analysis()  # the jaxpr's estimate
    ours, theirs = s07.jit(f)(X, X * 2.0), jax.jit(fj)(X, X * 2.0)
    for k in ("s", "d"):
        np.testing.assert_allclose(ours[k], theirs[k], rtol=1e-5)


# ------------------------------------------------------------------ the persistent cache key


def _key(fun, backend, *args):
    program = s07.jit(fun).lower(*args).compiler_ir()
    return cache_key.get(program, backend.devices(), compiler.get_compile_options(), backend)


def _digests(fun, backend, *args):
    program = s07.jit(fun).lower(*args).compiler_ir()
    return cache_key.ingredient_digests(program, backend.devices(),
                                        compiler.get_compile_options(), backend)


def scale(x):
    return jnp.sin(x) * 2.0


def test_the_key_moves_with_the_module_text(stablehlo):
    def other(x):
        return jnp.sin(x) * 3.0

    other.__name__ = "scale"
    before, after = _digests(scale, stablehlo, X), _digests(other, stablehlo, X)
    assert [k for k in before if before[k] != after[k]] == ["computation"]
    assert _key(scale, stablehlo, X) != _key(other, stablehlo, X)
    assert _key(scale, stablehlo, X).startswith("jit_scale-")


def _same_but_for_names(ns):
    """Two functions alike but for their helper's name and line, and their argument's name."""
    def helper(x):
        return ns.sin(x) * 2.0

    def another_helper(x):
        return ns.sin(x) * 2.0

    def f(y):
        return helper(y) + 1.0

    f1 = f

    def f(x):
        return another_helper(x) + 1.0

    return f1, f


def test_the_key_ignores_what_only_a_location_would_name(stablehlo):
    # JAX's oracle: one module text; the names and lines only in its locations
    a, b = (jax.jit(f).lower(X) for f in _same_but_for_names(jjnp))
    assert a.as_text() == b.as_text()
    assert '<locals>.helper"' in a.as_text(debug_info=True)
    assert '<locals>.another_helper"' in b.as_text(debug_info=True)
    f1, f2 = _same_but_for_names(jnp)
    program = s07.jit(f1).lower(X).compiler_ir()
    assert program.as_text(debug_info=True) == program.as_text()  # ours has no locations
    assert program.as_text() == s07.jit(f2).lower(X).as_text()
    assert _key(f1, stablehlo, X) == _key(f2, stablehlo, X)
    assert b"test_jit.py" not in program.as_bytes(debug_info=False)
    assert b"test_jit.py" in program.as_bytes(debug_info=True)
    with config.compilation_cache_include_metadata_in_key(True):  # then the source counts
        assert _key(f1, stablehlo, X) != _key(f2, stablehlo, X)


def test_a_second_compile_reads_the_disk(stablehlo, tmp_path):
    def f(x):
        return jnp.cos(x) * 5.0

    compilation_cache.reset_cache()
    try:
        with config.compilation_cache_dir(str(tmp_path)), \
                config.persistent_cache_min_compile_time_secs(0.0):
            first = s07.jit(f)(X)
            before = (compiler.persistent_cache.hits, compiler.backend_compiles.misses)
            s07.clear_caches()
            again = s07.jit(f)(X)
            after = (compiler.persistent_cache.hits, compiler.backend_compiles.misses)
    finally:
        compilation_cache.reset_cache()
    assert after[0] == before[0] + 1 and after[1] == before[1]  # a hit, and no compile
    (entry,) = tmp_path.glob("jit_f-*-cache")
    np.testing.assert_array_equal(first, again)
    np.testing.assert_allclose(again, np.cos(X) * 5.0, rtol=1e-6)
    assert entry.stat().st_size > 0


def test_the_module_is_stablehlo_only_and_says_where_the_hlo_is(stablehlo):
    lowered = s07.jit(lambda x: x * 2.0).lower(X)
    assert lowered.as_text("stablehlo") == lowered.as_text()
    assert "stablehlo.multiply" in lowered.as_text()
    with pytest.raises(ValueError) as info:
        lowered.as_text("hlo")
    assert str(info.value) == ("as_text('hlo') is not built here: the module is StableHLO only; "
                               "XLA's HLO of the compiled program is `.compile().as_text()`")
    with pytest.raises(ValueError, match="^unknown dialect: mhlo$"):
        lowered.as_text("mhlo")
