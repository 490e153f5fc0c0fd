"""Which layer answers: the counters of every layer, exactly, for each kind of call.

Each case calls something twice and states what the first call and the second call did to each
layer as {layer: (hits, misses)} (layers left out were not asked). The second call is the point:
whatever composition a jit sits in, a repeated call must not trace, lower or compile again. The
values themselves are compared with JAX in test_composition.py.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import stages.s02_tracing as s02
import stages.s04_autodiff as s04
import stages.s05_vmap as s05
import stages.s06_control_flow as s06
import stages.s07_caches as s07
from stages.s07_caches import pjit_rules, util

jnp = s02.numpy
X = np.linspace(-1, 1, 3).astype(np.float32)
ALL_MISS = {"signature": (0, 1), "trace": (0, 1), "lowering": (0, 1), "executable": (0, 1)}


def fresh():
    """A function no other test has jitted: every layer starts cold for it."""
    return s07.jit(lambda x, y: jnp.sin(x) * y)


def twice(counts, call):
    deltas = []
    for _ in range(2):
        c = counts()
        call()
        deltas.append(c.delta())
    return deltas


CASES = {
    # a hit at the signature cache answers everything: nothing below is asked
    "plain call": (lambda g: g(X, 2.0), ALL_MISS, {"signature": (1, 0)}),
    # AOT stations walk layers 2-4; the second time each answers from its cache
    "trace, lower, compile": (lambda g: g.trace(X, 2.0).lower().compile()(X, 2.0),
                              {"trace": (0, 1), "lowering": (0, 1), "executable": (0, 1)},
                              {"trace": (1, 0), "lowering": (1, 0), "executable": (1, 0)}),
    # under grad, jit is traced (no signature cache: the arguments are tracers), split into a
    # known and an unknown jit; the known one runs now, the unknown one is transposed and run
    "grad of jit": (lambda g: s04.grad(lambda x: g(x, 2.0).sum())(X),
                    {"trace": (0, 1), "lowering": (0, 2), "executable": (0, 2)},
                    {"trace": (1, 0), "lowering": (2, 0), "executable": (2, 0)}),
    "vmap of jit": (lambda g: s05.vmap(g)(np.ones((2, 3), np.float32), np.ones(2, np.float32)),
                    {"trace": (0, 1), "lowering": (0, 1), "executable": (0, 1)},
                    {"trace": (1, 0), "lowering": (1, 0), "executable": (1, 0)}),
    # the outer jit's program holds the inner jit: nothing of the inner is asked when it runs
    # (and a new jit object of the same function shares the signature cache's entries)
    "jit of jit": (lambda g: s07.jit(g)(X, 2.0),
                   {"signature": (0, 1), "trace": (0, 2), "lowering": (0, 1),
                    "executable": (0, 1)},
                   {"signature": (1, 0)}),
    # an eager scan runs its body (and the jit equation in it) once per element of X
    "jit in an eager scan body": (lambda g: s06.scan(lambda c, xi: (g(c, xi), c), X, X),
                                  {"trace": (0, 1), "lowering": (2, 1), "executable": (2, 1)},
                                  {"trace": (1, 0), "lowering": (3, 0), "executable": (3, 0)}),
    "jit in an eager cond branch": (lambda g: s06.cond(True, lambda a: g(a, 2.0), jnp.cos, X),
                                    {"trace": (0, 1), "lowering": (0, 1), "executable": (0, 1)},
                                    {"trace": (1, 0), "lowering": (1, 0), "executable": (1, 0)}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_each_layer_answers_as_expected(name, counts):
    call, first, second = CASES[name]
    g = fresh()
    assert twice(counts, lambda: call(g)) == [first, second]


def test_jit_of_grad_and_of_a_scan_with_a_jit_inside_are_one_signature_hit(counts):
    g = fresh()
    outer = s07.jit(s04.grad(lambda x: g(x, 2.0).sum()))
    assert twice(counts, lambda: outer(X)) == [
        {"signature": (0, 1), "trace": (0, 2), "lowering": (0, 1), "executable": (0, 1)},
        {"signature": (1, 0)}]
    h = fresh()
    scanned = s07.jit(lambda x: s06.scan(lambda c, xi: (h(c, xi), c), x, x))
    assert twice(counts, lambda: scanned(X))[1] == {"signature": (1, 0)}


def test_a_function_redefined_in_a_loop_misses_every_layer_every_time(counts):
    deltas = []
    for _ in range(3):
        c = counts()
        s07.jit(lambda x: x + 1.0)(X)
        deltas.append(c.delta())
    assert deltas == [ALL_MISS] * 3


def test_a_second_jit_of_the_same_function_shares_its_entries(counts):
    def f(x):
        return x * 3.0

    s07.jit(f)(X)
    c = counts()
    s07.jit(f)(X)  # keyed on the function and the options, not on the jit object
    assert c.delta() == {"signature": (1, 0)}
    s07.jit(f, keep_unused=True)(X)  # other options: another signature, the same trace
    assert c.delta() == {"signature": (1, 1), "trace": (1, 0), "lowering": (0, 1),
                         "executable": (0, 1)}


def test_cache_info_counts_one_functions_calls_and_the_report_lists_every_layer():
    g = fresh()
    for x in (X, X, X[:2]):
        g(x, 2.0)
    info = g.cache_info()
    assert info["signature"] == (1, 2, 2)  # hits, misses, this function's entries
    assert info["trace"] == (0, 2, 2)
    assert info["lowering"][:2] == info["executable"][:2] == (0, 2)
    report = s07.cache_report().splitlines()
    assert [line.split()[0] for line in report] == [
        "layer", "signature", "trace", "lowering", "executable", "persistent", "primitive"]


def test_threads_trace_and_compile_each_signature_once(counts):
    traces = []

    def f(x):
        traces.append(1)
        return x * 2.0

    g = s07.jit(f)
    barrier = threading.Barrier(8)
    results = [None] * 8

    def run(i):
        barrier.wait()  # all eight ask at once
        results[i] = g(X + i)

    c = counts()
    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(traces) == 1
    assert c.delta() == {"signature": (7, 1), "trace": (0, 1), "lowering": (0, 1),
                         "executable": (0, 1)}
    for i, r in enumerate(results):
        np.testing.assert_allclose(r, (X + i) * 2.0)


def test_clear_caches_empties_every_layer_and_the_memoized_transformations(counts):
    g = fresh()
    g(X, 2.0)
    s04.grad(lambda x: g(x, 2.0).sum())(X)
    s05.vmap(g)(np.ones((2, 3), np.float32), np.ones(2, np.float32))
    with s07.op_by_op():
        jnp.cos(X)
    memos = [pjit_rules._jvp_jaxpr, pjit_rules._split, pjit_rules._transpose_jaxpr,
             pjit_rules._batch_jaxpr]
    assert all(m.cache.size() > 0 for m in memos)
    s07.clear_caches()
    assert {name: layer.size() for name, layer in util.registry.items()
            if layer.size()} == {}
    assert [m.cache.size() for m in memos] == [0] * len(memos)
    c = counts()
    s04.grad(lambda x: g(x, 2.0).sum())(X)  # traced, lowered and compiled again
    assert c.delta() == {"trace": (0, 1), "lowering": (0, 2), "executable": (0, 2)}


def test_a_jitted_function_asks_its_own_signature_table_again_after_a_clear(counts):
    g = fresh()
    g(X, 2.0)
    s07.clear_caches()  # empties the table g holds; a stale entry here would skip the trace
    c = counts()
    g(X, 2.0)
    assert c.delta() == ALL_MISS
    c = counts()
    g(X, 2.0)  # answered from the table g holds, counted for g as for the layer
    assert c.delta() == {"signature": (1, 0)}
    assert g.cache_info()["signature"] == (1, 2, 1)


def test_a_cache_evicts_the_least_recently_used_key_as_jaxs_util_cache_does():
    from jax._src import util as jax_util

    keys = ["a", "b", "a", "c", "b", "a", "d", "a", "c", "c"]
    ours, ours_computed = util.Cache("test lru", "a letter", maxsize=2, layer=False), []
    for k in keys:
        ours.get_or_compute(k, lambda k=k: ours_computed.append(k) or k)

    theirs_computed = []

    @jax_util.cache(max_size=2, trace_context_in_key=False)
    def theirs(k):
        theirs_computed.append(k)
        return k

    for k in keys:
        theirs(k)
    info = theirs.cache_info()
    assert ours_computed == theirs_computed == ["a", "b", "c", "b", "a", "d", "c"]
    assert ours.info() == (info.hits, info.misses, info.currsize) == (3, 7, 2)


def test_a_computation_asking_for_its_own_key_computes_it_again_as_jaxs_util_cache_does():
    from jax._src import util as jax_util

    ours, ours_computed = util.Cache("test reentrant", "a letter", layer=False), []

    def compute():
        ours_computed.append("k")
        # the same key again from inside its own computation: a second miss, not a wait
        return ours.get_or_compute("k", compute) + 1 if len(ours_computed) == 1 else 10

    theirs_computed = []

    @jax_util.cache(max_size=8, trace_context_in_key=False)
    def theirs(k):
        theirs_computed.append(k)
        return theirs(k) + 1 if len(theirs_computed) == 1 else 10

    results = []
    worker = threading.Thread(target=lambda: results.append(ours.get_or_compute("k", compute)),
                              daemon=True)
    worker.start()
    worker.join(10)  # a right answer takes milliseconds; a wrong one waits forever
    assert not worker.is_alive(), "the inner ask waits for its own thread's computation"
    assert results == [theirs("k")] == [11]
    info = theirs.cache_info()
    assert ours_computed == theirs_computed == ["k", "k"]
    assert ours.info() == (info.hits, info.misses, info.currsize) == (0, 2, 1)
    # the inner computation's value was stored first and stays: the outer one is only returned
    assert ours.get_or_compute("k", compute) == theirs("k") == 10


def test_a_stored_none_is_a_hit_as_jaxs_util_cache_does():
    from jax._src import util as jax_util

    ours, ours_computed = util.Cache("test none", "a letter", layer=False), []
    theirs_computed = []

    @jax_util.cache(max_size=8, trace_context_in_key=False)
    def theirs(k):
        theirs_computed.append(k)

    for k in ["a", "a", "b", "a"]:
        assert ours.get_or_compute(k, lambda k=k: ours_computed.append(k)) is None
        assert theirs(k) is None
    info = theirs.cache_info()
    assert ours_computed == theirs_computed == ["a", "b"]
    assert ours.info() == (info.hits, info.misses, info.currsize) == (2, 2, 2)


def test_a_thread_waiting_for_another_threads_computation_counts_a_hit():
    cache = util.Cache("test single flight", "a letter", layer=False)
    started, release = threading.Event(), threading.Event()
    calls, results, errors = [], {}, []

    def compute():
        calls.append(1)
        started.set()
        release.wait(30)
        return "value"

    def ask(who):
        try:
            results[who] = cache.get_or_compute("k", compute)
        except BaseException as err:  # noqa: BLE001 (raised again in the test's thread)
            errors.append(err)

    first = threading.Thread(target=ask, args=("first",))
    first.start()
    while not started.is_set() and first.is_alive():
        time.sleep(0.001)
    second = threading.Thread(target=ask, args=("second",))
    second.start()
    # until the second thread has looked the key up; should it not have in 5 s, it finds the
    # value stored, again a hit: the deadline cannot fail a right answer, only slow a wrong one
    deadline = time.monotonic() + 5
    while sum(cache.info()[:2]) < 2 and second.is_alive() and time.monotonic() < deadline:
        time.sleep(0.001)
    release.set()
    first.join()
    second.join()
    if errors:
        raise errors[0]
    assert results == {"first": "value", "second": "value"} and calls == [1]
    assert cache.info() == (1, 1, 1)  # the second thread was answered by the first: a hit
