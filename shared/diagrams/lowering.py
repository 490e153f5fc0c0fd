"""A jaxpr beside the StableHLO its lowering wrote: each equation, the ops its rule emitted, and
the SSA values its variables became.

`record_lowering` reads a real lowering. It lowers the jaxpr cut after each equation, returning
that equation's outputs, so the lines a prefix adds to `@main` are the ones that equation's rule
wrote and its `return` names the SSA values bound to the equation's variables (the printer
numbers values in order, so a prefix's names are the whole module's). `lowering_svg` lays the
record out: one row per equation, the jaxpr on the left, the StableHLO on the right.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .jaxpr import atom_text, printed_names, typed
from .svg import Canvas, text_width

FONT = 12
STEP = FONT * 1.35
MAX_OP = 62  # characters of an op shown: its name, results and operands come first


@dataclass
class Row:
    """One line of the picture: jaxpr text, the StableHLO lines, and what binds to what."""

    jaxpr: list[str]
    ops: list[str]
    binds: list[tuple[str, str]] = field(default_factory=list)  # (jaxpr variable, SSA value)


@dataclass
class LoweringRecord:
    inputs: Row  # the jaxpr's inputs and @main's arguments
    rows: list[Row]  # one per equation, in order
    outputs: Row  # the jaxpr's outputs and @main's return
    preamble: list[str]  # ops written before the first equation (closed-over constants)
    text: str  # the whole module


def main_body(text: str) -> tuple[str, list[str], list[str]]:
    """@main's signature line, its ops (an op with regions is one multi-line entry), and the
    values its `return` names."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if "func.func public @main(" in line)
    ops: list[str] = []
    returned: list[str] = []
    for line in lines[start + 1:]:
        if line == "  }":
            break
        if line.startswith("    return"):
            values = line.removeprefix("    return").split(" : ")[0].strip()
            returned = [v for v in values.split(", ") if v]
        elif line.startswith("     ") or line.startswith("    }"):
            ops[-1] += "\n" + line  # inside a region of the op above
        else:
            ops.append(line.strip())
    return lines[start], ops, returned


def record_lowering(closed_jaxpr: Any, lower_text: Callable[[Any], str]) -> LoweringRecord:
    """Lower `closed_jaxpr` one more equation at a time (`lower_text(closed) -> module text`,
    keeping unused inputs) and attribute each op of @main to the equation that wrote it."""
    jaxpr = closed_jaxpr.jaxpr
    names = printed_names(closed_jaxpr)

    def prefix(k: int, outvars: Sequence[Any]) -> tuple[str, list[str], list[str]]:
        cut = jaxpr.replace(eqns=jaxpr.eqns[:k], outvars=list(outvars))
        return main_body(lower_text(closed_jaxpr.replace(jaxpr=cut)))

    signature, done, _ = prefix(0, [])
    preamble = list(done)
    args = re.findall(r"%arg\d+: [^ ,)]+", signature)
    inputs = Row([typed(v, names) for v in jaxpr.invars], args,
                 [(names[id(v)], a.split(":")[0]) for v, a in zip(jaxpr.invars, args,
                                                                  strict=True)])
    rows = []
    for k, eqn in enumerate(jaxpr.eqns):
        _, ops, returned = prefix(k + 1, eqn.outvars)
        binders = " ".join(typed(v, names) for v in eqn.outvars)
        operands = " ".join(atom_text(v, names) for v in eqn.invars)
        rows.append(Row([f"{binders} = {eqn.primitive.name} {operands}".rstrip()],
                        ops[len(done):],
                        [(names[id(v)], r) for v, r in zip(eqn.outvars, returned, strict=True)]))
        done = ops
    text = lower_text(closed_jaxpr)
    _, _, returned = main_body(text)
    outs = [atom_text(v, names) for v in jaxpr.outvars]
    outputs = Row([f"in ({', '.join(outs)})"], [f"return {', '.join(returned)}"],
                  list(zip(outs, returned, strict=True)))
    return LoweringRecord(inputs, rows, outputs, preamble, text)


def _short(op: str) -> str:
    """An op without its type signature, cut to MAX_OP characters; regions as `{...}`."""
    first = op.split("\n")[0]
    head = first.split(" : ")[0] if " : " in first else first
    if "\n" in op:
        head = head.rstrip(" ({") + " {...}"
    return head if len(head) <= MAX_OP else head[:MAX_OP - 1] + "\u2026"


def lowering_svg(record: LoweringRecord, title: str, *, left: str = "jaxpr",
                 right: str = "StableHLO: @main") -> str:
    """The record as rows: jaxpr text | arrow labelled with the bindings | StableHLO ops."""
    canvas = Canvas(title)
    rows = [("input", record.inputs), *(("neutral", r) for r in record.rows),
            ("output", record.outputs)]
    if record.preamble:
        rows.insert(1, ("muted", Row(["(constants)"], record.preamble)))
    shown = [[_short(op) for op in row.ops] or ["(no op)"] for _, row in rows]
    labels = [", ".join(f"{v} \u21a6 {s}" for v, s in row.binds) for _, row in rows]
    left_w = max(text_width(t, FONT) for _, row in rows for t in row.jaxpr) + 20
    right_w = max(text_width(t, FONT) for ops in shown for t in ops) + 20
    gap = max(text_width(t, 10.5) for t in labels) + 40
    canvas.text(left_w / 2, -16, left, size=13, weight="bold", mono=False)
    canvas.text(left_w + gap + right_w / 2, -16, right, size=13, weight="bold", mono=False)
    y = 0.0
    for (role, row), ops, label in zip(rows, shown, labels, strict=True):
        h = STEP * max(len(row.jaxpr), len(ops)) + 12
        canvas.box(0, y, left_w, h, row.jaxpr, role=role, size=FONT)
        canvas.rect(left_w + gap, y, right_w, h, role="known" if role == "neutral" else role)
        top = y + h / 2 - STEP * (len(ops) - 1) / 2
        for i, op in enumerate(ops):
            canvas.text(left_w + gap + 10, top + i * STEP, op, size=FONT, anchor="start")
        canvas.line(left_w + 2, y + h / 2, left_w + gap - 3, y + h / 2, role="known")
        if label:
            canvas.label(left_w + gap / 2, y + h / 2, label, size=10.5)
        y += h + 10
    return canvas.to_svg()
