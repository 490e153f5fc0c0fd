"""The tables are the extension mechanism: walk them."""

from __future__ import annotations

import importlib
import pkgutil

import stages.s02_tracing as s02
import stages.s04_autodiff as s04
from stages.s02_tracing import core
from stages.s04_autodiff import ad, ad_checkpoint, ad_util
from stages.s04_autodiff.transpose_rules import LINEAR_PRIMITIVES


def _primitives_of(package) -> set[core.Primitive]:
    found = set()
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        found |= {v for v in vars(module).values() if isinstance(v, core.Primitive)}
    return found


def _stage2_primitives() -> set[core.Primitive]:
    return _primitives_of(s02)


def test_the_walk_finds_every_stage2_primitive():
    names = {p.name for p in _stage2_primitives()}
    assert {"sin", "add", "dot_general", "select_n", "dynamic_update_slice", "iota"} <= names
    assert len(names) >= 50


def test_every_stage2_primitive_has_a_jvp_rule():
    missing = sorted(p.name for p in _stage2_primitives() if p not in ad.primitive_jvps)
    assert missing == []


def test_every_stage4_primitive_has_a_jvp_rule():
    # custom_lin only ever lives in linear jaxprs (transposed, never differentiated); the
    # custom_jvp_call/custom_vjp_call primitives are handled by the traces' process_custom_*
    for p in (ad_util.add_jaxvals_p, ad_checkpoint.remat_p, ad_checkpoint.name_p):
        assert p in ad.primitive_jvps, p


def test_every_linear_primitive_has_a_transpose_rule():
    linear = LINEAR_PRIMITIVES | {ad.custom_lin_p, ad_checkpoint.remat_p}
    missing = sorted(p.name for p in linear if p not in ad.primitive_transposes)
    assert missing == []


def test_only_linear_primitives_have_transpose_rules():
    # Only primitives of stages 2-4: later stages (cond, scan, ...) add transpose rules too.
    ours = _primitives_of(s02) | _primitives_of(s04)
    extra = ours & set(ad.primitive_transposes) - LINEAR_PRIMITIVES - {ad.custom_lin_p,
                                                                        ad_checkpoint.remat_p}
    assert extra == set()


def test_the_linear_set_is_the_issue_list():
    names = {p.name for p in LINEAR_PRIMITIVES}
    issue = {"add", "sub", "neg", "mul", "dot_general", "broadcast_in_dim", "reshape",
             "transpose", "reduce_sum", "convert_element_type", "select_n", "slice", "pad",
             "dynamic_slice", "dynamic_update_slice", "concatenate", "cumsum"}
    assert issue <= names
