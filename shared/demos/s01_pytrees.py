"""Stage 1 demo: a model's parameters as a pytree, taken apart into leaves and put back."""

from __future__ import annotations

import collections

import jax.tree_util as jtu
import numpy as np

import stages.s01_pytrees as tu

HyperParams = collections.namedtuple("HyperParams", ["lr", "momentum"])


def _params() -> dict:
    rng = np.random.default_rng(0)
    dense = lambda n_in, n_out: {"w": rng.normal(size=(n_in, n_out)).round(2),
                                 "b": np.zeros(n_out)}
    return {
        "encoder": dense(3, 2),
        "blocks": [dense(2, 2), dense(2, 1)],
        "cache": None,  # None is a node with no children: it holds no leaf
        "hyper": HyperParams(lr=0.1, momentum=0.9),
    }


def main() -> None:
    params = _params()
    leaves_with_paths, treedef = tu.tree_flatten_with_path(params)
    print("Leaves in flatten order (dict keys sorted, so 'blocks' comes before 'encoder'):")
    for path, leaf in leaves_with_paths:
        shape = np.shape(leaf)
        print(f"  {tu.keystr(path):<28} shape={shape!s:<8} {type(leaf).__name__}")
    print(f"\n{treedef.num_leaves} leaves, {treedef.num_nodes} nodes. The treedef:")
    print(f"  {treedef}")

    leaves = [leaf for _, leaf in leaves_with_paths]
    doubled = tu.tree_unflatten(treedef, [leaf * 2 for leaf in leaves])
    print("\nRebuilt from doubled leaves (same structure, new values):")
    print(f"  blocks[1]['w'] = {doubled['blocks'][1]['w'].ravel().tolist()}")
    print(f"  hyper          = {doubled['hyper']}")
    print(f"  cache          = {doubled['cache']}")

    jax_leaves, jax_treedef = jtu.tree_flatten(params)
    same_leaves = all(a is b for a, b in zip(leaves, jax_leaves, strict=True))
    print("\nThe same flatten by jax.tree_util:")
    print(f"  same leaves, same order:  {same_leaves}")
    print(f"  same treedef text:        {str(treedef) == str(jax_treedef)}")
    key_texts = [tu.keystr(p) for p, _ in leaves_with_paths]
    jax_texts = [jtu.keystr(p) for p, _ in jtu.tree_flatten_with_path(params)[0]]
    print(f"  same key paths:           {key_texts == jax_texts}")


if __name__ == "__main__":
    main()
