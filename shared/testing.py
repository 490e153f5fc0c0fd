"""Helpers the stage tests share: where a stage was imported from, and explicit tolerances."""

from __future__ import annotations

import importlib
import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# float32 tolerances: elementwise ops round once; reductions and dots accumulate.
RTOL_ELEMENTWISE = 1e-5
RTOL_REDUCTION = 1e-4


def assert_stage_origin(stage: str) -> Path:
    """Fail unless `stages.<stage>` came from workspace/ when WORKSPACE=1, else from stages/.

    A harness that silently tests the reference copy would tell a learner their exercises pass.
    """
    module = importlib.import_module(f"stages.{stage}")
    where = Path(module.__file__).resolve().parent
    if os.environ.get("WORKSPACE") == "1":
        workspace = Path(os.environ.get("UNDER_API_WORKSPACE_DIR", ROOT / "workspace"))
        expected = workspace.resolve() / "stages" / stage
    else:
        expected = ROOT / "stages" / stage
    assert where == expected, f"stages.{stage} was imported from {where}, expected {expected}"
    return where


def canonical_error_text(text: str) -> str:
    """An error text with the parts that vary between runs of the same JAX put in one order.

    JAX builds "Accepted dtypes ... are subtypes of integer, floating, complexfloating." by
    iterating a set of numpy type objects (`lax._num`), whose order follows their addresses: one
    Python build prints "floating, complexfloating", another "complexfloating, floating".
    """
    def _sorted(match: re.Match) -> str:
        return match.group(1) + ", ".join(sorted(match.group(2).split(", "))) + "."

    return re.sub(r"(are subtypes of )([\w, ]+)\.", _sorted, text)


def weak_type_of(x: object) -> bool:
    """Whether a value (ours or JAX's) is weakly typed: an Array's flag, or a Python scalar."""
    if type(x) in (int, float, complex):
        return True
    return bool(getattr(x, "weak_type", False))


def assert_same_typed_values(ours: object, theirs: object, rtol: float = RTOL_ELEMENTWISE,
                             atol: float = 1e-6) -> None:
    """Two pytrees of arrays agree leaf by leaf in shape, dtype, weak type and value.

    Our pytrees and JAX's flatten alike for built-in containers (tuples, lists, dicts), which is
    all this compares; float0 leaves compare by shape and dtype only.
    """
    import jax
    import numpy as np

    from stages.s01_pytrees import tree_flatten

    got, got_tree = tree_flatten(ours)
    want, want_tree = jax.tree_util.tree_flatten(theirs)
    assert str(got_tree) == str(want_tree), (got_tree, want_tree)
    for g, w in zip(got, want, strict=True):
        g_arr, w_arr = np.asarray(g), np.asarray(w)
        assert (g_arr.shape, g_arr.dtype) == (w_arr.shape, w_arr.dtype), (g, w)
        assert weak_type_of(g) == weak_type_of(w), (g, w)
        if w_arr.dtype == jax.dtypes.float0:
            continue
        if np.issubdtype(w_arr.dtype, np.inexact):
            np.testing.assert_allclose(g_arr, w_arr, rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(g_arr, w_arr)


def is_jaxs_pad_transpose_error(err: BaseException) -> bool:
    """JAX 0.10.2's `_pad_transpose` sums `None` when a pad's padding value is differentiated
    and its operand is not (tests/s04_autodiff/test_pad_value_gradient.py pins it): random
    programs reject such a draw, since the oracle has no answer for it."""
    text = str(err)
    return isinstance(err, TypeError) and "<class 'NoneType'>" in text and \
        "was passed to reduce_sum at position 0" in text
