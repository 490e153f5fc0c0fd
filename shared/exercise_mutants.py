"""Wrong answers to every exercise: `make check-exercises` proves each one fails a test.

A stub fails every test that reaches it, so it only proves that an exercise is reached. These
mutants are the mistakes a learner plausibly makes (an operand swapped, an axis not shifted, a
check forgotten, JAX's message reworded), each written as a text replacement inside one
exercise's region of the reference code. `shared/exercise_check.py` applies each to a copy of the
stage and runs the tests that reach the exercise: at least one must fail, or a learner could hand
in that mistake and see green.

Mutants are keyed by exercise number, not by file, so code may move between files. `find` is
either part of one line, which must occur exactly once in the region, or several whole lines
(compared without their indentation), which `replace` takes the place of, indented as the first
one was. When the code changes so that a `find` no longer matches, the check fails and names the
mutant: update it here.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass


@dataclass(frozen=True)
class Mutant:
    exercise: str  # "4.1"
    mistake: str  # the learner's mistake, in words
    find: str
    replace: str


class MutantError(ValueError):
    """A mutant that no longer applies to its exercise's code."""


def apply(mutant: Mutant, lines: list[str], first: int, last: int) -> list[str]:
    """The file's lines with the mutant applied within lines[first:last] (0-based, exclusive)."""
    region = lines[first:last]
    if "\n" not in mutant.find:
        hits = [i for i, line in enumerate(region) if mutant.find in line]
        count = sum(line.count(mutant.find) for line in region)
        if count != 1:
            raise MutantError(f"{mutant.find!r} occurs {count} times in the exercise's code "
                              "(it must occur once)")
        i = first + hits[0]
        return [*lines[:i], lines[i].replace(mutant.find, mutant.replace), *lines[i + 1:]]
    wanted = [line.strip() for line in textwrap.dedent(mutant.find).strip().splitlines()]
    stripped = [line.strip() for line in region]
    starts = [i for i in range(len(region) - len(wanted) + 1)
              if stripped[i : i + len(wanted)] == wanted]
    if len(starts) != 1:
        raise MutantError(f"the lines {wanted!r} occur {len(starts)} times in the exercise's "
                          "code (they must occur once)")
    i = first + starts[0]
    indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
    new = textwrap.indent(textwrap.dedent(mutant.replace.strip("\n").rstrip()),
                          indent).splitlines()
    return [*lines[:i], *new, *lines[i + len(wanted):]]


def _m(exercise: str, mistake: str, find: str, replace: str) -> Mutant:
    return Mutant(exercise, mistake, find, replace)


