"""`make bench`: collect every stage's rows; print one table of ratios against the real library."""

from __future__ import annotations

import argparse
import importlib
import pkgutil

from shared import benchmarks
from shared.benchmarks.harness import Row


def _fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def format_table(rows: list[Row]) -> str:
    header = ("stage", "what", "ours", "reference", "ref", "ours/ref", "note")
    lines = [header]
    for r in rows:
        ratio = "-" if r.ratio is None else f"{r.ratio:.2f}x"
        lines.append((str(r.stage), r.what, _fmt_time(r.ours_s), r.ref_name,
                      _fmt_time(r.ref_s), ratio, r.note))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    out = []
    for k, line in enumerate(lines):
        out.append("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip())
        if k == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m shared.benchmarks")
    parser.add_argument("--quick", action="store_true", help="small sizes, a few seconds a stage")
    parser.add_argument("--stage", type=int, help="only this stage's rows")
    args = parser.parse_args()
    names = sorted(m.name for m in pkgutil.iter_modules(benchmarks.__path__) if m.name[:1] == "s")
    if args.stage is not None:
        names = [n for n in names if n[1:3] == f"{args.stage:02d}"]
        if not names:
            parser.error(f"no benchmarks for stage {args.stage}")
    rows: list[Row] = []
    for name in names:
        module = importlib.import_module(f"shared.benchmarks.{name}")
        print(f"timing {name} ...", flush=True)
        rows += module.rows(quick=args.quick)
    print()
    print(format_table(rows))
    print("\nours/ref < 1 means ours is faster. Both sides are timed in this run, best of several.")


if __name__ == "__main__":
    main()
