"""A registered flatten rule that returns something other than (children, aux_data) gets the
error JAX's registry gives, not a Python unpacking error."""

from __future__ import annotations

import jax.tree_util as jtu
import pytest

import stages.s01_pytrees as tu


@pytest.mark.parametrize("flatten", [lambda n: "hello", lambda n: (1, 2, 3),
                                     lambda n: (5, None), lambda n: [(), None]],
                         ids=["a_string", "a_triple", "children_not_iterable", "a_list"])
def test_a_bad_flatten_rule_gets_jaxs_error(flatten):
    messages = []
    for lib in (tu, jtu):
        Node = type("Node", (), {})
        lib.register_pytree_node(Node, flatten, lambda aux, children, n=Node: n())
        with pytest.raises(ValueError) as err:
            lib.tree_flatten([Node()])
        messages.append(str(err.value))
    assert messages[0] == messages[1]