MUTANTS: tuple[Mutant, ...] = (
    # -- stage 1: pytrees ----------------------------------------------------------------------
    _m("1.1", "simple=True ignores the separator",
       "return separator.join(parts)", 'return "".join(parts)'),
    _m("1.1", "a GetAttrKey's bare text keeps its dot",
       "parts.append(inner)", "parts.append(str(key))"),
    _m("1.1", "simple=True is ignored", "if not simple:", "if True:"),
    _m("1.1", "the full key texts are joined with nothing: separator ignored",
       "return separator.join(str(key) for key in keys)",
       'return "".join(str(key) for key in keys)'),
    _m("1.2", "keys left in insertion order", "keys.sort()", "keys = list(keys)"),
    _m("1.2", "keys sorted by their text (10 before 9)", "keys.sort()", "keys.sort(key=str)"),
    _m("1.2", "the comparison error is not chained", ") from err", ") from None"),
    _m("1.2", "only a TypeError from `<` becomes JAX's ValueError",
       "except Exception as err:", "except TypeError as err:"),
    _m("1.3", "a node's node count leaves out the node itself",
       "len(leaves) - start_leaves, len(traversal) - start_nodes + 1",
       "len(leaves) - start_leaves, len(traversal) - start_nodes"),
    _m("1.3", "the key path is not extended for children",
       "(*path, key)", "path"),
    _m("1.3", "a leaf is recorded without its path",
       "leaves.append(x if path is None else (path, x))", "leaves.append(x)"),
    _m("1.3", "is_leaf is not asked", "if leaf_predicate is not None and",
       "if False and leaf_predicate is not None and"),
    _m("1.3", "a node's leaf count is every leaf flattened so far, not its subtree's",
       "len(leaves) - start_leaves, len(traversal)", "len(leaves), len(traversal)"),
    _m("1.4", "too many leaves go unnoticed",
       "if next(leaf_iter, _NO_LEAF) is not _NO_LEAF:", "if False:"),
    _m("1.4", "the leaf count in the error is not kept", "count += 1", "pass"),
    _m("1.4", "children are handed over in reverse",
       "children = tuple(stack[start:])", "children = tuple(stack[start:][::-1])"),
    _m("1.4", "the too-few error counts the stack, not the leaves taken",
       "got {count}", "got {len(stack)}"),
    _m("1.4", "a node's children are sliced with a negative arity", """
       start = len(stack) - node.arity
       children = tuple(stack[start:])
       del stack[start:]
       """, """
       children = tuple(stack[-node.arity:])
       del stack[-node.arity:]
       """),
    _m("1.4", "JAX's too-many message is reworded",
       'expected {self.num_leaves}.")', 'expected {self.num_leaves}, got more.")'),
    _m("1.5", "the other trees are flattened fully instead of up to the first's leaves",
       "per_tree.append(treedef.flatten_up_to(other))",
       "per_tree.append(tree_flatten(other, is_leaf)[0])"),
    _m("1.5", "is_leaf is not passed to the flatten", "tree_flatten(tree, is_leaf)",
       "tree_flatten(tree)"),
    _m("1.5", "the structure error is not explained by key path",
       'raise structure_error(tree, other, is_leaf, "tree_map tree", err) from None',
       "raise"),
    _m("1.5", "the trees are swapped in the key-path explanation",
       "structure_error(tree, other, is_leaf,", "structure_error(other, tree, is_leaf,"),
    _m("1.5", "the error names the tree differently", '"tree_map tree"', '"tree"'),
    _m("1.6", "drop_fields is ignored", "init_fields.difference_update(drop_fields)", "pass"),
    _m("1.6", "returns None, so the decorator form loses the class", "return nodetype",
       "return None"),
    _m("1.6", "overlapping data and meta fields are accepted", "if overlap:", "if False:"),
    _m("1.6", "static fields become data fields",
       'data_fields = [f.name for f in fields if not f.metadata.get("static", False)]',
       "data_fields = [f.name for f in fields]"),
    _m("1.6", "the dataclass is registered in the default registry only",
       "for registry in _all_registries[1:]:", "for registry in []:"),
    _m("1.1", "a FlattenedIndexKey keeps its brackets under simple=True",
       " | FlattenedIndexKey(key=inner)", ""),
    _m("1.1", "a bare key is printed with repr (quotes around a str key)",
       "parts.append(str(inner))", "parts.append(repr(inner))"),
    _m("1.1", "simple=True strips brackets and dots from the key's text",
       "parts.append(str(key))", "parts.append(str(key).strip(\"[].'\"))"),
    _m("1.1", "a key that is no key class is left out of the simple text", """
       case _:
           parts.append(str(key))
       """, """
       case _:
           pass
       """),
    _m("1.1", "a dict key that is no string is joined as it is, not as its text",
       """
       case SequenceKey(idx=inner) | DictKey(key=inner) | FlattenedIndexKey(key=inner):
           parts.append(str(inner))
       """,
       """
       case SequenceKey(idx=inner) | FlattenedIndexKey(key=inner):
           parts.append(str(inner))
       case DictKey(key=inner):
           parts.append(inner)
       """),
    _m("1.2", "keys sorted by their type name, then value",
       "keys.sort()", "keys.sort(key=lambda k: (type(k).__name__, k))"),
    _m("1.2", "keys sorted in descending order", "keys.sort()", "keys.sort(reverse=True)"),
    _m("1.3", "is_leaf is asked without the key path in a keyed flatten",
       "_is_known_leaf(leaf_predicate, x, path)", "_is_known_leaf(leaf_predicate, x, None)"),
    _m("1.3", "is_leaf's verdict is taken raw, not through _is_known_leaf",
       "_is_known_leaf(leaf_predicate, x, path)",
       "(leaf_predicate(x) if path is None else leaf_predicate(path, x))"),
    _m("1.3", "a leaf's path is recorded as a list",
       "leaves.append(x if path is None else (path, x))",
       "leaves.append(x if path is None else (list(path), x))"),
    _m("1.3", "a node with no children is recorded as a leaf", """
       traversal.append(Node(registration.kind, arity, node_data, registration,
       len(leaves) - start_leaves, len(traversal) - start_nodes + 1))
       """, """
       if arity == 0:
           leaves.append(x if path is None else (path, x))
           traversal.append(LEAF)
           return
       traversal.append(Node(registration.kind, arity, node_data, registration,
                             len(leaves) - start_leaves, len(traversal) - start_nodes + 1))
       """),
    _m("1.3", "a node's arity is len() of its children, which an iterator has not",
       """
       children, node_data = registration.to_iterable(x)
       for child in children:
           self._flatten(child, leaf_predicate, leaves, traversal, None)
           arity += 1
       """,
       """
       children, node_data = registration.to_iterable(x)
       arity = len(children)
       for child in children:
           self._flatten(child, leaf_predicate, leaves, traversal, None)
       """),
    _m("1.4", "an extra None leaf is not seen as too many",
       "if next(leaf_iter, _NO_LEAF) is not _NO_LEAF:", "if next(leaf_iter, None) is not None:"),
    _m("1.4", "the leaf count starts at one", "count = 0", "count = 1"),
    _m("1.4", "a None leaf is skipped",
       "stack.append(next(leaf_iter))",
       "stack.append(next(x for x in leaf_iter if x is not None))"),
    _m("1.5", "is_leaf is left out of the key-path explanation",
       "structure_error(tree, other, is_leaf,", "structure_error(tree, other, None,"),
    _m("1.5", "the original error is chained under the explanation",
       'raise structure_error(tree, other, is_leaf, "tree_map tree", err) from None',
       'raise structure_error(tree, other, is_leaf, "tree_map tree", err) from err'),
    _m("1.6", "a field is static when its metadata names static at all", """
       data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
       meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
       """, """
       data_fields = [f.name for f in fields if "static" not in f.metadata]
       meta_fields = [f.name for f in fields if "static" in f.metadata]
       """),
    _m("1.6", "init=False fields are required too",
       "init_fields = {f.name for f in dataclasses.fields(nodetype) if f.init}",
       "init_fields = {f.name for f in dataclasses.fields(nodetype)}"),
    _m("1.6", "missing and unexpected fields are swapped",
       "missing = init_fields - given", "missing = given - init_fields"),
    _m("1.6", "data_fields alone is accepted, the meta fields inferred",
       "if (data_fields is None) != (meta_fields is None):", "if False:"),
    _m("1.6", "a non-dataclass without fields gets no TypeError",
       "if not dataclasses.is_dataclass(nodetype):", "if False:"),
    _m("1.6", "the missing-fields hint is dropped",
       '" this error.")', '"")'),
    # -- stage 2: tracing ----------------------------------------------------------------------
    _m("1.6", "data_fields is printed with str, not repr",
       "Got {data_fields=} ", "Got data_fields={data_fields} "),
    _m("1.6", "meta_fields is printed with str, not repr",
       'f"{meta_fields=}.")', 'f"meta_fields={meta_fields}.")'),
    _m("1.6", "the type that is not a dataclass is printed with str, not repr",
       "Got {nodetype=}.", "Got nodetype={nodetype}."),
    _m("2.1", "a negative power is not inverted", "return 1 / result if y < 0 else result",
       "return result"),
    _m("2.1", "x ** 0 is x itself", "return np.ones_like(x)", "return x"),
    _m("2.1", "the first set bit multiplies ones (a complex infinity becomes NaNs)",
       "result = power if result is None else result * power",
       "result = (np.ones_like(x) if result is None else result) * power"),
    _m("2.1", "the exponent's bits are read from the top", "if n & 1:", "if n & 2:"),
    _m("2.1", "the power is squared before it is used", """
       if n & 1:
           result = power if result is None else result * power
       n >>= 1
       if n > 0:
           power = power * power
       """, """
       power = power * power
       if n & 1:
           result = power if result is None else result * power
       n >>= 1
       """),
    _m("2.1", "the power is computed by numpy, not by squaring",
       "return 1 / result if y < 0 else result", "return x ** y if y >= 0 else 1 / x ** -y"),
    _m("2.1", "the exponent is counted down by one", "n >>= 1", "n -= 1"),
    _m("2.1", "a negative power inverts x first, then squares (rounds differently)", """
       result, power = None, x  # no product yet: the first set bit takes the power as it is
       n = -y if y < 0 else y
       """, """
       result, power = None, 1 / x if y < 0 else x
       n = -y if y < 0 else y
       """),
    _m("2.2", "keyword arguments are dropped", "ans = f(*py_args, **py_kwargs)",
       "ans = f(*py_args)"),
    _m("2.2", "the output tree is not stored", "store.store(out_tree)", "pass"),
    _m("2.2", "kwargs are passed as one positional dict",
       "ans = f(*py_args, **py_kwargs)", "ans = f(*py_args, py_kwargs)"),
    _m("2.2", "the output is returned unflattened", "return ans_flat", "return ans"),
    _m("2.2", "the input tree is stored", "store.store(out_tree)", "store.store(in_tree)"),
    _m("2.2", "keyword arguments are dropped", "ans = f(*py_args, **py_kwargs)",
       "ans = f(*py_args)"),
    _m("2.2", "the output is wrapped in a tuple before flattening",
       "ans_flat, out_tree = tree_flatten(ans)", "ans_flat, out_tree = tree_flatten((ans,))"),
    _m("2.2", "None outputs are kept as leaves",
       "ans_flat, out_tree = tree_flatten(ans)",
       "ans_flat, out_tree = tree_flatten(ans, is_leaf=lambda x: x is None)"),
    _m("2.3", "a single result comes back in a list",
       "return out_tracers if primitive.multiple_results else out_tracers[0]",
       "return out_tracers"),
    _m("2.3", "an abstract eval returning the wrong kind goes unchecked",
       "if isinstance(out_avals, (tuple, list)) != primitive.multiple_results:", "if False:"),
    _m("2.3", "the equation's inputs are fresh variables, not the operands' own",
       "invars = [t.val for t in tracers]",
       "invars = [self.frame.newvar(t.aval) for t in tracers]"),
    _m("2.3", "the wrong kind from abstract_eval raises a TypeError",
       'raise ValueError(f"{primitive}.abstract_eval() method',
       'raise TypeError(f"{primitive}.abstract_eval() method'),
    _m("2.3", "JAX's message for the wrong kind is reworded",
       'should return "', 'returned the wrong kind "'),
    _m("2.3", "abstract_eval may return only a tuple for multiple results",
       "if isinstance(out_avals, (tuple, list)) != primitive.multiple_results:",
       "if isinstance(out_avals, tuple) != primitive.multiple_results:"),
    _m("2.3", "only a sequence from a single-result primitive is refused, not the reverse",
       "if isinstance(out_avals, (tuple, list)) != primitive.multiple_results:",
       "if isinstance(out_avals, (tuple, list)) and not primitive.multiple_results:"),
    _m("2.3", "JAX's message for a sequence/multiple_results mismatch is reworded",
       'f"a tuple or a list iff {primitive}.multiple_results.")',
       'f"a tuple or a list if and only if {primitive}.multiple_results is set.")'),
    _m("2.4", "the rhs free dimensions come before the lhs ones",
       "return (*lhs_batch_shape, *lhs_free, *rhs_free)",
       "return (*lhs_batch_shape, *rhs_free, *lhs_free)"),
    _m("2.4", "a repeated dimension is accepted", "if len(set(dims)) != len(dims):",
       "if False:"),
    _m("2.4", "contracting sizes are not compared",
       "if lhs_contract_shape != rhs_contract_shape:", "if False:"),
    _m("2.4", "a negative dimension number is accepted",
       "if not all(0 <= d < aval.ndim for d in (*contract, *batch)):",
       "if not all(d < aval.ndim for d in (*contract, *batch)):"),
    _m("2.4", "a dimension number equal to the rank is accepted",
       "if not all(0 <= d < aval.ndim for d in (*contract, *batch)):",
       "if not all(0 <= d <= aval.ndim for d in (*contract, *batch)):"),
    _m("2.4", "unequal batch counts are left to the shape check",
       "if len(lhs_batch) != len(rhs_batch):", "if False:"),
    _m("2.4", "a dimension both batch and contracting is accepted",
       "if set(contract) & set(batch):", "if False:"),
    _m("2.4", "contracting sizes are compared as multisets, not pairwise",
       "if lhs_contract_shape != rhs_contract_shape:",
       "if sorted(lhs_contract_shape) != sorted(rhs_contract_shape):"),
    _m("2.4", "the range error shows the contracting dims as the batch ones",
       'f"than the number of axes of the {side} value, got {side}_batch of {batch} "',
       'f"than the number of axes of the {side} value, got {side}_batch of {contract} "'),
    _m("2.4", "the batch-shape check is left to the contracting one",
       "if lhs_batch_shape != rhs_batch_shape:", "if False:"),
    _m("2.4", "the distinctness checks go one side at a time, not both batches first",
       """
       for kind, side, dims in (("batch", "lhs", lhs_batch), ("batch", "rhs", rhs_batch),
                                ("contracting", "lhs", lhs_contract),
       """,
       """
       for kind, side, dims in (("batch", "lhs", lhs_batch), ("contracting", "lhs", lhs_contract),
                                ("batch", "rhs", rhs_batch),
       """),
    _m("2.5", "the union of the upper bounds, not their intersection",
       "set.intersection(", "set.union("),
    _m("2.5", "the top of the common bounds, not the least",
       "least = [c for c in common if common <= _lattice_upper_bounds[c]]",
       "least = [min(common, key=lambda c: len(_lattice_upper_bounds[c]))]"),
    _m("2.5", "the least bound is tested with a strict subset",
       "common <= _lattice_upper_bounds[c]", "common < _lattice_upper_bounds[c]"),
    _m("2.5", "only the first two nodes are joined",
       "[n] for n in nodes)", "[n] for n in nodes[:2])"),
    _m("2.6", "equations run their impl instead of binding", "eqn.primitive.bind(",
       "eqn.primitive.impl("),
    _m("2.6", "a Literal operand is looked up in the environment",
       "return atom.val if isinstance(atom, Literal) else env[atom]", "return env[atom]"),
    _m("2.6", "an output is always looked up in the environment",
       "return [read(v) for v in jaxpr.outvars]", "return [env[v] for v in jaxpr.outvars]"),
    _m("2.6", "the consts are not checked against the constvars",
       "for var, val in zip(jaxpr.constvars, consts, strict=True):",
       "for var, val in zip(jaxpr.constvars, consts):"),
    _m("2.6", "a primitive's result is always taken as a list",
       "outs = ans if eqn.primitive.multiple_results else [ans]", "outs = [ans]"),
    _m("2.6", "the arguments are not checked against the invars",
       "for var, val in zip(jaxpr.invars, args, strict=True):",
       "for var, val in zip(jaxpr.invars, args):"),
    _m("2.6", "the consts are not written",
       "for var, val in zip(jaxpr.constvars, consts, strict=True):",
       "for var, val in zip(jaxpr.constvars, []):"),
    _m("2.6", "an equation's params are bound without get_bind_params",
       "params = eqn.primitive.get_bind_params(eqn.params)", "params = eqn.params"),
    _m("2.7", "params printed in insertion order", "params = sorted(eqn.params)",
       "params = list(eqn.params)"),
    _m("2.7", "no space before the operands", 'text(" ") + pp_vars(eqn.invars, context)',
       "pp_vars(eqn.invars, context)"),
    _m("2.7", "an equation without outputs still prints ' = '", "if eqn.outvars:", "if True:"),
    _m("2.7", "the operands are printed with their shapes",
       'text(" ") + pp_vars(eqn.invars, context)',
       'text(" ") + pp_vars(eqn.invars, context, print_shapes=settings.print_shapes)'),
    _m("2.7", "the binders are printed without shapes",
       "lhs = pp_vars(eqn.outvars, context, print_shapes=settings.print_shapes)",
       "lhs = pp_vars(eqn.outvars, context)"),
    _m("2.7", "the params given by the caller are ignored", "if params is None:", "if True:"),
    _m("2.7", "an equation without outputs prints nothing for its name",
       "return concat(rhs)", "return concat(rhs[1:])"),
    # -- stage 3: partial eval -----------------------------------------------------------------
    _m("3.1", "known inputs are staged anyway",
       "if all(c is not None for c in consts):", "if False:"),
    _m("3.1", "any known input is taken as all known",
       "if all(c is not None for c in consts):", "if any(c is not None for c in consts):"),
    _m("3.1", "a known input that is zero is taken as unknown (truthiness)",
       "if all(c is not None for c in consts):", "if all(consts):"),
    _m("3.1", "only the first input is checked for being known",
       "if all(c is not None for c in consts):", "if consts[0] is not None:"),
    _m("3.1", "a primitive with no inputs is staged, not bound",
       "if all(c is not None for c in consts):",
       "if consts and all(c is not None for c in consts):"),
    _m("3.2", "a multiple-results primitive returns only its first output",
       "return out_tracers if primitive.multiple_results else out_tracers[0]",
       "return out_tracers[0]"),
    _m("3.2", "known inputs are not instantiated",
       "tracers = [self.instantiate_const(t) for t in tracers]", "tracers = list(tracers)"),
    _m("3.2", "a one-result primitive's output gets its first input's aval",
       "out_avals = list(out) if primitive.multiple_results else [out]",
       "out_avals = list(out) if primitive.multiple_results else [tracers[0].aval]"),
    _m("3.2", "each output gets a recipe of its own", """
       recipe = new_eqn_recipe(self, tracers, out_tracers, primitive, params)
       for t in out_tracers:
           t.recipe = recipe
       """, """
       for t in out_tracers:
           t.recipe = new_eqn_recipe(self, tracers, out_tracers, primitive, params)
       """),
    _m("3.2", "a known input always becomes a constvar, never a literal",
       "tracers = [self.instantiate_const(t) for t in tracers]",
       "tracers = [self.new_instantiated_const(t.pval.get_known()) if t.is_known() else t "
       "for t in tracers]"),
    _m("3.2", "the recipe's params are dropped",
       "recipe = new_eqn_recipe(self, tracers, out_tracers, primitive, params)",
       "recipe = new_eqn_recipe(self, tracers, out_tracers, primitive, {})"),
    _m("3.3", "the kept equations stay in reverse order", "new_eqns.reverse()", "pass"),
    _m("3.3", "every output is live, used or not", "if used and isinstance(v, Var):",
       "if isinstance(v, Var):"),
    _m("3.3", "every equation is kept", "used_ins, new_eqn = rule(used_outs, eqn)",
       "used_ins, new_eqn = [True] * len(eqn.invars), eqn"),
    _m("3.3", "every input of an equation is live, kept or not",
       "if used and isinstance(x, Var):",
       "if isinstance(x, Var):"),
    _m("3.3", "the equations are walked forwards",
       "for eqn in reversed(jaxpr.eqns):",
       "for eqn in jaxpr.eqns:"),
    _m("3.3", "the equation a rule hands back is dropped for the original",
       "new_eqns.append(new_eqn)",
       "new_eqns.append(eqn)"),
    _m("3.3", "a primitive's own dce rule is never asked",
       "rule = dce_rules.get(eqn.primitive, _default_dce_rule)",
       "rule = _default_dce_rule"),
    _m("3.3", "an equation's outputs are all live if any one is",
       "used_outs = [v in live for v in eqn.outvars]",
       "used_outs = [any(v in live for v in eqn.outvars)] * len(eqn.outvars)"),
    _m("3.3", "a kept equation makes every input live, not those its rule uses",
       """
       for x, used in zip(eqn.invars, used_ins, strict=True):
           if used and isinstance(x, Var):
               live.add(x)
       """,
       """
       for x in eqn.invars if new_eqn is not None else ():
           if isinstance(x, Var):
               live.add(x)
       """),
    _m("3.4", "the residuals come before the known outputs",
       "return [*known_vals_out, *residuals]", "return [*residuals, *known_vals_out]"),
    _m("3.4", "the residuals stay constvars of the unknown jaxpr",
       "jaxpr_unknown = convert_constvars_jaxpr(jaxpr_unknown_)",
       "jaxpr_unknown = jaxpr_unknown_"),
    _m("3.4", "instantiate is ignored", "f, trace, instantiate, in_pvals)",
       "f, trace, False, in_pvals)"),
    _m("3.4", "a known input is taken by its position among all inputs", """
       in_pvals = [PartialVal.unknown(aval) if uk else PartialVal.known(next(known_vals))
                   for aval, uk in zip(jaxpr.in_avals, unknowns, strict=True)]
       """, """
       in_pvals = [PartialVal.unknown(aval) if uk else PartialVal.known(known_vals_in[i])
                   for i, (aval, uk) in enumerate(zip(jaxpr.in_avals, unknowns))]
       """),
    _m("3.4", "the residual avals are listed in reverse",
       "cell.append((jaxpr_unknown, out_unknowns, [core.get_aval(r) for r in residuals]))",
       "cell.append((jaxpr_unknown, out_unknowns, [core.get_aval(r) for r in residuals[::-1]]))"),
    _m("3.4", "the residual avals lose their weak type",
       "[core.get_aval(r) for r in residuals]",
       "[core.get_aval(r).update(weak_type=False) for r in residuals]"),
    _m("3.5", "a recomputed equation is not staged again",
       "return eqn, eqn.replace(), [False] * n, [True] * n, needs",
       "return eqn, None, [False] * n, [False] * n, []"),
    _m("3.5", "saved outputs are instantiated on the staged side",
       "return eqn, None, [False] * n, [False] * n, []",
       "return eqn, None, [False] * n, [True] * n, []"),
    _m("3.5", "the policy is never asked",
       "if has_effects(eqn) or isinstance(policy, SaveableType):", "if True:"),
    _m("3.5", "an effectful equation is recomputed when not saveable",
       "if has_effects(eqn) or isinstance(policy, SaveableType):",
       "if isinstance(policy, SaveableType):"),
    _m("3.5", "every Var input of a recomputed equation crosses, instantiated or not",
       "if isinstance(x, Var) and not inst]", "if isinstance(x, Var)]"),
    _m("3.5", "an unknown equation asks for no residuals",
       "return None, eqn, [True] * n, [True] * n, needs",
       "return None, eqn, [True] * n, [True] * n, []"),
    _m("3.5", "a bool policy answer is not made an enum",
       "policy = ensure_enum(saveable(eqn.primitive, *[x.aval for x in eqn.invars], **eqn.params))",
       "policy = saveable(eqn.primitive, *[x.aval for x in eqn.invars], **eqn.params)"),
    _m("3.5", "the policy is handed the Vars, not their avals",
       "policy = ensure_enum(saveable(eqn.primitive, *[x.aval for x in eqn.invars], **eqn.params))",
       "policy = ensure_enum(saveable(eqn.primitive, *eqn.invars, **eqn.params))"),
    _m("3.5", "the policy is asked without the equation's params",
       "policy = ensure_enum(saveable(eqn.primitive, *[x.aval for x in eqn.invars], **eqn.params))",
       "policy = ensure_enum(saveable(eqn.primitive, *[x.aval for x in eqn.invars]))"),
    _m("3.6", "only_if_no_batch_dims is ignored", "if not self.only_if_no_batch_dims:",
       "if True:"),
    _m("3.6", "everything that is not a dot is saved",
       """
       if prim is not lax.dot_general_p:
           return False
       """, """
       if prim is not lax.dot_general_p:
           return True
       """),
    _m("3.6", "the dimension numbers unpacked batch dims first",
       "(_, _), (lhs_batch, rhs_batch) = params[", "(lhs_batch, rhs_batch), (_, _) = params["),
    _m("3.6", "only_if_no_batch_dims is read backwards",
       "if not self.only_if_no_batch_dims:", "if self.only_if_no_batch_dims:"),
    _m("3.6", "batch dims are read from the contracting pair",
       "return not lhs_batch and not rhs_batch",
       'return not params["dimension_numbers"][0][0] and '
       'not params["dimension_numbers"][0][1]'),
    # -- stage 4: autodiff ---------------------------------------------------------------------
    _m("3.6", "no batch dims read as operands of rank at most 2",
       """
       (_, _), (lhs_batch, rhs_batch) = params["dimension_numbers"]
       return not lhs_batch and not rhs_batch
       """,
       "return all(a.ndim <= 2 for a in avals)"),
    _m("4.1", "all-Zero tangents still run the jvp rule",
       "if all(type(t) is Zero for t in tangents_in):", "if False:"),
    _m("4.1", "JAX's message for a missing rule is reworded",
       "f\"Differentiation rule for '{primitive}' not implemented\"",
       "f\"no jvp rule for {primitive}\""),
    _m("4.1", "one zero tangent skips the rule",
       "if all(type(t) is Zero for t in tangents_in):",
       "if any(type(t) is Zero for t in tangents_in):"),
    _m("4.1", "the jvp rule runs without the parent trace current",
       "with core.set_current_trace(self.parent_trace):", "if True:"),
    _m("4.1", "multiple results are wrapped as one tracer", """
       if primitive.multiple_results:
           return [maybe_jvp_tracer(self, p, t)
                   for p, t in zip(primal_out, tangent_out, strict=True)]
       """, ""),
    _m("4.1", "an output with a Zero tangent is still wrapped in a tracer",
       "return maybe_jvp_tracer(self, primal_out, tangent_out)",
       "return JVPTracer(self, primal_out, tangent_out)"),
    _m("4.1", "a missing rule raises TypeError", "raise NotImplementedError(", "raise TypeError("),
    _m("4.1", "the all-Zero case binds on the current trace",
       "return primitive.bind_with_trace(self.parent_trace, primals_in, params)",
       "return primitive.bind(*primals_in, **params)"),
    _m("4.1", "Zero tangents are instantiated before the jvp rule",
       "primals_in, tangents_in = [p for p, _ in pairs], [t for _, t in pairs]",
       "primals_in, tangents_in = [p for p, _ in pairs], [instantiate_zeros(t) for _, t in pairs]"),
    _m("4.2", "dx is multiplied by x, not y",
       "add_jaxvals(lax.mul_p.bind(xdot, y, out_dtype=out_dtype)",
       "add_jaxvals(lax.mul_p.bind(xdot, x, out_dtype=out_dtype)"),
    _m("4.2", "the two terms are summed with add, not add_any", "add_jaxvals(", "lax.add("),
    _m("4.2", "with a Zero dx, the product is written dy * x",
       "return out, lax.mul_p.bind(x, ydot, out_dtype=out_dtype)",
       "return out, lax.mul_p.bind(ydot, x, out_dtype=out_dtype)"),
    _m("4.2", "tangent products lose out_dtype",
       "return out, lax.mul_p.bind(xdot, y, out_dtype=out_dtype)", "return out, lax.mul(xdot, y)"),
    _m("4.2", "with a Zero dy, the product is written y * dx",
       "return out, lax.mul_p.bind(xdot, y, out_dtype=out_dtype)",
       "return out, lax.mul_p.bind(y, xdot, out_dtype=out_dtype)"),
    _m("4.2", "the two terms are summed in the other order",
       """
       return out, add_jaxvals(lax.mul_p.bind(xdot, y, out_dtype=out_dtype),
       lax.mul_p.bind(x, ydot, out_dtype=out_dtype))
       """, """
       return out, add_jaxvals(lax.mul_p.bind(x, ydot, out_dtype=out_dtype),
                               lax.mul_p.bind(xdot, y, out_dtype=out_dtype))
       """),
    _m("4.2", "the primal product loses out_dtype",
       "out = lax.mul_p.bind(x, y, out_dtype=out_dtype)", "out = lax.mul(x, y)"),
    _m("4.2", "x's tangent Zero: the remaining term loses out_dtype",
       "return out, lax.mul_p.bind(x, ydot, out_dtype=out_dtype)",
       "return out, lax.mul(x, ydot)"),
    _m("4.2", "both tangents: the two terms lose out_dtype",
       """
       return out, add_jaxvals(lax.mul_p.bind(xdot, y, out_dtype=out_dtype),
                               lax.mul_p.bind(x, ydot, out_dtype=out_dtype))
       """,
       "return out, add_jaxvals(lax.mul(xdot, y), lax.mul(x, ydot))"),
    _m("4.3", "a zero output tangent takes the next tangent value",
       "if not nz:", "if False:"),
    _m("4.3", "every input gets an unknown tangent, integer ones too",
       "for a, d in zip(avals, differentiable, strict=True) if d]]",
       "for a, d in zip(avals, differentiable, strict=True)]]"),
    _m("4.3", "primal depending on tangent not refused",
       "if not all(pval.is_known() for pval in primal_pvals):", "if False:"),
    _m("4.3", "the primal outputs are counted as many as the inputs",
       "n_out = len(out_pvals) - sum(nonzeros())",
       "n_out = len(primals)"),
    _m("4.3", "a known output tangent is taken for an output of the linear jaxpr",
       "tangents_out.append(next(nz_tangent_pvals).get_known())  # None: unknown",
       "tangents_out.append(None)"),
    _m("4.3", "a primal output that reads a tangent raises TypeError",
       "raise ValueError(  # a primal output depends on an input tangent (JAX's words)",
       "raise TypeError(  # a primal output depends on an input tangent (JAX's words)"),
    _m("4.3", "a zero output tangent takes the primal's aval, not its tangent aval",
       "tangents_out.append(Zero.from_primal_value(p))",
       "tangents_out.append(Zero(core.get_aval(p)))"),
    _m("4.3", "refused only when every primal output is unknown, not any",
       "if not all(pval.is_known() for pval in primal_pvals):",
       "if not any(pval.is_known() for pval in primal_pvals):"),
    _m("4.4", "the linear equations are walked forwards",
       "for eqn in reversed(linear_eqns):", "for eqn in linear_eqns:"),
    _m("4.4", "an equation whose cotangents are all Zero is transposed anyway",
       "if all(type(ct) is Zero for ct in cts_in):", "if False:"),
    _m("4.4", "a multi-output eqn with any Zero ct is skipped",
       "if all(type(ct) is Zero for ct in cts_in):", "if any(type(ct) is Zero for ct in cts_in):"),
    _m("4.4", "the operands' cotangents are written in reverse",
       "for x, ct_out in zip(eqn.invars, cts_out, strict=True):",
       "for x, ct_out in zip(eqn.invars[::-1], cts_out, strict=True):"),
    _m("4.4", "a multiple-results equation gets only its first cotangent",
       "ct = cts_in if eqn.primitive.multiple_results else cts_in[0]",
       "ct = cts_in[0]"),
    _m("4.4", "inputs that got no cotangent are left out of the result",
       "return [read_cotangent(v) for v in jaxpr.invars]",
       "return [read_cotangent(v) for v in jaxpr.invars if v in ct_env]"),
    _m("4.4", "an equation is skipped when its first output's cotangent is Zero",
       "if all(type(ct) is Zero for ct in cts_in):",
       "if type(cts_in[0]) is Zero:"),
    _m("4.5", "the result is not transposed into x's axis order",
       "out = lax.transpose(out, tuple(np.argsort(out_axes)))", "out = out"),
    _m("4.5", "transposed by the axes themselves, not their inverse permutation",
       "tuple(np.argsort(out_axes))", "tuple(out_axes)"),
    _m("4.5", "swap_ans is ignored", "if swap_ans:", "if False:"),
    _m("4.5", "swapped: ct's y-free axes are counted from 0, before its batch axes",
       "ct_y_free = list(range(n_batch, n_batch + len(y_free)))",
       "ct_y_free = list(range(len(y_free)))"),
    _m("4.5", "ct's batch axes are taken where x has them, not first",
       "(tuple(range(n_batch)), tuple(y_batch))",
       "(tuple(x_batch), tuple(y_batch))"),
    _m("4.5", "x's contracted axes are put back in x's order, not y's",
       "*[x_contract[i] for i in np.argsort(y_contract)]]",
       "*x_contract]"),
    _m("4.5", "x's free axes are taken to come before its batch axes",
       "out_axes = [*x_batch, *x_free,",
       "out_axes = [*x_free, *x_batch,"),
    _m("4.5", "x's contracted axes are sorted by x's own order",
       "*[x_contract[i] for i in np.argsort(y_contract)]]",
       "*[x_contract[i] for i in np.argsort(x_contract)]]"),
    _m("4.5", "the precision is dropped from the transposed dot",
       "out = lax.dot_general(ct, y, dims, precision=precision,",
       "out = lax.dot_general(ct, y, dims, precision=None,"),
    _m("4.5", "preferred_element_type is dropped from the transposed dot",
       "preferred_element_type=preferred_element_type,",
       "preferred_element_type=None,"),
    _m("4.5", "y's batch axes are taken as its first axes",
       "(tuple(range(n_batch)), tuple(y_batch))",
       "(tuple(range(n_batch)), tuple(range(n_batch)))"),
    _m("4.6", "an int argnums still gets a tuple of gradients",
       "g = g[0] if isinstance(argnums, int) else g", "g = g"),
    _m("4.6", "a non-scalar output is not refused", "_check_scalar(ans)", "pass"),
    _m("4.6", "aux comes before the value", "return ((ans, aux) if has_aux else ans), g",
       "return ((aux, ans) if has_aux else ans), g"),
    _m("4.6", "a one-element argnums tuple unwrapped",
       "g = g[0] if isinstance(argnums, int) else g", "g = g[0] if len(g) == 1 else g"),
    _m("4.6", "integer arguments outside argnums are refused too",
       "for leaf in tree_leaves(dyn_args):", "for leaf in tree_leaves(args):"),
    _m("4.6", "the output's dtype is not checked",
       "tree_map(functools.partial(_check_output_dtype_grad, holomorphic), ans)", "pass"),
    _m("4.6", "the seed cotangent is a strong-typed one",
       "g = f_vjp(lax.full_like(ans, 1, shape=()))",
       "g = f_vjp(np.ones((), dtype=core.get_aval(ans).dtype))"),
    _m("4.6", "has_aux's aux is taken from the wrong place",
       "ans, f_vjp, aux = vjp(f_partial, *dyn_args, has_aux=True)",
       "ans, aux, f_vjp = vjp(f_partial, *dyn_args, has_aux=True)"),
    _m("4.6", "the output's dtype is checked before its shape",
       """
       _check_scalar(ans)
       tree_map(functools.partial(_check_output_dtype_grad, holomorphic), ans)
       """,
       """
       tree_map(functools.partial(_check_output_dtype_grad, holomorphic), ans)
       _check_scalar(ans)
       """),
    _m("4.7", "in_zeros marks the nonzero tangents",
       "in_zeros = [type(t) is Zero for t in tangents_in]",
       "in_zeros = [type(t) is not Zero for t in tangents_in]"),
    _m("4.7", "out_avals are the primal avals, not their tangent avals",
       "out_avals = [tangent_aval(core.get_aval(p)) for p in primals_out]",
       "out_avals = [core.get_aval(p) for p in primals_out]"),
    _m("4.7", "the residuals are taken from the end",
       "res_and_primals_out[: res_tree.num_leaves]",
       "res_and_primals_out[len(res_and_primals_out) - res_tree.num_leaves :]"),
    _m("4.7", "fwd is told the zero tangents are the perturbed ones",
       "for x in (p, type(t) is not Zero)]",
       "for x in (p, type(t) is Zero)]"),
    _m("4.7", "Zero tangents are bound as operands of custom_lin",
       "nz_tangents = [t for t in tangents_in if type(t) is not Zero]",
       "nz_tangents = [t for t in tangents_in]"),
    _m("4.7", "out_avals are the inputs' tangent avals",
       "out_avals = [tangent_aval(core.get_aval(p)) for p in primals_out]",
       "out_avals = [tangent_aval(core.get_aval(p)) for p in primals_in]"),
    _m("4.7", "fwd runs under the JVP trace, not its parent",
       """
       with core.set_current_trace(trace.parent_trace):
           res_and_primals_out = fwd.call_wrapped(*fwd_in)
       """,
       """
       res_and_primals_out = fwd.call_wrapped(*fwd_in)
       """),
    _m("4.7", "the residual and output trees are swapped",
       "_, res_tree = out_trees()", "res_tree, _ = out_trees()"),
    _m("4.7", "symbolic_zeros is not passed on",
       "symbolic_zeros=symbolic_zeros, in_zeros=in_zeros)",
       "symbolic_zeros=False, in_zeros=in_zeros)"),
    _m("4.7", "fwd is told every input is perturbed",
       "for x in (p, type(t) is not Zero)]", "for x in (p, True)]"),
    _m("4.7", "custom_lin is bound on the JVP trace, not its parent", """
       with core.set_current_trace(trace.parent_trace):
           tangents_out = custom_lin_p.bind(
       """, """
       if True:
           tangents_out = custom_lin_p.bind(
       """),
    # -- stage 5: vmap -------------------------------------------------------------------------
    _m("5.1", "axis_size is ignored", "sizes.add(axis_size)", "pass"),
    _m("5.1", "the least common size is listed first", ".most_common()",
       ".most_common()[::-1]"),
    _m("5.1", "the message keeps its last ';'", 'raise ValueError("".join(msg)[:-2])',
       'raise ValueError("".join(msg)[:-1])'),
    _m("5.1", "every size is 'most'", 'which = "most" if k == 0 else "some"',
       'which = "most"'),
    _m("5.1", "unmapped (None) arguments are counted among the sizes",
       "counts = collections.Counter(s for s in mapped_sizes if s is not None).most_common()",
       "counts = collections.Counter(s for s in mapped_sizes).most_common()"),
    _m("5.1", "the axis_size line is left out of the message",
       'msg.append(f"  * the `axis_size` argument was {axis_size};\\n")', "pass"),
    _m("5.1", "the example of a size is its last leaf, not its first",
       "i = mapped_sizes.index(size)",
       "i = len(mapped_sizes) - 1 - mapped_sizes[::-1].index(size)"),
    _m("5.1", "a negative axis is shown normalized",
       'example = f"axis {dims[i]} of {where[i]}"',
       'example = f"axis {dims[i] % np.ndim(vals[i])} of {where[i]}"'),
    _m("5.1", "a single size with axis_size disagreeing is accepted",
       "if len(sizes) == 1:", "if len(sizes) >= 1 and axis_size is None or len(sizes) == 1:"),
    _m("5.2", "an unbatched output is wrapped anyway",
       "return val_out if dim_out is not_mapped else BatchTracer(self, val_out, dim_out)",
       "return BatchTracer(self, val_out, dim_out)"),
    _m("5.2", "JAX's message for a missing rule is reworded",
       "f\"Batching rule for '{primitive}' not implemented\"",
       "f\"no batching rule for {primitive}\""),
    _m("5.2", "a primitive with no rule fails even when nothing is batched",
       "if all(d is not_mapped for d in dims_in):", "if False:"),
    _m("5.2", "an unbatched output of a multiple-results primitive is wrapped anyway",
       "return [x if d is not_mapped else BatchTracer(self, x, d)",
       "return [BatchTracer(self, x, d)"),
    _m("5.2", "the rule runs without the parent trace current",
       "with core.set_current_trace(self.parent_trace):", "if True:"),
    _m("5.2", "a missing rule raises TypeError", "raise NotImplementedError(", "raise TypeError("),
    _m("5.2", "nothing batched: bound on the current trace, not the parent",
       "return primitive.bind_with_trace(self.parent_trace, vals_in, params)",
       "return primitive.bind(*vals_in, **params)"),
    _m("5.3", "the batch axis is reported where it was, not at the front",
       "return prim.bind(*args, **params), 0", "return prim.bind(*args, **params), dim"),
    _m("5.3", "operands with the same batch axis are moved anyway",
       "if all(np.shape(x) == shape and d == dim", "if False and all(np.shape(x) == shape"),
    _m("5.3", "a batched scalar gets no trailing axes",
       "expand_dims(x, tuple(range(np.ndim(x), ndim)))", "x"),
    _m("5.3", "a scalar operand counts in the same-axis test",
       "for x, d in zip(args, dims, strict=True) if np.ndim(x)):",
       "for x, d in zip(args, dims, strict=True)):"),
    _m("5.3", "an unbatched operand is broadcast to the batch size",
       "bdim_at_front(x, d, 1)", "bdim_at_front(x, d, axis_data.size)"),
    _m("5.3", "operands with the same batch axis are taken as the same shape",
       "if all(np.shape(x) == shape and d == dim", "if all(d == dim"),
    _m("5.4", "the reduced axes are not shifted past the batch axis",
       "new_axes = tuple(a if a < bdim else a + 1 for a in axes)", "new_axes = tuple(axes)"),
    _m("5.4", "an axis equal to the batch axis is not shifted", "a if a < bdim else a + 1",
       "a if a <= bdim else a + 1"),
    _m("5.4", "the output's axes are counted around the per-example axes, not the shifted ones",
       "if d not in new_axes]", "if d not in axes]"),
    _m("5.4", "the output batch axis is assumed unmoved", "out_dim = kept.index(bdim)",
       "out_dim = bdim"),
    _m("5.5", "lhs batched: the output batch axis forgets the batch dimensions",
       "out_dim = len(lhs_batch) + lhs_free.index(lbd)", "out_dim = lhs_free.index(lbd)"),
    _m("5.5", "rhs batched: the output batch axis forgets lhs's free dimensions",
       "out_dim = len(rhs_batch) + lhs_free_count + rhs_free.index(rbd)",
       "out_dim = len(rhs_batch) + rhs_free.index(rbd)"),
    _m("5.5", "both batched: the new batch dimension goes last, not first",
       "lhs_batch, rhs_batch = (lbd, *bump(lhs_batch, lbd)), (rbd, *bump(rhs_batch, rbd))",
       "lhs_batch, rhs_batch = (*bump(lhs_batch, lbd), lbd), (*bump(rhs_batch, rbd), rbd)"),
    _m("5.5", "both batched: each operand's axes are bumped past the other's batch axis",
       "lhs_contract, rhs_contract = bump(lhs_contract, lbd), bump(rhs_contract, rbd)",
       "lhs_contract, rhs_contract = bump(lhs_contract, rbd), bump(rhs_contract, lbd)"),
    _m("5.5", "lhs batched: the output batch axis is lbd, not its place among lhs's free axes",
       "out_dim = len(lhs_batch) + lhs_free.index(lbd)",
       "out_dim = len(lhs_batch) + lbd"),
    _m("5.5", "rhs batched: lhs's batch dimensions are counted among its free ones",
       "lhs_free_count = np.ndim(lhs) - len(lhs_batch) - len(lhs_contract)",
       "lhs_free_count = np.ndim(lhs) - len(lhs_contract)"),
    _m("5.5", "rhs batched: the output batch axis is rbd, not its place among rhs's free axes",
       "out_dim = len(rhs_batch) + lhs_free_count + rhs_free.index(rbd)",
       "out_dim = len(rhs_batch) + lhs_free_count + rbd"),
    _m("5.5", "lhs batched: its batch dims are not bumped past the vmapped axis",
       "lhs_batch, lhs_contract = bump(lhs_batch, lbd), bump(lhs_contract, lbd)",
       "lhs_contract = bump(lhs_contract, lbd)"),
    _m("5.5", "rhs batched: its batch dims are not bumped past the vmapped axis",
       "rhs_batch, rhs_contract = bump(rhs_batch, rbd), bump(rhs_contract, rbd)",
       "rhs_contract = bump(rhs_contract, rbd)"),
    _m("5.5", "both batched: rhs's batch dims are not bumped",
       "lhs_batch, rhs_batch = (lbd, *bump(lhs_batch, lbd)), (rbd, *bump(rhs_batch, rbd))",
       "lhs_batch, rhs_batch = (lbd, *bump(lhs_batch, lbd)), (rbd, *rhs_batch)"),
    _m("5.5", "precision and preferred_element_type are dropped",
       "out = lax.dot_general(lhs, rhs, new_dims, precision, preferred_element_type)",
       "out = lax.dot_general(lhs, rhs, new_dims)"),
    _m("5.5", "the precision is dropped, preferred_element_type kept",
       "out = lax.dot_general(lhs, rhs, new_dims, precision, preferred_element_type)",
       "out = lax.dot_general(lhs, rhs, new_dims, preferred_element_type=preferred_element_type)"),
    _m("5.6", "the input-of-output tree is not transposed",
       "jac_tree = tree_transpose(tree_structure(example), tree_structure(y), jac_tree)",
       "jac_tree = jac_tree"),
    _m("5.6", "each input leaf's rows are split along its last axis",
       "_unravel_array_into_pytree(y, 0, x_leaf, j)",
       "_unravel_array_into_pytree(y, -1, x_leaf, j)"),
    _m("5.6", "an integer output is not refused", "_check_output_dtype_jacrev(leaf)", "pass"),
    _m("5.6", "a one-element argnums tuple is unwrapped",
       "jac = jac[0] if isinstance(argnums, int) else jac",
       "jac = jac[0] if len(jac) == 1 else jac"),
    _m("5.6", "only the first output leaf is checked for an integer dtype",
       "for leaf in tree_leaves(y):",
       "for leaf in tree_leaves(y)[:1]:"),
    _m("5.6", "an int argnums still takes every dynamic argument as the example",
       "example = dyn_args[0] if isinstance(argnums, int) else dyn_args",
       "example = dyn_args"),
    _m("5.6", "the transpose's outer and inner structures are swapped",
       "jac_tree = tree_transpose(tree_structure(example), tree_structure(y), jac_tree)",
       "jac_tree = tree_transpose(tree_structure(y), tree_structure(example), jac_tree)"),
    _m("5.6", "the rows are cast to the output leaf's dtype, not the input's",
       "_unravel_array_into_pytree(y, 0, x_leaf, j)", "_unravel_array_into_pytree(y, 0, None, j)"),
    _m("5.7", "the vmap's own name is left for the primitive to reduce",
       "0 if a == axis_data.name else a", "a"),
    _m("5.7", "positional axes are not shifted past the batch axis",
       "a + (a >= 0) if isinstance(a, int) else", "a if isinstance(a, int) else"),
    _m("5.7", "a negative positional axis is shifted too, so -1 becomes the batch axis",
       "a + (a >= 0) if isinstance(a, int) else", "a + 1 if isinstance(a, int) else"),
    _m("5.7", "a reduction over the vmap's own axis stays batched",
       "(not_mapped if ours else 0)", "0"),
    _m("5.7", "the front axis is moved to the batch axis, not the batch axis to the front",
       "x = moveaxis(x, d, 0)",
       "x = moveaxis(x, 0, d)"),
    _m("5.7", "positional axes are shifted only from the batch axis on, as if it had not moved",
       "a + (a >= 0) if isinstance(a, int) else",
       "(a if a < d else a + 1) if isinstance(a, int) else"),
    _m("5.7", "a reduction over our axis is batched and one over other axes is not",
       "(not_mapped if ours else 0)",
       "(0 if ours else not_mapped)"),
    # -- stage 6: control flow -----------------------------------------------------------------
    _m("6.1", "a type difference is not capitalized and lacks its final '.'",
       'f"differ:\\n\\n{bulleted(diffs)}\\n"', 'f"differ:\\n\\n{\'; \'.join(diffs)}\\n\\n"'),
    _m("6.1", "types are compared with their weak types",
       "if not typematch(a, b)]", "if a != b]"),
    _m("6.1", "a structure mismatch is not caught first", "if in_tree != out_tree:",
       "if False:"),
    _m("6.1", "only the shapes of the carry are compared",
       "if not typematch(a, b)]",
       "if a.shape != b.shape]"),
    _m("6.1", "the type message leaves out what does not match",
       "component has type {b.str_short()}{aval_mismatch_extra(a, b)}",
       "component has type {b.str_short()}"),
    _m("6.1", "the type message gives the output's type as the input's",
       'f"{component(path)} has type {a.str_short()} but the corresponding output carry "',
       'f"{component(path)} has type {b.str_short()} but the corresponding output carry "'),
    _m("6.1", "the structure message compares the output with the input",
       "tree_unflatten(in_tree, in_avals), tree_unflatten(out_tree, out_avals))]",
       "tree_unflatten(out_tree, out_avals), tree_unflatten(in_tree, in_avals))]"),
    _m("6.2", "concrete bounds also run a while loop",
       "if _is_concrete(lower) and _is_concrete(upper):", "if False:"),
    _m("6.2", "upper < lower gives a negative scan length",
       "length=builtins.max(upper_ - lower_, 0),", "length=upper_ - lower_,"),
    _m("6.2", "unroll with traced bounds is not refused",
       "if unroll is not None and unroll is not False and unroll != 1:", "if False:"),
    _m("6.2", "traced bounds are not converted to one dtype",
       "if upper_dtype != dtype:", "if False:"),
    _m("6.2", "unroll=False with traced bounds is refused like a real unroll",
       "if unroll is not None and unroll is not False and unroll != 1:",
       "if unroll is not None and unroll != 1:"),
    _m("6.2", "one concrete bound is enough for a scan",
       "if _is_concrete(lower) and _is_concrete(upper):",
       "if _is_concrete(lower) or _is_concrete(upper):"),
    _m("6.2", "the scan counts from the bound as given, not as a Python int",
       "(_, result), _ = scan(_fori_scan_body_fun(body_fun, dbg), (lower_, init_val), None,",
       "(_, result), _ = scan(_fori_scan_body_fun(body_fun, dbg), (lower, init_val), None,"),
    _m("6.2", "a traced lower bound is not converted to the common dtype",
       "if lower_dtype != dtype:", "if False:"),
    _m("6.2", "unroll=None is passed on to scan as it is",
       "unroll=False if unroll is None else unroll)", "unroll=unroll)"),
    _m("6.2", "unroll=0 is taken for no unrolling, so traced bounds let it through",
       "if unroll is not None and unroll is not False and unroll != 1:",
       "if unroll and unroll != 1:"),
    _m("6.3", "reverse reads xs backwards but does not reverse the ys",
       "ys = [stack[::-1] for stack in ys]", "ys = [stack for stack in ys]"),
    _m("6.3", "reverse is ignored", "i = length - 1 - step if reverse else step",
       "i = step"),
    _m("6.3", "a zero-length scan's ys lose their shape",
       "np.zeros((0, *a.shape), a.dtype)", "np.zeros((0,), a.dtype)"),
    _m("6.3", "reverse reads x[length - step], one past the last",
       "i = length - 1 - step if reverse else step",
       "i = length - step if reverse else step"),
    _m("6.3", "the body gets the carry before the consts",
       "*consts, *carry, *[x[i] for x in xs])",
       "*carry, *consts, *[x[i] for x in xs])"),
    _m("6.3", "the new carry is never passed on",
       "carry = [as_numpy(c, a) for c, a in zip(new_carry, carry_avals, strict=True)]",
       "pass"),
    _m("6.4", "a batched predicate updates every example",
       "if pred.ndim:", "if False:"),
    _m("6.4", "the loop runs only while every example's predicate holds",
       "while pred.any():", "while pred.all():"),
    _m("6.4", "the mask is broadcast against the carry's trailing axes",
       "carry = [np.where(pred.reshape(pred.shape + (1,) * (np.ndim(c) - pred.ndim)), n, c)",
       "carry = [np.where(pred, n, c)"),
    _m("6.4", "the mask gets a trailing 1 for every carry axis",
       "(1,) * (np.ndim(c) - pred.ndim)", "(1,) * np.ndim(c)"),
    _m("6.4", "the loop stops once the first example is done",
       "while pred.any():", "while pred.flat[0]:"),
    _m("6.4", "the next predicate is asked of the body's output, not the kept carry",
       "pred = predicate(carry)", "pred = predicate(new)"),
    _m("6.5", "the operands of the branches not taken are not under stop_gradient",
       "ops_i = [_bcast_select_n(predicate, stop_gradient(x), x) for x in ops]",
       "ops_i = ops"),
    _m("6.5", "the branch outputs are selected in reverse order",
       "_bcast_select_n(index, *outs)", "_bcast_select_n(index, *outs[::-1])"),
    _m("6.5", "the mask of branch i is its complement", "predicate = lax.eq(index, np.int32(i))",
       "predicate = lax.ne(index, np.int32(i))"),
    _m("6.5", "the examples that take branch i see its operands under stop_gradient",
       "ops_i = [_bcast_select_n(predicate, stop_gradient(x), x) for x in ops]",
       "ops_i = [_bcast_select_n(predicate, x, stop_gradient(x)) for x in ops]"),
    _m("6.5", "every branch's operands are masked with branch 0's predicate",
       "predicate = lax.eq(index, np.int32(i))",
       "predicate = lax.eq(index, np.int32(0))"),
    _m("6.5", "the branches' outputs are not forced batched",
       "out_batched = [True] * len(branches[0].out_avals)",
       "out_batched = [False] * len(branches[0].out_avals)"),
    _m("6.6", "the transposed scan runs in the same direction", "reverse=not reverse",
       "reverse=reverse"),
    _m("6.6", "the consts' cotangents are not summed over iterations",
       "primals, [*ct_d, *ct_c, *ct_b])", "primals, [*map(Zero, d_avals), *ct_c, *ct_b])"),
    _m("6.6", "the carry's cotangent is passed through unchanged",
       "for ct in [*ct_d, *new_ct_c, *ct_a]]", "for ct in [*ct_d, *ct_c, *ct_a]]"),
    _m("6.6", "transposed scan carries primal avals for carries",
       "c_ct_avals = [core.get_aval(ct) for ct in ct_c]",
       "c_ct_avals = [a for a in jaxpr.in_avals[num_consts:num_consts + num_carry]]"),
    _m("6.6", "the transposed scan is not unrolled as the primal one", "unroll=unroll)",
       "unroll=1)"),
    # -- stage 7: caches -----------------------------------------------------------------------
    _m("7.1", "a hit does not refresh the entry, so the oldest insert is evicted first",
       "table.entries.move_to_end(key)", "pass"),
    _m("7.1", "a thread that waits for another's flight counts a miss",
       "self._count(hit=True)  # answered by the thread computing it", "self._count(hit=False)"),
    _m("7.1", "a miss is not counted", """
       self._count(hit=False)
       table.flights[key] = _Flight()
       """, """
       table.flights[key] = _Flight()
       """),
    _m("7.1", "a hit moves the entry to the front",
       "table.entries.move_to_end(key)", "table.entries.move_to_end(key, last=False)"),
    _m("7.1", "a waiting thread is not counted",
       "self._count(hit=True)  # answered by the thread computing it", "pass"),
    _m("7.1", "a thread waits on its own flight",
       "if flight is not None and flight.owner != threading.get_ident():",
       "if flight is not None:"),
    _m("7.2", "negative static_argnums are not counted from the end",
       "static_nums = sorted({i % n for i in ji.static_argnums if -n <= i < n})",
       "static_nums = sorted({i for i in ji.static_argnums if 0 <= i < n})"),
    _m("7.2", "an array is described by its shape alone",
       "sig.append((x.shape, dtypes.canonicalize_dtype(x.dtype)))", "sig.append(x.shape)"),
    _m("7.2", "a Python scalar is described by its value, not its type",
       "sig.append(t)  # the type decides the dtype, and whether it is weak", "sig.append(x)"),
    _m("7.2", "the trace context is left out of the key",
       "key = (ji, treedef, tuple(sig), statics, config.trace_context())",
       "key = (ji, treedef, tuple(sig), statics)"),
    _m("7.2", "static keyword arguments are left out of the key",
       "api_util.static_entries(args, kwargs, static_nums, static_names)",
       "api_util.static_entries(args, kwargs, static_nums, [])"),
    _m("7.2", "an int beyond int32 runs on the fast path once its type is cached",
       "return key, None if overflow else leaves", "return key, leaves"),
    _m("7.3", "each ingredient's name is hashed instead of the ingredient",
       "hashfn(hash_obj)", "hash_obj.update(name.encode())"),
    _m("7.3", "the key is the digest alone, without the module name",
       'return f"{program.module_name}-{hash_obj.hexdigest()}"', "return hash_obj.hexdigest()"),
    _m("7.3", "a fresh hash per ingredient: only the last one counts",
       "hashfn(hash_obj)", "hash_obj = hashlib.sha256(); hashfn(hash_obj)"),
    _m("7.3", "SHA-1, not SHA-256",
       "hash_obj = hashlib.sha256()",
       "hash_obj = hashlib.sha1()"),
    _m("7.3", "the module name and digest are joined by '_'",
       'return f"{program.module_name}-{hash_obj.hexdigest()}"',
       'return f"{program.module_name}_{hash_obj.hexdigest()}"'),
    _m("7.3", "the compression algorithm is not passed on: the default is hashed",
       """
       for name, hashfn in entries(program, devices, compile_options, backend,
                                   compression_algorithm):
       """,
       """
       for name, hashfn in entries(program, devices, compile_options, backend):
       """),
    _m("7.3", "the last ingredient, the custom hook, is left out",
       "compression_algorithm):",
       "compression_algorithm)[:-1]:"),
    _m("7.4", "a compiled executable is not written back to the disk",
       "_cache_write(key, time.monotonic() - start, module_name, backend, executable)", "pass"),
    _m("7.4", "a hit is counted as a miss", "persistent_cache.record(hit=True)",
       "persistent_cache.record(hit=False)"),
    _m("7.4", "the hit's events are recorded without the cache_hits event",
       'monitoring.record_event("/jax/compilation_cache/cache_hits")', "pass"),
    _m("7.4", "compile time saved is the whole compile time",
       "compile_time - retrieval_time)", "compile_time)"),
    _m("7.4", "a miss is not recorded",
       "persistent_cache.record(hit=False)", "pass"),
    _m("7.4", "retrieval time event not recorded",
       "\"/jax/compilation_cache/cache_retrieval_time_sec\", retrieval_time)",
       "\"/jax/compilation_cache/cache_retrieval_time_sec\", compile_time)"),
    _m("7.5", "the checksum is never compared",
       "if hashlib.sha256(body).digest() != digest:", "if False:"),
    _m("7.5", "another writer's entry (no MAGIC) is accepted",
       "if len(entry) < header or entry[:len(MAGIC)] != MAGIC:", "if len(entry) < header:"),
    _m("7.5", "the checksum covers the whole entry, header included",
       "if hashlib.sha256(body).digest() != digest:",
       "if hashlib.sha256(entry).digest() != digest:"),
    _m("7.5", "the header length forgets the 8-byte field",
       "header = len(MAGIC) + 32 + 8", "header = len(MAGIC) + 32"),
    _m("7.6", "the most recently used entries are evicted first",
       "heapq.heappush(heap, (atime, key, size))", "heapq.heappush(heap, (-atime, key, size))"),
    _m("7.6", "the new entry's size is not counted",
       "while heap and total > self.max_size - additional_size:",
       "while heap and total > self.max_size:"),
    _m("7.6", "an entry without an -atime file is never evicted",
       "size, atime = (entry.stat().st_size if entry.exists() else 0), 0", "continue"),
    _m("7.6", "an exact fit still evicts",
       "while heap and total > self.max_size - additional_size:",
       "while heap and total >= self.max_size - additional_size:"),
    _m("7.6", "eviction_enabled ignored",
       "if not self.eviction_enabled:", "if False:"),
    _m("7.7", "the farthest key is reported", "closest = min(", "closest = max("),
    _m("7.7", "ties are broken by the order the keys were seen, not by the text",
       "closest = min(diff_tracing_cache_keys(key, k) for k in seen_keys)[-1]",
       "closest = min((diff_tracing_cache_keys(key, k) for k in seen_keys), "
       "key=lambda d: d[:2])[-1]"),
    _m("7.7", "only the most recently seen key is compared",
       "closest = min(diff_tracing_cache_keys(key, k) for k in seen_keys)[-1]",
       "closest = diff_tracing_cache_keys(key, list(seen_keys)[-1])[-1]"),
    _m("7.7", "the old key is diffed against the new one, so now and before are swapped",
       "diff_tracing_cache_keys(key, k)",
       "diff_tracing_cache_keys(k, key)"),
    _m("7.7", "the fewest differences win, whatever their severity",
       "closest = min(diff_tracing_cache_keys(key, k) for k in seen_keys)[-1]",
       "closest = min((diff_tracing_cache_keys(key, k) for k in seen_keys), "
       "key=lambda d: (d[1], d[0], d[2]))[-1]"),
    _m("7.7", "the explanation whose text sorts first wins",
       "closest = min(diff_tracing_cache_keys(key, k) for k in seen_keys)[-1]",
       "closest = min(diff_tracing_cache_keys(key, k)[-1] for k in seen_keys)"),
    _m("7.1", "a plain hit is not counted", """
       self._count(hit=True)
       table.entries.move_to_end(key)
       """, """
       table.entries.move_to_end(key)
       """),
    _m("7.1", "a stored None is taken for a missing entry",
       "value = table.entries.get(key, MISSING)",
       "value = table.entries.get(key, MISSING); value = MISSING if value is None else value"),
    _m("7.1", "the new flight is not registered, so others compute it too", """
       table.flights[key] = _Flight()
       return "fill", table.flights[key]
       """, """
       return "fill", _Flight()
       """),
    _m("7.2", "an out-of-range static_argnum wraps onto a real argument",
       "static_nums = sorted({i % n for i in ji.static_argnums if -n <= i < n})",
       "static_nums = sorted({i % n for i in ji.static_argnums})"),
    _m("7.2", "a numpy array keeps its 64-bit dtype in the key",
       "sig.append((x.shape, dtypes.canonicalize_dtype(x.dtype)))",
       "sig.append((x.shape, x.dtype))"),
    _m("7.2", "a jax array is keyed by shape and dtype, losing its weak type",
       "sig.append(x.aval)  # its shape, dtype and weak type (and sharding)",
       "sig.append((x.shape, x.dtype))"),
    _m("7.2", "the int32 range is closed at the top",
       "not -(2**31) <= x < 2**31)", "not -(2**31) <= x <= 2**31)"),
    _m("7.2", "the tree structure is left out of the key",
       "key = (ji, treedef, tuple(sig), statics, config.trace_context())",
       "key = (ji, tuple(sig), statics, config.trace_context())"),
    _m("7.2", "the jit options are left out of the key",
       "key = (ji, treedef, tuple(sig), statics, config.trace_context())",
       "key = (treedef, tuple(sig), statics, config.trace_context())"),
    _m("7.2", "a numpy scalar keyed by its type, as a Python scalar",
       "sig.append(((), dtypes.canonicalize_dtype(x.dtype)))", "sig.append(t)"),
    _m("7.2", "a numpy scalar keeps its 64-bit dtype in the key",
       "sig.append(((), dtypes.canonicalize_dtype(x.dtype)))", "sig.append(((), x.dtype))"),
    _m("7.2", "only the last leaf's int decides the overflow",
       "overflow = overflow or (t is int and not", "overflow = (t is int and not"),
    _m("7.3", "the ingredients' hashes are not logged",
       "_log_cache_key_hash(hash_obj, name, hashfn)", "pass"),
    _m("7.3", "each ingredient is logged before it is hashed", """
       hashfn(hash_obj)
       _log_cache_key_hash(hash_obj, name, hashfn)
       """, """
       _log_cache_key_hash(hash_obj, name, hashfn)
       hashfn(hash_obj)
       """),
    _m("7.4", "the request to use the cache is not recorded",
       'monitoring.record_event("/jax/compilation_cache/compile_requests_use_cache")', "pass"),
    _m("7.4", "a hit is not logged", "log_persistent_cache_hit(module_name, key)", "pass"),
    _m("7.4", "a miss is not logged", "log_persistent_cache_miss(module_name, key)", "pass"),
    _m("7.4", "the write is given the retrieval time as the compile time",
       "_cache_write(key, time.monotonic() - start, module_name, backend, executable)",
       "_cache_write(key, retrieval_time, module_name, backend, executable)"),
    _m("7.4", "the compile time saved is retrieval minus compile",
       "compile_time - retrieval_time)", "retrieval_time - compile_time)"),
    _m("7.5", "a mismatch raises a plain ValueError",
       'raise CorruptEntry("checksum mismatch")', 'raise ValueError("checksum mismatch")'),
    _m("7.5", "a foreign entry raises a plain ValueError",
       "raise CorruptEntry(\"not an entry of this format (truncated, or another writer's)\")",
       "raise ValueError(\"not an entry of this format (truncated, or another writer's)\")"),
    _m("7.5", "only the first four bytes of MAGIC are compared",
       "entry[:len(MAGIC)] != MAGIC:", "entry[:4] != MAGIC[:4]:"),
    _m("7.6", "the -atime file is read big-endian", '"little")', '"big")'),
    _m("7.6", "an entry never touched counts as the newest",
       "size, atime = (entry.stat().st_size if entry.exists() else 0), 0",
       "size, atime = (entry.stat().st_size if entry.exists() else 0), 2**63"),
    _m("7.6", "one entry is evicted at most",
       "while heap and total > self.max_size - additional_size:",
       "if heap and total > self.max_size - additional_size:"),
    _m("7.6", "the evicted entry's size is not taken off the total",
       "total -= size", "pass"),
    # -- stage 8: lowering ---------------------------------------------------------------------
    _m("7.6", "the eviction log line leaves out the target size",
       """
       logger.debug("Evicting cache entry %r: file size %d bytes, target cache size %d bytes",
       key, size, self.max_size - additional_size)
       """,
       'logger.debug("Evicting cache entry %r: file size %d bytes", key, size)'),
    _m("7.6", "an eviction is not logged",
       """
       logger.debug("Evicting cache entry %r: file size %d bytes, target cache size %d bytes",
       key, size, self.max_size - additional_size)
       """,
       "pass"),
    _m("8.1", "the dimensions are joined by x with none after the last",
       'dims = "".join(f"{d}x" for d in aval.shape)',
       'dims = "x".join(str(d) for d in aval.shape)'),
    _m("8.1", "the dimensions are written last to first", "for d in aval.shape)",
       "for d in aval.shape[::-1])"),
    _m("8.1", "a scalar's type keeps a lone x",
       'dims = "".join(f"{d}x" for d in aval.shape)',
       'dims = "x".join(str(d) for d in aval.shape) + "x"'),
    _m("8.1", "a zero-size dimension is left out", "for d in aval.shape)",
       "for d in aval.shape if d)"),
    _m("8.1", "numpy's dtype name instead of the IR element type",
       "{dtype_to_ir_type(aval.dtype)}", "{aval.dtype.name}"),
    _m("8.2", "one constant per literal value, reused at every use", """
       if isinstance(atom, core.Literal):
           return ir_constant(atom.val, atom.aval)  # a new constant at each use, as JAX's
       """, """
       if isinstance(atom, core.Literal):
           key = ("literal", str(atom.val), str(atom.aval))
           if key not in env:
               env[key] = ir_constant(atom.val, atom.aval)
           return env[key]
       """),
    _m("8.2", "the invars are bound before the constvars",
       "zip([*jaxpr.constvars, *jaxpr.invars], [*consts, *args], strict=True)",
       "zip([*jaxpr.invars, *jaxpr.constvars], [*consts, *args], strict=True)"),
    _m("8.2", "an outlined primitive is looked up in the rule table",
       "if eqn.primitive in _outlined:", "if False:"),
    _m("8.2", "a literal output is looked up in the environment, not made a constant",
       "return [read(x) for x in jaxpr.outvars]",
       "return [env[x] for x in jaxpr.outvars]"),
    _m("8.2", "a literal's constant takes numpy's dtype, not its aval's",
       "return ir_constant(atom.val, atom.aval)",
       "return ir_constant(atom.val)"),
    _m("8.2", "the rule context's input and output avals are swapped",
       "rule_ctx = LoweringRuleContext(ctx, eqn.primitive, [x.aval for x in eqn.invars],",
       "rule_ctx = LoweringRuleContext(ctx, eqn.primitive, [x.aval for x in eqn.outvars],"),
    _m("8.2", "only an equation's first output is bound",
       """
       for var, val in zip(eqn.outvars, outs, strict=True):
           env[var] = val
       """,
       """
       env[eqn.outvars[0]] = outs[0]
       """),
    _m("8.2", "the rule context's output avals are the inputs'",
       "[v.aval for v in eqn.outvars])", "[v.aval for v in eqn.invars])"),
    _m("8.2", "an equation's params are not passed to its rule",
       "outs = _get_rule(ctx, eqn.primitive)(rule_ctx, *in_nodes, **eqn.params)",
       "outs = _get_rule(ctx, eqn.primitive)(rule_ctx, *in_nodes)"),
    _m("8.3", "inputs and outputs are matched by size alone",
       "return a.shape, a.dtype  # weak types do not matter to a buffer",
       "return (a.size,)"),
    _m("8.3", "a donated input aliases the last waiting output, not the first",
       "i = waiting[strip(aval)].pop(0)", "i = waiting[strip(aval)].pop()"),
    _m("8.3", "a donated input left over is not offered to XLA",
       "if unused[i] and aval.size in free_sizes:", "if False:"),
    _m("8.3", "an output matched by shape alone, dtype ignored",
       "return a.shape, a.dtype  # weak types do not matter to a buffer", "return a.shape"),
    _m("8.3", "a free output size can serve several leftover donors",
       "free_sizes.remove(aval.size)", "pass"),
    _m("8.3", "an aliased input is still reported unused",
       "aliases[i], unused[i] = j, False", "aliases[i] = j"),
    _m("8.3", "an input handed to XLA as a donor is still reported unused",
       "unused[i], donors[i] = False, True", "donors[i] = True"),
    _m("8.3", "an aliased output is still free for a leftover donor",
       "free_sizes = [a.size for j, a in enumerate(avals_out) if j not in aliases]",
       "free_sizes = [a.size for a in avals_out]"),
    _m("8.3", "a leftover donor needs an output of as many bytes, not elements",
       """
       free_sizes = [a.size for j, a in enumerate(avals_out) if j not in aliases]
       donors = [False] * len(avals_in)
       for i, aval in enumerate(avals_in):
           if unused[i] and aval.size in free_sizes:
               free_sizes.remove(aval.size)
       """,
       """
       free_sizes = [a.size * a.dtype.itemsize for j, a in enumerate(avals_out)
                     if j not in aliases]
       donors = [False] * len(avals_in)
       for i, aval in enumerate(avals_in):
           if unused[i] and aval.size * aval.dtype.itemsize in free_sizes:
               free_sizes.remove(aval.size * aval.dtype.itemsize)
       """),
    _m("8.3", "a weak-typed input does not match a strong output",
       "return a.shape, a.dtype  # weak types do not matter to a buffer",
       "return a.shape, a.dtype, a.weak_type"),
    _m("8.3", "an input that aliases an output is also offered as a donor",
       "if unused[i] and aval.size in free_sizes:", "if donated[i] and aval.size in free_sizes:"),
    _m("8.4", "a counter per name instead of the shared conflict counter", """
       unique = name
       while taken(unique):
           unique = f"{name}_{counters[2]}"
           counters[2] += 1
       """, """
       unique, k = name, 0
       while taken(unique):
           unique = f"{name}_{k}"
           k += 1
       """),
    _m("8.4", "only the innermost scope is checked",
       "return any(candidate in scope for scope in scopes)", "return candidate in scopes[-1]"),
    _m("8.4", "the chosen name is recorded in the outermost scope", "scopes[-1].add(unique)",
       "scopes[0].add(unique)"),
    _m("8.4", "the conflict counter is advanced before it is used (cst_1 first)",
       """
       unique = f"{name}_{counters[2]}"
       counters[2] += 1
       """,
       """
       counters[2] += 1
       unique = f"{name}_{counters[2]}"
       """),
    _m("8.4", "the suffix has no underscore",
       'unique = f"{name}_{counters[2]}"',
       'unique = f"{name}{counters[2]}"'),
    _m("8.4", "the chosen name is not recorded",
       "scopes[-1].add(unique)",
       "pass"),
    _m("8.4", "the conflict counter advances at every name, taken or not",
       """
       while taken(unique):
           unique = f"{name}_{counters[2]}"
           counters[2] += 1
       """,
       """
       while taken(unique):
           unique = f"{name}_{counters[2]}"
       counters[2] += 1
       """),
    _m("8.4", "a renamed name is tried once, not until one is free",
       "while taken(unique):", "if taken(unique):"),
    _m("8.5", "a conversion to bool is a plain convert",
       "if aval_out.dtype == np.dtype(bool):", "if False:"),
    _m("8.5", "the zero compared with has the output's dtype",
       "full_like_aval(0, aval_in)", "full_like_aval(0, aval_out)"),
    _m("8.5", "the comparison type is the output's (bool)", '"NE", aval_in.dtype)',
       '"NE", aval_out.dtype)'),
    _m("8.5", "the comparison is EQ", '"NE"', '"EQ"'),
    _m("8.5", "the comparison's bool is returned without the final convert",
       "return hlo.convert(x, aval_to_ir_type(aval_out))",
       "return x if aval_out.dtype == np.dtype(bool) else "
       "hlo.convert(x, aval_to_ir_type(aval_out))"),
    _m("8.5", "only a float input is compared with zero (an int is converted plainly)",
       "if aval_out.dtype == np.dtype(bool):",
       "if aval_out.dtype == np.dtype(bool) and np.issubdtype(aval_in.dtype, np.floating):"),
    _m("8.5", "a bool input is compared with zero too, and an int input converted plainly",
       "if aval_out.dtype == np.dtype(bool):", "if aval_in.dtype == np.dtype(bool):"),
    _m("8.6", "the branches are lowered in reverse (true first)",
       "zip(case_op.regions, branches, strict=True)",
       "zip(case_op.regions, branches[::-1], strict=True)"),
    _m("8.6", "the branch's constants are left out",
       "consts = mlir.ir_consts(branch.consts, [v.aval for v in branch.jaxpr.constvars])",
       "consts = []"),
    _m("8.6", "always two regions, as for cond's false and true",
       "hlo.case(index, len(branches),", "hlo.case(index, 2,"),
    _m("8.6", "a branch's outputs are returned in reverse", "hlo.return_(outs)",
       "hlo.return_(outs[::-1])"),
    _m("8.6", "the case's result types are the operands'",
       "[aval_to_ir_type(a) for a in ctx.avals_out])",
       "[aval_to_ir_type(a) for a in ctx.avals_in[1:]])"),
    _m("8.7", "reverse is ignored", "if reverse:  # i = num_trips - i_ - 1", "if False:"),
    _m("8.7", "the loop runs while i <= num_trips", '"LT", np.int32', '"LE", np.int32'),
    _m("8.7", "the ys are written at the unreversed index",
       "*a.shape)), y, i)", "*a.shape)), y, i_b)"),
    _m("8.7", "the loop stops one trip early",
       "trips = mlir.ir_constant(np.array(num_trips, np.int32))",
       "trips = mlir.ir_constant(np.array(num_trips - 1, np.int32))"),
    _m("8.7", "the counter is advanced from the reversed index",
       'i_next = hlo.elementwise("add", i_b,',
       'i_next = hlo.elementwise("add", i,'),
    _m("8.7", "the xs are read at the unreversed index",
       "x = [_dynamic_index_in_dim(ctx, v, a, i) for v, a in zip(xss_b, xss_avals,",
       "x = [_dynamic_index_in_dim(ctx, v, a, i_b) for v, a in zip(xss_b, xss_avals,"),
    _m("8.7", "the reversed index is num_trips - i, without the - 1",
       """
       i = hlo.elementwise("subtract", i, mlir.ir_constant(np.array(1, np.int32)))
       """,
       ""),
    _m("8.7", "the trip count is compared unsigned",
       '"LT", np.int32', '"LT", np.uint32'),
    _m("8.7", "the reversed index subtracts num_trips from i",
       """
       i = hlo.elementwise("subtract", mlir.ir_constant(np.array(num_trips, np.int32)),
                           i_b)
       """,
       """
       i = hlo.elementwise("subtract", i_b,
                           mlir.ir_constant(np.array(num_trips, np.int32)))
       """),
    _m("8.7", "the carry is passed on unchanged",
       "hlo.return_([*xss_b, *consts_b, i_next, *new_carry, *new_yss])",
       "hlo.return_([*xss_b, *consts_b, i_next, *carry_b, *new_yss])"),
    # -- stage 9: PJRT -------------------------------------------------------------------------
    _m("9.1", "the rounded units are taken off, not the whole ones",
       "value -= math.floor(part) * scale", "value -= round(part) * scale"),
    _m("9.1", "parts are not zero-padded", 'out.append(f"{part:0{width}.{digits}f}{suffix}")',
       'out.append(f"{part:.{digits}f}{suffix}")'),
    _m("9.1", "a zero part between two printed ones is left out",
       "if part >= 1.0 or count > 0 or i + 1 == len(_TIME_PARTS):",
       "if part >= 1.0 or i + 1 == len(_TIME_PARTS):"),
    _m("9.1", "a part of exactly one unit is skipped (> 1.0)",
       "if part >= 1.0 or count > 0 or i + 1 == len(_TIME_PARTS):",
       "if part > 1.0 or count > 0 or i + 1 == len(_TIME_PARTS):"),
    _m("9.1", "the last part is not printed when it is below one unit",
       "if part >= 1.0 or count > 0 or i + 1 == len(_TIME_PARTS):",
       "if part >= 1.0 or count > 0:"),
    _m("9.1", "the whole part is taken off, fraction included",
       "value -= math.floor(part) * scale",
       "value -= part * scale"),
    _m("9.1", "parts are padded with spaces, not zeros",
       'out.append(f"{part:0{width}.{digits}f}{suffix}")',
       'out.append(f"{part:{width}.{digits}f}{suffix}")'),
    _m("9.1", "each part is the whole units only, its fraction dropped before printing",
       "part = value / scale", "part = value // scale"),
    _m("9.1", "a part is printed with its width but no decimals",
       'out.append(f"{part:0{width}.{digits}f}{suffix}")',
       'out.append(f"{part:0{width}.0f}{suffix}")'),
    _m("9.2", "a $TPU_LIBRARY_PATH that is no file is taken anyway",
       "if env and os.path.isfile(env):", "if env:"),
    _m("9.2", "the libtpu package's path is taken without checking the file",
       "if os.path.isfile(path):", "if path:"),
    _m("9.2", "an unset $TPU_LIBRARY_PATH is not noted",
       'else "$TPU_LIBRARY_PATH (not set)")', 'else "")'),
    _m("9.2", "the libtpu package's note leaves out its path",
       'searched.append(f"the libtpu package: {path} (no such file)")',
       'searched.append("the libtpu package (no such file)")'),
    _m("9.2", "the $TPU_LIBRARY_PATH note leaves out the variable's name",
       'searched.append(f"$TPU_LIBRARY_PATH={env} (no such file)" if env',
       'searched.append(f"{env} (no such file)" if env'),
    _m("9.2", "nothing found gives None, not the loader's libtpu.so",
       'return "libtpu.so", searched',
       "return None, searched"),
    _m("9.2", "the libtpu package is tried before $TPU_LIBRARY_PATH",
       """
       env = os.environ.get("TPU_LIBRARY_PATH")
       if env and os.path.isfile(env):
           return env, searched
       searched.append(f"$TPU_LIBRARY_PATH={env} (no such file)" if env
                       else "$TPU_LIBRARY_PATH (not set)")
       try:
           libtpu = importlib.import_module("libtpu")
       except ImportError:
           searched.append("the libtpu package (not installed)")
       else:
           path = libtpu.get_library_path()
           if os.path.isfile(path):
               return path, searched
           searched.append(f"the libtpu package: {path} (no such file)")
       """,
       """
       try:
           libtpu = importlib.import_module("libtpu")
       except ImportError:
           searched.append("the libtpu package (not installed)")
       else:
           path = libtpu.get_library_path()
           if os.path.isfile(path):
               return path, searched
           searched.append(f"the libtpu package: {path} (no such file)")
       env = os.environ.get("TPU_LIBRARY_PATH")
       if env and os.path.isfile(env):
           return env, searched
       searched.append(f"$TPU_LIBRARY_PATH={env} (no such file)" if env
                       else "$TPU_LIBRARY_PATH (not set)")
       """),
    _m("9.2", "a $TPU_LIBRARY_PATH that names a folder is taken",
       "if env and os.path.isfile(env):",
       "if env and os.path.exists(env):"),
    _m("9.2", "an empty TPU_LIBRARY_PATH is taken for a file that is missing",
       'searched.append(f"$TPU_LIBRARY_PATH={env} (no such file)" if env',
       'searched.append(f"$TPU_LIBRARY_PATH={env} (no such file)" if env is not None'),
    _m("9.3", "plugins are consulted only for names the built-in branches do not know",
       'if env_bool("PJRT_DYNAMIC_PLUGINS", False) and device_type != "CPU":',
       'if env_bool("PJRT_DYNAMIC_PLUGINS", False) and device_type not in DEVICE_TYPES:'),
    _m("9.3", "CPU_NUM_DEVICES is ignored", 'int(os.environ.get("CPU_NUM_DEVICES", "1"))',
       "1"),
    _m("9.3", "TPU_LEGACY falls through to the unknown name", """
       if device_type == "TPU_LEGACY":
           raise ValueError("TPU_LEGACY client is no longer available.")
       """, ""),
    _m("9.3", "the CPU client is synchronous by default",
       "asynchronous = env_bool(\"PJRT_CPU_ASYNC_CLIENT\", True)",
       "asynchronous = env_bool(\"PJRT_CPU_ASYNC_CLIENT\", False)"),
    _m("9.3", "plugin options not passed",
       "options=plugin.client_create_options())", "options=None)"),
    _m("9.3", "the CUDA plugin is created without its options",
       'return _c_api_client("CUDA", find_cuda_plugin(), options=pjrt.gpu_plugin_options())',
       'return _c_api_client("CUDA", find_cuda_plugin())'),
    _m("9.3", "$XPU_LIBRARY_PATH is ignored",
       'os.environ.get("XPU_LIBRARY_PATH", "libxpu.so")', '"libxpu.so"'),
    _m("9.3", "$NEURON_LIBRARY_PATH is ignored",
       'os.environ.get("NEURON_LIBRARY_PATH", "libneuronpjrt.so")', '"libneuronpjrt.so"'),
    _m("9.3", "a plugin that needs a coordinator is created anyway", """
       if plugin.requires_xla_coordinator():
           raise NotImplementedError(f"the {device_type} plugin needs a distributed "
                                     "coordinator; this course runs one process")
       """, ""),
    _m("9.3", "the unknown-name error does not list the registered plugins",
       "f\"registered plugin: {', '.join(registered_plugins())})\")",
       "\"registered plugin)\")"),
    _m("9.3", "PJRT_DYNAMIC_PLUGINS is on by default",
       'if env_bool("PJRT_DYNAMIC_PLUGINS", False) and device_type != "CPU":',
       'if env_bool("PJRT_DYNAMIC_PLUGINS", True) and device_type != "CPU":'),
    _m("9.3", "CPU goes through the plugins too",
       'if env_bool("PJRT_DYNAMIC_PLUGINS", False) and device_type != "CPU":',
       'if env_bool("PJRT_DYNAMIC_PLUGINS", False) and device_type in _plugins:'),
    _m("9.3", "PJRT_DYNAMIC_PLUGINS=0 counts as on: read as a string, not a bool",
       'if env_bool("PJRT_DYNAMIC_PLUGINS", False) and device_type != "CPU":',
       'if os.environ.get("PJRT_DYNAMIC_PLUGINS") and device_type != "CPU":'),
    _m("9.3", "the coordinator message quotes the device type",
       'f"the {device_type} plugin needs', 'f"the {device_type!r} plugin needs'),
    _m("9.4", "the outbound data counts elements, not bytes", "total_bytes += x.nbytes",
       "total_bytes += x.size"),
    _m("9.4", "one handle counted per call", "CreateDataHandles.add_value(len(out))",
       "CreateDataHandles.add_value(1)"),
    _m("9.4", "every array goes to the first device",
       "dev = self.pjrt_device(device)", "dev = self.pjrt_device(devices[0])"),
    _m("9.4", "the outbound data is the last array's bytes only",
       "total_bytes += x.nbytes",
       "total_bytes = x.nbytes"),
    _m("9.4", "one OutboundData sample per array, not per transfer",
       """
       total_bytes += x.nbytes
       """,
       """
       total_bytes += x.nbytes
       OutboundData.add_sample(x.nbytes)
       """),
    _m("9.4", "the data handle holds the jaxlib device, not the device string",
       "out.append(PjRtData(device, buffer))",
       "out.append(PjRtData(dev, buffer))"),
    _m("9.4", "the transfer is timed as TransferFromDeviceTime",
       "with metrics.timed(TransferToDeviceTime):",
       "with metrics.timed(TransferFromDeviceTime):"),
    _m("9.4", "the transfer's data handle holds the first device",
       "out.append(PjRtData(device, buffer))", "out.append(PjRtData(devices[0], buffer))"),
    _m("9.4", "a 0-d host value is sent as a 1-element vector",
       "x = np.asarray(x)", "x = np.atleast_1d(np.asarray(x))"),
    _m("9.5", "the assignment holds the devices' positions, not their ids",
       "ids = [self.pjrt_device(d).id for d in instance.devices]",
       "ids = list(range(len(instance.devices)))"),
    _m("9.5", "the sharded arm does not turn SPMD partitioning on",
       "options.executable_build_options.use_spmd_partitioning = True", "pass"),
    _m("9.5", "the replica arm's assignment is laid out 1 x n",
       "assignment = np.array(ids).reshape(n, 1)", "assignment = np.array(ids).reshape(1, n)"),
    _m("9.5", "the sharded arm counts replicas, not partitions",
       "options.num_partitions, options.num_replicas = n, 1",
       "options.num_partitions, options.num_replicas = 1, n"),
    _m("9.5", "the device assignment is not set (XLA's default devices)",
       "options.device_assignment = xc.DeviceAssignment.create(assignment)",
       "pass"),
    _m("9.5", "SPMD partitioning is turned on before the arms, for both",
       """
       options = xc.CompileOptions()
       if instance.is_sharded:  # one program partitioned over the devices (SPMD)
           options.executable_build_options.use_spmd_partitioning = True
       """,
       """
       options = xc.CompileOptions()
       options.executable_build_options.use_spmd_partitioning = True
       if instance.is_sharded:  # one program partitioned over the devices (SPMD)
       """),
    _m("9.5", "n is the client's device count, not the instance's",
       "n = len(ids)",
       "n = len(self.client.devices())"),
    _m("9.5", "the device ids are sorted",
       "ids = [self.pjrt_device(d).id for d in instance.devices]",
       "ids = sorted(self.pjrt_device(d).id for d in instance.devices)"),
    _m("9.6", "an argument on another device is not refused", "if arg.device != device:",
       "if False:"),
    _m("9.6", "an eager op is timed as ExecuteTime",
       "(EagerOpExecuteTime if options.eager_mode else ExecuteTime).add_elapsed(start)",
       "ExecuteTime.add_elapsed(start)"),
    _m("9.6", "the output handles are not counted",
       "CreateDataHandles.add_value(len(outputs))", "pass"),
    _m("9.6", "the refused argument is counted from 1",
       'raise ValueError(f"argument {i} is on {arg.device}, the computation runs on "',
       'raise ValueError(f"argument {i + 1} is on {arg.device}, the computation runs on "'),
    _m("9.6", "the timers are swapped",
       "(EagerOpExecuteTime if options.eager_mode else ExecuteTime).add_elapsed(start)",
       "(ExecuteTime if options.eager_mode else EagerOpExecuteTime).add_elapsed(start)"),
    _m("9.6", "an execution is counted as one handle",
       "CreateDataHandles.add_value(len(outputs))", "CreateDataHandles.add_value(1)"),
    _m("9.7", "a deleted array is not refused", """
       self._check_if_deleted()
       if self._npy_value is None:
       """, """
       if self._npy_value is None:
       """),
    _m("9.7", "the values are fetched at every read", "if self._npy_value is None:",
       "if True:"),
    _m("9.7", "the fetched list is kept whole, not unpacked",
       "(self._npy_value,) = self._client", "self._npy_value = self._client"),
    _m("9.7", "the deletion check comes after the fetch", """
       self._check_if_deleted()
       if self._npy_value is None:
           (self._npy_value,) = self._client.transfer_from_device([self._data])
           self._npy_value.flags.writeable = False  # np.asarray(x)[0] = 5 must not change x
       """, """
       if self._npy_value is None:
           (self._npy_value,) = self._client.transfer_from_device([self._data])
           self._npy_value.flags.writeable = False
       self._check_if_deleted()
       """),
    _m("9.7", "the deletion check guards only the fetch, not a kept value", """
       self._check_if_deleted()
       if self._npy_value is None:
       """, """
       if self._npy_value is None:
           self._check_if_deleted()
       """),
    _m("9.7", "the kept values stay writable", "self._npy_value.flags.writeable = False",
       "pass"),
    _m("9.7", "a fresh copy is handed out at every read",
       "return self._npy_value", "return self._npy_value.copy()"),
    # -- stage 10: lazy tensors ----------------------------------------------------------------
    _m("10.1", "the shifts of a are swapped", "(a << 6) + (a >> 2)", "(a >> 6) + (a << 2)"),
    _m("10.1", "the golden-ratio constant is left out", "_KB + _GOLDEN +", "_KB +"),
    _m("10.1", "kb is taken as its low 64 bits only", "b * _KB", "b * (_KB & (2**64 - 1))"),
    _m("10.1", "the golden ratio is boost's 32-bit constant",
       "_KB + _GOLDEN +",
       "_KB + 0x9E3779B9 +"),
    _m("10.1", "the shifts are of b, not a",
       "(a << 6) + (a >> 2)",
       "(b << 6) + (b >> 2)"),
    _m("10.1", "a and b play each other's part",
       "return (a ^ ((b * _KB + _GOLDEN + (a << 6) + (a >> 2)) & MASK)) & MASK",
       "return (b ^ ((a * _KB + _GOLDEN + (b << 6) + (b >> 2)) & MASK)) & MASK"),
    _m("10.1", "the result wraps at 64 bits, as size_t",
       "& MASK)) & MASK",
       "& MASK)) & (2**64 - 1)"),
    _m("10.2", "the operands are folded last to first", "for operand in self.operands:",
       "for operand in reversed(self.operands):"),
    _m("10.2", "an operand is hashed by its node, without its output index",
       "else operand.hash())", "else operand.node.hash())"),
    _m("10.2", "the fold starts from the op's seed, not the node hash", "h = node_hash",
       "h = DEFAULT_HASH_SEED"),
    _m("10.2", "a missing operand is skipped instead of folding kNullOpt",
       "h = hash_combine(h, NULL_OPT if operand is None else operand.hash())",
       "h = h if operand is None else hash_combine(h, operand.hash())"),
    _m("10.2", "the running hash and the operand's are combined the other way round",
       "h = hash_combine(h, NULL_OPT if operand is None else operand.hash())",
       "h = hash_combine(NULL_OPT if operand is None else operand.hash(), h)"),
    _m("10.2", "each operand is combined with the node hash, not the running one",
       "h = hash_combine(h, NULL_OPT if operand is None else operand.hash())",
       "h = hash_combine(node_hash, NULL_OPT if operand is None else operand.hash())"),
    _m("10.3", "a default scalar (alpha=1) becomes an operand",
       "if kind == \"scalar\" and (value is None or value == default):",
       "if kind == \"scalar\" and value is None:"),
    _m("10.3", "a list of tensors is folded in reverse",
       "operands.extend(_operand(v, args) for v in value)",
       "operands.extend(_operand(v, args) for v in reversed(value))"),
    _m("10.3", "a list of tensors is laid out as one operand",
       "layout.append((name, len(value)))", "layout.append((name, -1))"),
    _m("10.3", "keyword arguments are ignored", "kwargs.get(name, default)", "default"),
    _m("10.3", "every number is a parameter",
       "if kind == \"scalar\" and (value is None or value == default):",
       "if kind == \"scalar\":"),
    _m("10.3", "an absent optional tensor (None) is left out of the operands",
       "operands.append(_operand(value, args))",
       "operands.extend([] if value is None else [_operand(value, args)])"),
    _m("10.3", "a default scalar is recognised by identity",
       'if kind == "scalar" and (value is None or value == default):',
       'if kind == "scalar" and (value is None or value is default):'),
    _m("10.3", "a scalar operand is not laid out",
       'elif kind == "tensor" or kind == "scalar":',
       'elif kind == "scalar":\n            operands.append(_operand(value, args))\n'
       '        elif kind == "tensor":'),
    _m("10.4", "the operands are pushed last first, so the first operand is visited first",
       "stack.extend(v.node for v in node.operands",
       "stack.extend(v.node for v in reversed(node.operands)"),
    _m("10.4", "a node is emitted when first met, before its operands (a pre-order)", """
       emitted[id(node)] = False
       stack.extend(v.node for v in node.operands
                    if v is not None and id(v.node) not in emitted)
       """, """
       emitted[id(node)] = True
       post_order.append(node)
       stack.extend(v.node for v in node.operands
                    if v is not None and id(v.node) not in emitted)
       """),
    _m("10.4", "a missing (None) operand is not skipped",
       "if v is not None and id(v.node) not in emitted)", "if id(v.node) not in emitted)"),
    _m("10.4", "the roots are walked last first", "for root in roots:",
       "for root in reversed(list(roots)):"),
    _m("10.4", "a node met again after it was emitted is emitted again",
       "if state is False:", "if True:"),
    _m("10.5", "the force flag is not hashed, so a read and a sync of the same IR collide",
       "coll.hash = mhash(config.force_ltc_data)", "coll.hash = mhash(True)"),
    _m("10.5", "the compilation environment is folded before the force flag", """
       coll.hash = mhash(config.force_ltc_data)  # a sync and a read of the same IR differ
       coll.ingredients.append(("force_ltc_data", coll.hash))
       coll.merge("compilation environment and revisions", hash_compilation_env(),
                  string_hash(torch.version.git_version), string_hash(COURSE_GITREV))
       """, """
       coll.merge("compilation environment and revisions", hash_compilation_env(),
                  string_hash(torch.version.git_version), string_hash(COURSE_GITREV))
       coll.hash = merge_hash(coll.hash, mhash(config.force_ltc_data))
       coll.ingredients.append(("force_ltc_data", coll.hash))
       """),
    _m("10.5", "the synced tensors are not recorded, so nothing is computed",
       "coll.indices.append(i)", "pass"),
    _m("10.5", "a tensor listed twice is collected twice",
       "seen.add(t.unique_id)", "pass"),
    _m("10.5", "a DeviceData tensor is collected for computing",
       """
       t.set_data_handle(node.data)
       continue
       """,
       """
       t.set_data_handle(node.data)
       """),
    _m("10.5", "a DeviceData tensor is skipped without taking its buffer",
       "t.set_data_handle(node.data)", "pass"),
    _m("10.5", "the course revision is left out of the hash",
       "string_hash(torch.version.git_version), string_hash(COURSE_GITREV))",
       "string_hash(torch.version.git_version))"),
    _m("10.5", "a tensor's IR is hashed by its node, without its output index",
       'coll.merge(f"tensor {i} IR", t.ir_value.hash())',
       'coll.merge(f"tensor {i} IR", t.ir_value.node.hash())'),
    _m("10.5", "a tensor that holds a buffer is collected as well",
       "if t.unique_id in seen or t.handle is not None or t.ir_value is None:",
       "if t.unique_id in seen or t.ir_value is None:"),
    _m("10.6", "a read donates too", "if not (coll.config.sync_ltc_data and "
       "coll.config.force_ltc_data):", "if not coll.config.sync_ltc_data:"),
    _m("10.6", "a buffer another live tensor still holds is donated",
       "if k is None or getattr(data, \"read_only\", False) or holders[id(data)] > 0:",
       "if k is None or getattr(data, \"read_only\", False):"),
    _m("10.6", "a parameter is donated to the output at its own position",
       "donors[p] = k", "donors[p] = p"),
    _m("10.6", "XLA_ENABLE_PARAM_ALIASING=0 is ignored: buffers are still donated",
       'if os.environ.get("XLA_ENABLE_PARAM_ALIASING", "1") == "0":', "if False:"),
    _m("10.6", "a buffer is donated whatever the output's shape and dtype",
       "if tensors[coll.indices[k]].aval == data.aval:", "if True:"),
    _m("10.6", "the output's aval is read at position k of the tensors, not of the indices",
       "if tensors[coll.indices[k]].aval == data.aval:", "if tensors[k].aval == data.aval:"),
    _m("10.6", "output positions count every tensor, not the collected ones",
       "output_of = {tensors[i].unique_id: k for k, i in enumerate(coll.indices)}",
       "output_of = {t.unique_id: k for k, t in enumerate(tensors)}"),
    _m("10.6", "a read-only buffer is donated",
       'if k is None or getattr(data, "read_only", False) or holders[id(data)] > 0:',
       "if k is None or holders[id(data)] > 0:"),
    _m("10.6", "a buffer held by one other tensor is still donated",
       "holders[id(data)] > 0:", "holders[id(data)] > 1:"),
    # -- stage 11: SPMD ------------------------------------------------------------------------
    _m("10.6", "a sync that does not sync the tensors' data donates too",
       "if not (coll.config.sync_ltc_data and coll.config.force_ltc_data):",
       "if not coll.config.force_ltc_data:"),
    _m("11.1", "the replicated mesh axes go first, not last",
       "perm += replicated", "perm = replicated + perm"),
    _m("11.1", "size-1 mesh axes are kept",
       "names = [n for n in mesh.axis_names if sizes[n] != 1]  # size-1 axes split nothing",
       "names = list(mesh.axis_names)"),
    _m("11.1", "the permutation follows the mesh's order, not the spec's",
       "perm = [names.index(a) for a in used]", "perm = sorted(names.index(a) for a in used)"),
    _m("11.1", "the last tile dimension is always marked replicated",
       "replicate_on_last_tile_dim=bool(replicated))",
       "replicate_on_last_tile_dim=True)"),
    _m("11.1", "the replica dimension counts the unused axes, not their devices",
       "tile_dims.append(math.prod(sizes[names[i]] for i in replicated))",
       "tile_dims.append(len(replicated))"),
    _m("11.1", "a spec that uses no axis is not special-cased as replicated",
       """
       if not used:
           return HloSharding.replicate()
       """,
       ""),
    _m("11.1", "a dimension split over several axes takes the first axis's size only",
       "tile_dims = [math.prod(sizes[a] for a in self.spec.axes_of(d) if sizes[a] != 1)",
       "tile_dims = [max([sizes[a] for a in self.spec.axes_of(d) if sizes[a] != 1][:1], "
       "default=1)"),
    _m("11.2", "an uneven split is rounded down instead of refused",
       "if size % p:", "if False:"),
    _m("11.2", "every dimension is divided by the number of devices",
       "out.append(size // p)", "out.append(size // self.mesh.size if p > 1 else size)"),
    _m("11.2", "a plain ValueError, not JAX's IndivisibleError",
       "raise IndivisibleError(", "raise ValueError("),
    _m("11.2", "the array axis is counted from 1", "parts, strict=True)):",
       "parts, strict=True), 1):"),
    _m("11.2", "the tiling factors are printed as a tuple", "{parts} should",
       "{tuple(parts)} should"),
    _m("11.3", "the partition count is left at 1",
       'module.attributes["mhlo.num_partitions"] = f"{num_partitions} : i32"', "pass"),
    _m("11.3", "an unspecified sharding is written as replicated",
       "if sharding is not None:", "if True:"),
    _m("11.3", "a fully replicated sharding is left out", "if sharding is not None:",
       "if sharding is not None and not sharding.is_fully_replicated:"),
    _m("11.3", "the partition count is typed i64", ' : i32"', ' : i64"'),
    _m("11.4", "the body is traced on the global shapes",
       "block_avals = [split_aval(mesh, s, a) for s, a in zip(flat_in, avals, strict=True)]",
       "block_avals = list(avals)"),
    _m("11.4", "the mesh axes are not bound while tracing", """
       with extend_axis_env_nd(mesh.shape.items()):  # the mesh axes are named axes inside
           jaxpr, out_avals, consts = s02_pe.trace_to_jaxpr_dynamic(flat_f, block_avals)
       """, """
       jaxpr, out_avals, consts = s02_pe.trace_to_jaxpr_dynamic(flat_f, block_avals)
       """),
    _m("11.4", "the blocks' types leave out the axes they vary along",
       "block_avals = [split_aval(mesh, s, a) for s, a in zip(flat_in, avals, strict=True)]",
       "block_avals = [split_aval(mesh, s, a).update(vma=frozenset()) "
       "for s, a in zip(flat_in, avals, strict=True)]"),
    _m("11.4", "every mesh axis is bound with the whole mesh's size",
       "with extend_axis_env_nd(mesh.shape.items()):",
       "with extend_axis_env_nd((n, mesh.size) for n in mesh.axis_names):"),
    _m("11.4", "only the axes the in_specs use are bound",
       "with extend_axis_env_nd(mesh.shape.items()):",
       "with extend_axis_env_nd((n, k) for n, k in mesh.shape.items() "
       "if any(n in s.used_axes() for s in flat_in)):"),
    _m("11.5", "a psum is not seen to make its result the same across devices",
       "if rule is not None:", "if False:"),
    _m("11.5", "only the first input's axes are carried to the outputs",
       "union = frozenset().union(*ins)", "union = ins[0] if ins else frozenset()"),
    _m("11.5", "a constvar is looked up as if it were an input",
       "return env.get(x, frozenset()) if isinstance(x, core.Var) else frozenset()",
       "return env[x] if isinstance(x, core.Var) else frozenset()"),
    _m("11.5", "an equation's outputs vary along the axes all its inputs share (intersection)",
       "union = frozenset().union(*ins)",
       "union = frozenset.intersection(*ins) if ins else frozenset()"),
    _m("11.5", "only an equation's first output is recorded",
       "env.update(zip(eqn.outvars, outs, strict=True))",
       "env[eqn.outvars[0]] = outs[0]"),
    _m("11.5", "the inputs start with no varying axes",
       "env: dict[Any, frozenset[str]] = dict(zip(jaxpr.invars, in_vmas, strict=True))",
       "env: dict[Any, frozenset[str]] = {}"),
    _m("11.5", "an equation with a rule also takes the union of its inputs",
       """
       if rule is not None:
           outs = rule(ins, **eqn.params)
       else:  # any input that differs between devices makes every output differ
           union = frozenset().union(*ins)
           outs = [union] * len(eqn.outvars)
       """,
       """
       union = frozenset().union(*ins)
       outs = [union] * len(eqn.outvars)
       if rule is not None:
           outs = [o | union for o in rule(ins, **eqn.params)]
       """),
    _m("11.6", "the groups run along the other axes",
       "moved = ids.transpose(others + along)", "moved = ids.transpose(along + others)"),
    _m("11.6", "the axes of a group run in the mesh's order, not the order asked",
       "along = [mesh.axis_names.index(n) for n in axes]",
       "along = [i for i, n in enumerate(mesh.axis_names) if n in axes]"),
    _m("11.6", "a group over several axes takes the first axis's size",
       "int(np.prod([mesh.axis_sizes[i] for i in along]))", "mesh.axis_sizes[along[0]]"),
    _m("11.6", "the ids are reshaped group size first",
       "moved.reshape(-1, int(np.prod([mesh.axis_sizes[i] for i in along]))).tolist()",
       "moved.reshape(int(np.prod([mesh.axis_sizes[i] for i in along])), -1).tolist()"),
    _m("11.6", "the logical ids are laid out column-major",
       "reshape(mesh.axis_sizes)", 'reshape(mesh.axis_sizes, order="F")'),
    _m("11.6", "the groups hold the devices' ids, not their positions in the mesh",
       "ids = np.arange(mesh.size).reshape(mesh.axis_sizes)",
       "ids = np.vectorize(lambda d: d.id)(mesh.devices)"),
    _m("11.7", "the device list is left out of the hash",
       "h = hash_block(devices, h)", "h = h"),
    _m("11.7", "the tile dimensions are left out of the hash",
       "h = hash_combine(h, d)", "h = h"),
    _m("11.7", "the sharding type is left out of the hash",
       "h = hash_combine(h, int(self.type))", "h = h"),
    _m("11.7", "the device ids are hashed as int32s, not the proto's int64s",
       "dtype=np.int64).tobytes()", "dtype=np.int32).tobytes()"),
    _m("11.1", "the unused mesh axes are folded in reverse",
       "replicated = [names.index(n) for n in names if n not in used]",
       "replicated = [names.index(n) for n in names if n not in used][::-1]"),
    _m("11.1", "a spec using only size-1 axes is not replicated",
       "if not used:", "if not self.spec.used_axes():"),
    _m("11.1", "the iota's reshape keeps the size-1 mesh axes",
       "tuple(sizes[n] for n in names),", "tuple(sizes[n] for n in mesh.axis_names),"),
    _m("11.7", "the final empty field is not folded", "return hash_combine(h, 0)", "return h"),
    _m("11.7", "replicate_on_last_tile_dim is left out of the hash",
       "h = hash_combine(h, int(self.replicate_on_last_tile_dim))", "h = h"),
    _m("11.7", "the tile dimensions are folded last to first",
       "for d in self.tile_assignment_dimensions:",
       "for d in reversed(self.tile_assignment_dimensions):"),
    _m("11.7", "the type is folded before the devices", """
       h = hash_block(devices, h)
       h = hash_combine(h, int(self.type))
       """, """
       h = hash_combine(h, int(self.type))
       h = hash_block(devices, h)
       """),
    _m("11.3", "the partition count is written without its type",
       'module.attributes["mhlo.num_partitions"] = f"{num_partitions} : i32"',
       'module.attributes["mhlo.num_partitions"] = f"{num_partitions}"'),
    # -- stage 12: the system ------------------------------------------------------------------
    _m("12.1", "the word is rotated right, not left",
       "x[1] = lax.bitwise_xor(x[0], _rotate_left(x[1], r))",
       "x[1] = lax.bitwise_xor(x[0], _rotate_left(x[1], 32 - r))"),
    _m("12.1", "the round number is not injected", "_u32(x[1], i + 1)", "_u32(x[1], 0)"),
    _m("12.1", "the key schedule is not rotated", "x[0] = lax.add(x[0], ks[(i + 1) % 3])",
       "x[0] = lax.add(x[0], ks[1])"),
    _m("12.1", "the rotated word is xored with itself, not the sum",
       "x[1] = lax.bitwise_xor(x[0], _rotate_left(x[1], r))",
       "x[1] = lax.bitwise_xor(x[1], _rotate_left(x[1], r))"),
    _m("12.1", "the round number injected is i, not i + 1",
       "_u32(x[1], i + 1)",
       "_u32(x[1], i)"),
    _m("12.1", "both words get the same key word",
       "ks[(i + 2) % 3]",
       "ks[(i + 1) % 3]"),
    _m("12.1", "the rotation set alternates from the second one",
       "_ROTATIONS[i % 2]",
       "_ROTATIONS[(i + 1) % 2]"),
    _m("12.2", "the top 24 bits are kept, not 23", "lax.full(shape, 9, np.uint32)",
       "lax.full(shape, 8, np.uint32)"),
    _m("12.2", "the range is not scaled", "jnp.multiply(floats, jnp.subtract(maxval, minval))",
       "floats"),
    _m("12.2", "the result is not clamped to minval",
       "return jnp.maximum(minval, scaled)", "return scaled"),
    _m("12.2", "minval is not added",
       "scaled = jnp.add(jnp.multiply(floats, jnp.subtract(maxval, minval)), minval)",
       "scaled = jnp.multiply(floats, jnp.subtract(maxval, minval))"),
    _m("12.2", "the mantissa is scaled by 2**-24",
       "lax.full(shape, 2.0**-23, dtype)", "lax.full(shape, 2.0**-24, dtype)"),
    _m("12.2", "the shift is arithmetic, not logical",
       "lax.shift_right_logical(", "lax.shift_right_arithmetic("),
    _m("12.3", "the bias is never asked for", """
       if self.use_bias:
           y = y + self.param("bias", self.bias_init, (self.features,))
       """, ""),
    _m("12.3", "the kernel is laid out (features, in_features)",
       "(np.shape(x)[-1], self.features)", "(self.features, np.shape(x)[-1])"),
    _m("12.3", "in_features read from the input's first axis",
       "(np.shape(x)[-1], self.features)", "(np.shape(x)[0], self.features)"),
    _m("12.3", "the bias is shaped (1, features)", "(self.features,)", "(1, self.features)"),
    _m("12.3", "the bias uses the kernel's initializer",
       'self.param("bias", self.bias_init,', 'self.param("bias", self.kernel_init,'),
    _m("12.3", "the kernel param is named weight", 'self.param("kernel",', 'self.param("weight",'),
    _m("12.4", "Nesterov's look-ahead is dropped",
       "updates = tree_map(f, updates, new_trace) if nesterov else new_trace",
       "updates = new_trace"),
    _m("12.4", "the decay multiplies the gradient, not the trace", "return g + decay * t",
       "return decay * g + t"),
    _m("12.4", "the trace and gradient are swapped in the new trace",
       "new_trace = tree_map(f, updates, state.trace)",
       "new_trace = tree_map(f, state.trace, updates)"),
    _m("12.4", "Nesterov looks ahead from the old trace",
       "updates = tree_map(f, updates, new_trace) if nesterov else new_trace",
       "updates = tree_map(f, updates, state.trace) if nesterov else new_trace"),
    _m("12.4", "Nesterov swaps the gradient and the new trace",
       "updates = tree_map(f, updates, new_trace) if nesterov else new_trace",
       "updates = tree_map(f, new_trace, updates) if nesterov else new_trace"),
    _m("12.5", "the first moment is not bias-corrected", "mu_hat = bias_correction(mu, b1, count)",
       "mu_hat = mu"),
    _m("12.5", "eps goes inside the square root",
       "m / (jnp.sqrt(v + eps_root) + eps)", "m / jnp.sqrt(v + eps_root + eps)"),
    _m("12.5", "the second moment keeps raw gradients, not their squares",
       "(1 - b2) * abs_sq(g) + b2 * t", "(1 - b2) * g + b2 * t"),
    _m("12.5", "eps_root is added after the square root, not under it",
       "m / (jnp.sqrt(v + eps_root) + eps)", "m / (jnp.sqrt(v) + eps_root + eps)"),
    _m("12.1", "the two words take each other's key word", """
       x[0] = lax.add(x[0], ks[(i + 1) % 3])
       x[1] = lax.add(lax.add(x[1], ks[(i + 2) % 3]), _u32(x[1], i + 1))
       """, """
       x[0] = lax.add(x[0], ks[(i + 2) % 3])
       x[1] = lax.add(lax.add(x[1], ks[(i + 1) % 3]), _u32(x[1], i + 1))
       """),
    _m("12.2", "the result is clamped below maxval, not above minval",
       "return jnp.maximum(minval, scaled)", "return jnp.minimum(maxval, scaled)"),
    _m("12.3", "in_features read from the input's second axis",
       "(np.shape(x)[-1], self.features)", "(np.shape(x)[1], self.features)"),
    _m("12.4", "Nesterov adds the new trace without its decay",
       "updates = tree_map(f, updates, new_trace) if nesterov else new_trace",
       "updates = tree_map(lambda g, t: g + t, updates, new_trace) if nesterov else new_trace"),
    _m("12.4", "the new trace is cast back to the old trace's dtype, as Adam's moments are",
       "return g + decay * t", "return (g + decay * t).astype(t.dtype)"),
    _m("12.4", "the new trace is cast to the gradient's dtype",
       "return g + decay * t", "return (g + decay * t).astype(g.dtype)"),
    _m("12.5", "the second moment is corrected with b1",
       "nu_hat = bias_correction(nu, b2, count)", "nu_hat = bias_correction(nu, b1, count)"),
    _m("12.5", "nesterov=True is ignored: plain Adam's first moment", "if nesterov:",
       "if False:"),
    _m("12.5", "the first moment decays with b2",
       "mu = tree_map(lambda g, t: (1 - b1) * (g ** 1) + b1 * t, updates, state.mu)",
       "mu = tree_map(lambda g, t: (1 - b2) * (g ** 1) + b2 * t, updates, state.mu)"),
)


def mutants_of(exercise: str) -> list[Mutant]:
    return [m for m in MUTANTS if m.exercise == exercise]
