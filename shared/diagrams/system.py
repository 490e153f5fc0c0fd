"""The course's last picture: one training step, top to bottom, through every stage.

The page measures the step (leaves, equations, StableHLO lines, timings) and hands one row per
stage to `one_step_svg`, which only lays the rows out: a box per stage, an arrow to the next,
what the stage did to this step beside it.
"""

from __future__ import annotations

from collections.abc import Sequence

from .svg import Canvas, text_width


def one_step_svg(rows: Sequence[tuple[str, str, str]], title: str) -> str:
    """rows: (stage label, what it does, what it did to this step), drawn as a chain."""
    c = Canvas(title)
    box_w = max(text_width(label, 12) for label, _, _ in rows) + 24
    box_h, gap = 34, 18
    for i, (label, what, measured) in enumerate(rows):
        y = i * (box_h + gap)
        role = "known" if i < len(rows) - 1 else "unknown"
        c.box(0, y, box_w, box_h, [label], role=role, size=12)
        c.text(box_w + 14, y + 11, what, size=12, anchor="start", mono=False)
        c.text(box_w + 14, y + 25, measured, size=11, anchor="start", color="#4b5563")
        if i < len(rows) - 1:
            c.line(box_w / 2, y + box_h, box_w / 2, y + box_h + gap - 1, role="known")
    return c.to_svg()
