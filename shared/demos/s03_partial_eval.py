"""Stage 3 demo: one jaxpr split into a known and an unknown program, then remat policies."""

from __future__ import annotations

import jax
import numpy as np
from jax._src import ad_checkpoint as jax_ad_checkpoint
from jax._src.interpreters import partial_eval as jpe

import stages.s02_tracing as s02
from shared.corpus_s03 import DX, W1, W2, X, mlp, mlp_jvp
from stages.s03_partial_eval import ad_checkpoint
from stages.s03_partial_eval import partial_eval as pe

POLICIES = ("everything_saveable", "dots_saveable", "nothing_saveable")


def g(lax, x, y):
    """sin(x) * cos(y) + x, written against a `lax` module so it runs on ours and on jax's."""
    return lax.add(lax.mul(lax.sin(x), lax.cos(y)), x)


def main() -> None:
    closed = s02.make_jaxpr(lambda x, y: g(s02.lax, x, y))(1.0, 2.0)
    print("g(x, y) = sin(x) * cos(y) + x:")
    print(closed)
    known, unknown, out_unknowns, res_avals = pe.partial_eval_jaxpr_nounits(
        closed, unknowns=[False, True], instantiate=False)
    print("\nsplit with x known, y unknown (the rule: known only if every input is known)")
    print(f"known (x in; known outputs, then residuals out):\n{known}")
    print(f"unknown (residuals, then y in):\n{unknown}")
    print(f"out_unknowns {out_unknowns}; residual avals {[str(a) for a in res_avals]}: "
          "sin x, and x itself (the unknown side reads x)")
    real = jpe.partial_eval_jaxpr_nounits(
        jax.make_jaxpr(lambda x, y: g(jax.lax, x, y))(1.0, 2.0), [False, True], False)
    same = str(known) == str(real[0]) and str(unknown) == str(real[1])
    print(f"identical to jax's partial_eval_jaxpr_nounits: {same}")

    residuals = s02.eval_jaxpr(known.jaxpr, known.consts, 1.0)  # no known outputs here
    (out,) = s02.eval_jaxpr(unknown.jaxpr, unknown.consts, *residuals, 2.0)
    print(f"known now at x=1, unknown later at y=2: {float(out):.6f}; "
          f"g(1, 2) = {np.sin(1.0) * np.cos(2.0) + 1.0:.6f}")

    jvp = s02.make_jaxpr(lambda *a: mlp_jvp(s02.lax, *a))(W1, W2, X, DX)
    print("\nthe jvp of sum(tanh(W2 @ tanh(W1 @ x))) in x: primals known, tangent dx unknown.")
    real_jvp = jax.make_jaxpr(
        lambda w1, w2, x, dx: jax.jvp(lambda x: mlp(jax.lax, w1, w2, x), (x,), (dx,))
    )(W1, W2, X, DX)
    print("activations each remat policy keeps for the tangent side (ours / jax); the inputs")
    print("are available there, as under jax.checkpoint:")
    for name in POLICIES:
        *_, num_res = pe.partial_eval_jaxpr_custom(
            jvp.jaxpr, [False, False, False, True], True, False, False,
            getattr(ad_checkpoint, name))
        *_, j_num_res = jpe.partial_eval_jaxpr_custom(
            real_jvp.jaxpr, [False, False, False, True], True, False, False,
            getattr(jax_ad_checkpoint, name))
        print(f"  {name:<20} {num_res} / {j_num_res}")
    print("everything saves tanh and 1 - tanh per layer; dots saves the two matmuls and "
          "recomputes tanh; nothing recomputes the whole forward pass.")


if __name__ == "__main__":
    main()
