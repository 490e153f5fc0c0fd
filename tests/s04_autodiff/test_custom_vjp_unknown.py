"""A custom_vjp whose inputs are unknown to partial evaluation keeps its rule (the unknown
jaxpr holds the call whole, so a later grad still runs `bwd`), as JAX's JaxprTrace does; vjp,
grad and the custom rules see canonical (32-bit) values, as JAX's."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from jax._src import core as jax_core
from jax._src.interpreters import partial_eval as jax_pe

import stages.s04_autodiff as s04
from stages.s02_tracing import eval_jaxpr, make_jaxpr
from stages.s02_tracing import numpy as jnp
from stages.s03_partial_eval import partial_eval_jaxpr_nounits

OURS = (s04, jnp, make_jaxpr, partial_eval_jaxpr_nounits, eval_jaxpr)
JAX = (jax, jjnp, jax.make_jaxpr, jax_pe.partial_eval_jaxpr_nounits, jax_core.eval_jaxpr)


def _sin_with_a_loud_rule(lib, ns):
    @lib.custom_vjp
    def f(x):
        return ns.sin(x)
    f.defvjp(lambda x: (ns.sin(x), x), lambda x, g: (100.0 * g,))  # not sin's derivative
    return f


@pytest.mark.parametrize("unknowns", [[True, False], [False, True]],
                         ids=["x unknown", "y unknown"])
def test_the_unknown_side_keeps_the_custom_vjp_rule_as_jaxs(unknowns):
    results = []
    for lib, ns, mj, pe_nounits, ev in (OURS, JAX):
        f = _sin_with_a_loud_rule(lib, ns)
        jaxpr = mj(lambda x, y, f=f: f(x) * y)(1.0, 2.0)
        jaxpr_known, jaxpr_unknown, _, _ = pe_nounits(jaxpr, unknowns, False)
        args = (1.0, 2.0)
        residuals = ev(jaxpr_known.jaxpr, jaxpr_known.consts,
                       *[a for a, u in zip(args, unknowns, strict=True) if not u])
        unknown_args = [a for a, u in zip(args, unknowns, strict=True) if u]
        grad = lib.grad(lambda *a, j=jaxpr_unknown, ev=ev, r=residuals:
                        ev(j.jaxpr, j.consts, *r, *a)[0])
        results.append((str(jaxpr_unknown), float(grad(*unknown_args))))
    assert results[0][0] == results[1][0]  # the same unknown jaxpr, the call kept whole
    # sin(1) is computed eagerly on the known side: numpy's and XLA's may differ in the last bit
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-6)
    if unknowns == [True, False]:  # the rule's 100 * y, not cos(1) * y
        assert results[0][1] == 200.0


def test_linear_transpose_of_a_custom_vjp_is_refused_as_jax_refuses_it():
    texts = []
    for lib, *_ in (OURS, JAX):
        f = lib.custom_vjp(lambda x: x * 2.0)
        f.defvjp(lambda x: (x * 2.0, None), lambda r, g: (g * 5.0,))
        with pytest.raises(NotImplementedError) as err:
            lib.linear_transpose(f, np.ones(3, np.float32))(np.ones(3, np.float32))
        texts.append(str(err.value))
    assert texts[0] == texts[1]
    assert "for 'custom_vjp_call' not implemented" in texts[0]


X64 = np.ones(2)


def _doubled(lib):
    f = lib.custom_vjp(lambda x: x * 2.0)
    f.defvjp(lambda x: (x * 2.0, None), lambda r, g: (g * 2.0,))
    return f


def _identity_jvp(lib):
    f = lib.custom_jvp(lambda x: x)
    f.defjvp(lambda p, t: (p[0], t[0]))
    return f


CANONICAL = {
    "vjp of the identity": lambda lib: lib.vjp(lambda x: x, X64)[0],
    "value_and_grad's value": lambda lib: lib.value_and_grad(lambda x: x)(np.float64(2.0))[0],
    "grad's aux": lambda lib: lib.grad(lambda x: (x.sum(), x), has_aux=True)(X64)[1],
    "an int64 passed through vjp": lambda lib: lib.vjp(lambda x, i: (x * 2, i), 1.0,
                                                       np.int64(3))[0][1],
    "a custom_vjp called": lambda lib: _doubled(lib)(X64),
    "a custom_vjp under vjp": lambda lib: lib.vjp(_doubled(lib), X64)[0],
    "a custom_jvp called": lambda lib: _identity_jvp(lib)(X64),
    "a custom_jvp under vjp": lambda lib: lib.vjp(_identity_jvp(lib), X64)[0],
    "jvp keeps float64": lambda lib: lib.jvp(lambda x: x, (X64,), (X64,))[0],
}


@pytest.mark.parametrize("where", sorted(CANONICAL))
def test_values_reach_the_user_and_come_back_in_jaxs_dtypes(where):
    ours, theirs = (np.asarray(CANONICAL[where](lib)) for lib in (s04, jax))
    assert (ours.dtype, ours.tolist()) == (theirs.dtype, theirs.tolist())


def test_a_vjp_function_takes_its_cotangent_by_jaxs_name():
    for lib in (s04, jax):
        _, f_vjp = lib.vjp(lambda x: x * 3.0, np.float32(1.0))
        assert float(f_vjp(out_ct=np.float32(1.0))[0]) == 3.0
