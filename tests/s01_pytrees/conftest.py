"""Shared test data for stage 1: node classes registered with ours AND with jax, tree strategies.

The same class object is registered in both libraries, so one tree can be handed to both and the
answers compared. Registration happens in a session fixture, not at import: a learner's stub of
register_dataclass then fails the tests that need it instead of the whole collection.
"""

from __future__ import annotations

import collections
import dataclasses
import types
from typing import Any

import jax.tree_util as jtu
import pytest
from hypothesis import strategies as st

import stages.s01_pytrees as tu

Point = collections.namedtuple("Point", ["y", "x"])


class Box:
    """Registered with register_pytree_node_class: two children and a string of aux data."""

    def __init__(self, a: Any, b: Any, meta: str = "meta") -> None:
        self.a, self.b, self.meta = a, b, meta

    def tree_flatten(self) -> tuple[tuple, str]:
        return (self.a, self.b), self.meta

    @classmethod
    def tree_unflatten(cls, meta: str, children: tuple) -> Box:
        return cls(*children, meta=meta)

    def __eq__(self, other: object) -> bool:
        return type(other) is Box and (self.a, self.b, self.meta) == (other.a, other.b, other.meta)

    def __repr__(self) -> str:
        return f"Box({self.a!r}, {self.b!r}, meta={self.meta!r})"


@dataclasses.dataclass
class Params:
    """Registered with register_dataclass in its decorator form: `name` is static (meta)."""

    w: Any
    b: Any
    name: str = dataclasses.field(default="layer", metadata=dict(static=True))


class Pair:
    """Registered with register_pytree_with_keys: key paths `.left` and `.right`."""

    def __init__(self, left: Any, right: Any) -> None:
        self.left, self.right = left, right

    def __eq__(self, other: object) -> bool:
        return type(other) is Pair and (self.left, self.right) == (other.left, other.right)

    def __repr__(self) -> str:
        return f"Pair({self.left!r}, {self.right!r})"


def _pair_flattener(get_attr_key: type):
    """Pair's flatten_with_keys, building keys of one library's GetAttrKey class."""

    def flatten_with_keys(p: Pair) -> tuple[tuple, None]:
        return ((get_attr_key("left"), p.left), (get_attr_key("right"), p.right)), None

    return flatten_with_keys


def _unflatten_pair(_aux: None, children: tuple) -> Pair:
    return Pair(*children)


@pytest.fixture(scope="session")
def nodes() -> types.SimpleNamespace:
    """The shared node classes, registered once with ours and with jax."""
    for lib in (tu, jtu):
        lib.register_pytree_node_class(Box)
        lib.register_dataclass(Params)
        lib.register_pytree_with_keys(Pair, _pair_flattener(lib.GetAttrKey), _unflatten_pair)
    return types.SimpleNamespace(Point=Point, Box=Box, Params=Params, Pair=Pair)


KINDS = (tuple, list, dict, type(None), Point, collections.OrderedDict,
         collections.defaultdict, Box, Params, Pair, int, str)


def _trees() -> st.SearchStrategy:
    leaves = st.integers(-50, 50) | st.booleans() | st.text("xyz", max_size=2)
    keys = st.text("abcd", min_size=1, max_size=2)

    def extend(children: st.SearchStrategy) -> st.SearchStrategy:
        items = st.lists(st.tuples(keys, children), max_size=3, unique_by=lambda kv: kv[0])
        return st.one_of(
            st.lists(children, max_size=3).map(tuple),
            st.lists(children, max_size=3),
            st.dictionaries(keys, children, max_size=3),
            st.builds(Point, children, children),
            items.map(collections.OrderedDict),  # insertion order as drawn
            st.dictionaries(keys, children, max_size=3).map(
                lambda d: collections.defaultdict(list, d)),
            st.builds(Box, children, children, st.sampled_from(["m", "n"])),
            st.builds(Params, children, children, st.sampled_from(["dense", "conv"])),
            st.builds(Pair, children, children),
        )

    return st.recursive(st.none() | leaves, extend, max_leaves=10)


@pytest.fixture(scope="session")
def trees(nodes: types.SimpleNamespace) -> st.SearchStrategy:
    """Random pytrees of every built-in node kind and the three registered classes."""
    return _trees()


@pytest.fixture(scope="session")
def leaf_predicates() -> st.SearchStrategy:
    """Random is_leaf predicates: "a node of one of these types is a leaf"."""
    return st.frozensets(st.sampled_from(KINDS), max_size=4).map(
        lambda chosen: lambda x: type(x) in chosen)


@pytest.fixture(scope="session")
def same_error():
    """Run `ours()` and `theirs()`, require the same exception type and text; return the text."""

    def check(ours, theirs, exc_type: type[Exception] = ValueError) -> str:
        with pytest.raises(exc_type) as expected:
            theirs()
        with pytest.raises(exc_type) as got:
            ours()
        assert str(got.value) == str(expected.value)
        return str(got.value)

    return check
