"""Checkpoints: any pytree of arrays (params, optimizer state, a key, the step) to disk and back.

The format is plain on purpose, readable with numpy alone:

    <directory>/step_<N>/manifest.json   {"format": "ujax-checkpoint", "version": 1, "step": N,
                                          "leaves": [{"path", "file", "shape", "dtype"}, ...]}
    <directory>/step_<N>/<k>.npy         leaf k, numpy's .npy format

Leaves are listed in the tree's flatten order, each with its key path as `keystr` prints it
(e.g. "['params']['Dense_0']['kernel']"). A step is written to a temporary folder and renamed,
so a run stopped mid-save leaves the previous step intact. Restoring into a `target` tree
checks every path, shape and dtype; without one, the paths rebuild nested dicts and lists.
JAX's counterpart is Orbax (orbax.checkpoint), whose format is richer (TensorStore, OCDBT).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

from stages.s01_pytrees import keystr, tree_flatten_with_path, tree_structure, tree_unflatten

from .checkpoint_paths import nested

FORMAT, VERSION = "ujax-checkpoint", 1


def _step_dir(directory: str | os.PathLike, step: int) -> Path:
    return Path(directory) / f"step_{step:08d}"


# --8<-- [start:save]
def save(directory: str | os.PathLike, tree: Any, step: int) -> Path:
    """Write `tree` as step `step` under `directory`; returns the step's folder."""
    leaves, _ = tree_flatten_with_path(tree)
    final = _step_dir(directory, step)
    tmp = final.with_name(final.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    entries = []
    for k, (path, leaf) in enumerate(leaves):
        value = np.asarray(leaf)  # fetched from the device
        np.save(tmp / f"{k}.npy", value, allow_pickle=False)
        entries.append({"path": keystr(path), "file": f"{k}.npy",
                        "shape": list(value.shape), "dtype": value.dtype.name})
    manifest = {"format": FORMAT, "version": VERSION, "step": step, "leaves": entries}
    (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1))
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)  # the step appears whole or not at all
    return final
# --8<-- [end:save]


def all_steps(directory: str | os.PathLike) -> list[int]:
    """The steps saved under `directory`, oldest first."""
    found = [re.fullmatch(r"step_(\d+)", p.name) for p in Path(directory).glob("step_*")]
    return sorted(int(m.group(1)) for m in found if m)


def latest_step(directory: str | os.PathLike) -> int | None:
    steps = all_steps(directory)
    return steps[-1] if steps else None


def _manifest(directory: str | os.PathLike, step: int | None) -> tuple[dict, Path]:
    step = latest_step(directory) if step is None else step
    if step is None:
        raise FileNotFoundError(f"no checkpoint under {directory}")
    folder = _step_dir(directory, step)
    manifest = json.loads((folder / "manifest.json").read_text())
    if manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
        raise ValueError(f"{folder} is not a {FORMAT} version {VERSION} checkpoint")
    return manifest, folder


def restore(directory: str | os.PathLike, target: Any = None, step: int | None = None) -> Any:
    """Read step `step` (default: the latest) into the structure of `target`."""
    manifest, folder = _manifest(directory, step)
    values = [_load(folder, e) for e in manifest["leaves"]]
    if target is None:
        return nested([e["path"] for e in manifest["leaves"]], values)
    want, treedef = tree_flatten_with_path(target)
    if len(want) != len(values):
        raise ValueError(f"{folder} holds {len(values)} leaves; the target has {len(want)}")
    for (path, leaf), entry, value in zip(want, manifest["leaves"], values, strict=True):
        if keystr(path) != entry["path"]:
            raise ValueError(f"{folder}: leaf {entry['file']} is {entry['path']}, the target's "
                             f"is {keystr(path)}")
        if tuple(np.shape(leaf)) != value.shape or np.asarray(leaf).dtype != value.dtype:
            raise ValueError(f"{folder}: {entry['path']} is {value.dtype.name}{list(value.shape)}"
                             f", the target's is {np.asarray(leaf).dtype.name}"
                             f"{list(np.shape(leaf))}")
    return tree_unflatten(tree_structure(target), values)


def _load(folder: Path, entry: dict) -> np.ndarray:
    """One leaf's .npy. numpy writes ml_dtypes' dtypes (bfloat16, float8_*, int4) as raw bytes,
    `|V2` and the like; the manifest's dtype name views them back."""
    value = np.load(folder / entry["file"], allow_pickle=False)
    if value.dtype.kind == "V" and hasattr(ml_dtypes, entry["dtype"]):
        value = value.view(getattr(ml_dtypes, entry["dtype"]))
    return value
