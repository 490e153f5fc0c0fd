"""A loss curve three ways: terminal text, SVG (for pages, on the diagrams' Canvas) and PNG.

The PNG is drawn here pixel by pixel and written with zlib (PNG is rows of bytes, deflated,
in CRC-checked chunks), so the demo needs no plotting library.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from pathlib import Path

from .svg import Canvas, fmt


def ascii_curve(values: Sequence[float], width: int = 64, height: int = 12) -> str:
    """The curve as rows of characters, the y range labelled on the left."""
    lo, hi = min(values), max(values)
    span = (hi - lo) or 1.0
    grid = [[" "] * width for _ in range(height)]
    for col in range(width):
        chunk = values[col * len(values) // width:max((col + 1) * len(values) // width,
                                                          col * len(values) // width + 1)]
        v = sum(chunk) / len(chunk)
        row = round((hi - v) / span * (height - 1))
        grid[row][col] = "*"
    lines = []
    for r, row in enumerate(grid):
        label = f"{hi - span * r / (height - 1):6.2f}" if r in (0, height - 1) else " " * 6
        lines.append(f"{label} |{''.join(row)}")
    lines.append(" " * 7 + "+" + "-" * width)
    end = f"step {len(values) - 1}"
    lines.append(" " * 8 + "step 0" + " " * max(width - 7 - len(end), 1) + end)
    return "\n".join(lines)


def _points(values: Sequence[float], w: float, h: float) -> list[tuple[float, float]]:
    lo, hi = min(values), max(values)
    span = (hi - lo) or 1.0
    n = max(len(values) - 1, 1)
    return [(w * i / n, h * (hi - v) / span) for i, v in enumerate(values)]


def loss_curve_svg(values: Sequence[float], title: str, *, target: float | None = None,
                   w: float = 560, h: float = 220) -> str:
    """An SVG line plot of the loss per step, with the y range and an optional target line."""
    c = Canvas(title)
    lo, hi = min(values), max(values)
    c.rect(0, 0, w, h, fill="#ffffff", stroke="#9ca3af", rx=0, width=1)
    pts = _points(values, w, h)
    d = "M" + " L".join(f"{fmt(x)},{fmt(y)}" for x, y in pts)
    c.path(d, pts, color="#2563eb", arrow=False, width=1.6)
    if target is not None and lo <= target <= hi:
        y = h * (hi - target) / ((hi - lo) or 1.0)
        c.line(0, y, w, y, color="#dc2626", arrow=False, dash=True, width=1)
        c.text(w - 4, y - 9, f"target {target:g}", size=11, anchor="end", color="#dc2626")
    c.text(-6, 0, f"{hi:.2f}", size=11, anchor="end")
    c.text(-6, h, f"{lo:.2f}", size=11, anchor="end")
    c.text(0, h + 14, "step 0", size=11, anchor="start")
    c.text(w, h + 14, f"step {len(values) - 1}", size=11, anchor="end")
    c.text(w / 2, -14, title, size=13, mono=False, weight="bold")
    return c.to_svg()


def _png_bytes(pixels: list[bytearray], width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    raw = b"".join(b"\x00" + bytes(row) for row in pixels)  # filter type 0 on every row
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw))
            + chunk(b"IEND", b""))


def write_png(values: Sequence[float], path: str | Path, *, width: int = 640,
              height: int = 320, target: float | None = None) -> Path:
    """The loss curve as a PNG: a frame, the optional target dashed in red, the curve in blue."""
    pixels = [bytearray(b"\xff" * (3 * width)) for _ in range(height)]
    margin = 20
    w, h = width - 2 * margin, height - 2 * margin

    def put(x: int, y: int, rgb: tuple[int, int, int]) -> None:
        if 0 <= x < width and 0 <= y < height:
            pixels[y][3 * x:3 * x + 3] = bytes(rgb)

    for x in range(margin, margin + w + 1):
        put(x, margin, (156, 163, 175))
        put(x, margin + h, (156, 163, 175))
    for y in range(margin, margin + h + 1):
        put(margin, y, (156, 163, 175))
        put(margin + w, y, (156, 163, 175))
    lo, hi = min(values), max(values)
    if target is not None and lo <= target <= hi:
        ty = margin + round(h * (hi - target) / ((hi - lo) or 1.0))
        for x in range(margin, margin + w, 8):
            for dx in range(4):
                put(x + dx, ty, (220, 38, 38))
    pts = [(margin + round(x), margin + round(y)) for x, y in _points(values, w, h)]
    for (x0, y0), (x1, y1) in zip(pts, pts[1:], strict=False):
        steps = max(abs(x1 - x0), abs(y1 - y0), 1)
        for s in range(steps + 1):  # a line by sampling, two pixels thick
            x, y = x0 + (x1 - x0) * s // steps, y0 + (y1 - y0) * s // steps
            put(x, y, (37, 99, 235))
            put(x, y + 1, (37, 99, 235))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(_png_bytes(pixels, width, height))
    return path
