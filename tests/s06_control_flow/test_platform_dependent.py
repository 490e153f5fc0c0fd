"""platform_dependent: the branch of the platform we run on ("cpu"), as jax.lax's picks."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import stages.s02_tracing as s02
import stages.s04_autodiff as s04
import stages.s06_control_flow as s06

X = np.float32(1.5)
CASES = {
    "cpu_named": dict(cpu=lambda x: x + 1, default=lambda x: x - 1),
    "default_only": dict(tpu=lambda x: x * 10, default=lambda x: x - 1),
    "shared_branch": dict(cpu=np.sin, cuda=np.sin),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_cpu_branch_runs_as_in_jax(case):
    kw = CASES[case]
    assert np.asarray(s06.platform_dependent(X, **kw)) == np.asarray(
        jax.lax.platform_dependent(X, **kw))


def test_under_grad_and_tracing_the_chosen_branch_is_differentiated():
    kw = dict(cpu=lambda x: x * x, default=lambda x: -x)
    ours = s04.grad(lambda x: s06.platform_dependent(x, **kw))(X)
    theirs = jax.grad(lambda x: jax.lax.platform_dependent(x, **kw))(X)
    assert np.asarray(ours) == np.asarray(theirs)
    assert "mul" in str(s02.make_jaxpr(lambda x: s06.platform_dependent(x, **kw))(X))


@pytest.mark.parametrize("kw", [dict(tpu=lambda x: x + 1), dict(gpu=lambda x: x),
                                dict(cpu=3), dict(cpu=lambda x: x, default=4)],
                         ids=["no_cpu_branch", "gpu", "not_callable", "default_not_callable"])
def test_errors_match_jax(kw):
    with pytest.raises(Exception) as theirs:
        jax.lax.platform_dependent(X, **kw)
    with pytest.raises(theirs.type) as ours:
        s06.platform_dependent(X, **kw)
    assert str(ours.value) == str(theirs.value)
