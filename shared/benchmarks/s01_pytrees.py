"""Stage 1 rows: flatten + unflatten of nested trees, ours (Python) vs jax.tree_util (C++)."""

from __future__ import annotations

import jax.tree_util as jtu

import stages.s01_pytrees as tu
from shared.benchmarks.harness import Row, best_time


def _tree(num_leaves: int) -> list:
    """A list of layer dicts, four leaves each, nested two containers deep: a model's params."""
    return [{"w": [0.0, 1.0], "b": (2.0,), "scale": 3.0} for _ in range(num_leaves // 4)]


def _round_trip(lib) -> callable:
    def run(tree: list) -> object:
        leaves, treedef = lib.tree_flatten(tree)
        return lib.tree_unflatten(treedef, leaves)

    return run


def rows(quick: bool = False) -> list[Row]:
    sizes = [1_000, 10_000] if quick else [1_000, 10_000, 100_000]
    ours_run, jax_run = _round_trip(tu), _round_trip(jtu)
    out: list[Row] = []
    per_leaf: dict[int, float] = {}
    for n in sizes:
        tree = _tree(n)
        assert ours_run(tree) == jax_run(tree) == tree
        repeat = 3 if n >= 100_000 else 5
        number = max(1, 10_000 // n)
        ours_s = best_time(lambda t=tree: ours_run(t), repeat=repeat, number=number)
        ref_s = best_time(lambda t=tree: jax_run(t), repeat=repeat, number=number)
        per_leaf[n] = ours_s / n
        out.append(Row(stage=1, what=f"flatten+unflatten, {n // 1000}k leaves", ours_s=ours_s,
                       ref_s=ref_s, ref_name="jax.tree_util"))
    small, large = sizes[0], sizes[-1]
    out[-1].note = (f"ours per leaf: {per_leaf[small] * 1e9:.0f} ns at {small // 1000}k, "
                    f"{per_leaf[large] * 1e9:.0f} ns at {large // 1000}k (linear)")
    return out


if __name__ == "__main__":
    from shared.benchmarks.__main__ import format_table

    print(format_table(rows()))
