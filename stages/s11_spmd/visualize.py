"""Which device holds which block of an array, drawn as a table in the terminal.

JAX: jax/_src/debugging.py (`visualize_array_sharding`, `visualize_sharding`), which draws
with the `rich` library; this is the same layout drawn without it, box characters and all: a
2-D array is a grid of blocks sized in proportion to the array (a row of blocks for 1-D), each
labelled with the devices that hold it ("CPU 0,2": replicas share a block).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .sharding_impls import Sharding


def _chunk(size: int, s: slice) -> int:
    if s.start is None and s.stop is None:
        return 0
    return s.start // (s.stop - s.start)


def _extent(size: int, s: slice) -> int:
    return size if s.stop is None else s.stop - s.start


# --8<-- [start:layout]
def sharding_text(shape: Sequence[int], sharding: Sharding, *, scale: float = 1.0,
                  min_width: int = 9, max_width: int = 80) -> str:
    """The table `visualize_sharding` prints (JAX's sizes: 10 rows for the whole height,
    2.5 columns per row of height, at least 9 columns per block)."""
    shape = tuple(shape)
    if not 1 <= len(shape) <= 2:
        raise ValueError("`visualize_sharding` only works for shapes with 1 and 2 dimensions.")
    base_height = int(10 * scale)
    base_width = int(base_height * (shape[1] if len(shape) == 2 else 1) / shape[0])
    kind = next(iter(sharding.device_set)).platform.upper()
    blocks: dict[tuple[int, int], set[int]] = {}
    size: dict[tuple[int, int], tuple[int, int]] = {}  # (width, height) in characters
    for device, index in sharding.devices_indices_map(shape).items():
        if len(shape) == 2:
            at = (_chunk(shape[0], index[0]), _chunk(shape[1], index[1]))
            height = int(_extent(shape[0], index[0]) / shape[0] * base_height)
        else:
            at, height = (0, _chunk(shape[0], index[0])), 1
        width = int(_extent(shape[-1], index[-1]) / shape[-1] * base_width * 2.5)
        size[at] = (min(max(width, min_width), max_width), height)
        blocks.setdefault(at, set()).add(device.id)
    rows = max(r for r, _ in blocks) + 1
    cols = max(c for _, c in blocks) + 1
    cells = {}
    for at, ids in blocks.items():
        label = f"{kind} " + ",".join(str(i) for i in sorted(ids))
        width, height = size[at]
        left, extra = divmod(width - len(label) - 2, 2)
        top, extra_v = divmod(height - 2, 2)
        lines = [""] * max(top, 0) + [" " * max(left, 0) + label + " " * max(left + extra, 0)]
        lines += [""] * max(top + extra_v, 0)
        cells[at] = lines
    col_w = [max(len(line) for r in range(rows) for line in cells[r, c]) for c in range(cols)]
    out = ["┌" + "┬".join("─" * w for w in col_w) + "┐"]
    for r in range(rows):
        height = max(len(cells[r, c]) for c in range(cols))
        for k in range(height):
            out.append("│" + "│".join(
                (cells[r, c][k] if k < len(cells[r, c]) else "").ljust(col_w[c])
                for c in range(cols)) + "│")
        if r < rows - 1:
            out.append("├" + "┼".join("─" * w for w in col_w) + "┤")
    out.append("└" + "┴".join("─" * w for w in col_w) + "┘")
    return "\n".join(out) + "\n"
# --8<-- [end:layout]


def visualize_sharding(shape: Sequence[int], sharding: Sharding, *, use_color: bool = True,
                       color_map: Any = None, **kwargs: Any) -> None:
    """Print the table (JAX's keywords; ours draws no colours, so those two change nothing)."""
    text = sharding_text(shape, sharding, **kwargs)
    print(text, end="" if text.endswith("\n") else "\n")


def visualize_array_sharding(arr: Any, **kwargs: Any) -> None:
    """Draw which device holds which block of `arr` (JAX: jax.debug.visualize_array_sharding)."""
    visualize_sharding(arr.shape, arr.sharding, **kwargs)
