"""A checkpoint read back without a target: its key paths rebuilt into nested dicts and lists.

checkpoint_io.py writes each leaf's key path as `keystr` prints it ("['params'][0].mu"); here
each `[key]` is read back as the str or int it was (a key may hold quotes or brackets itself)
and each `.name` as an attribute name, so a NamedTuple comes back as a dict of its fields.
"""

from __future__ import annotations

import ast
import re
from typing import Any

import numpy as np

_KEY = re.compile(r"""\[('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|-?\d+)\]|\.(\w+)""")


def nested(paths: list[str], values: list[np.ndarray]) -> Any:
    """Nested dicts (string keys and attribute names) and lists (integer keys) rebuilt from
    key paths: a NamedTuple comes back as a dict of its fields."""
    root: dict = {}
    for path, value in zip(paths, values, strict=True):
        # each [key] is a repr()'d str or an int (a key may hold quotes or brackets itself)
        keys = [ast.literal_eval(item) if item else attr for item, attr in _KEY.findall(path)]
        if not keys:  # the tree was one leaf
            return value
        node = root
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = value
    return _lists(root)


def _lists(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    if node and all(isinstance(k, int) for k in node):
        return [_lists(node[k]) for k in sorted(node)]
    return {k: _lists(v) for k, v in node.items()}
