"""Why a trace cache missed, in JAX's words and layout (`jax_explain_cache_misses`).

JAX: `explain` and `diff_tracing_cache_keys` in jax/_src/interpreters/partial_eval.py, and
source_info_util.py for the call site. On a miss of jit's trace cache the new key is compared
with every key this function was seen with, in five ordered categories, and the closest one is
reported: the trace context (a config flag such as `jax_disable_jit`), the argument pytree
(including static argument values), the debug info, the argument types. A function never seen
before is reported as such, and a second never-seen function from the same call site suggests
that the function is being redefined, e.g. a lambda created inside a loop.

What only reproduces JAX's printed quirks is marked so: ranks that differ print an empty sharding
`({})` after each type (JAX's avals carry a sharding whose spec has one entry per dimension),
and the weak-type hint ends in a URL glued to the last line.
"""

from __future__ import annotations

import logging
import operator as op
from typing import Any

from stages.s01_pytrees import equality_errors_pytreedef, keystr
from stages.s02_tracing import config, source_info_util

logger = logging.getLogger(__name__)

callsites_with_tracing_cache_miss: set[str] = set()


def summarize_callsite() -> str:
    """`file:line:column (function)` of the innermost user frame (JAX: source_info_util)."""
    return source_info_util.summarize(source_info_util.current())


def _func_file_and_line(func_src_info: str) -> tuple[str | None, int | None]:
    """`f at /path/file.py:12` -> ("/path/file.py", 12)."""
    if " at " not in func_src_info:
        return None, None
    path, _, line = func_src_info.rsplit(" at ", 1)[1].rpartition(":")
    return path, int(line) if line.isdigit() else None


def explain_tracing_cache_miss(fun: Any, key: tuple, seen_keys: list[tuple]) -> None:
    """Log (WARNING) why `key` missed, given the keys `fun` was traced with before."""
    _, _, dbg = key
    func_filename, func_lineno = _func_file_and_line(dbg.func_src_info)
    if func_filename and not source_info_util.is_user_filename(func_filename):
        return  # the course's own functions (a tiny jit of one primitive) are not explained
    msg = [f"TRACING CACHE MISS at {(callsite := summarize_callsite())}:"]
    src_info = ""
    if func_filename:
        src_info += f" defined at {func_filename}"
    if func_lineno:
        src_info += f":{func_lineno}"
    if not seen_keys:
        msg.append(f"  never seen function:\n    {dbg.func_name} id={id(fun)}{src_info}")
        if callsite in callsites_with_tracing_cache_miss:
            msg.append("  but seen another function defined on the same line; maybe the "
                       "function is\n  being re-defined repeatedly, preventing caching?")
        else:
            callsites_with_tracing_cache_miss.add(callsite)
        logger.warning("\n".join(msg))
        return
    msg.append(f"  for {dbg.func_name}{src_info}")
    # EXERCISE 7.7 (closest-key): the smallest (severity, number of differences, text) wins
    closest = min(diff_tracing_cache_keys(key, k) for k in seen_keys)[-1]
    # END EXERCISE
    msg.append("  all previously seen cache keys differ. For the closest previous key:")
    msg.append("  " + closest)
    logger.warning("\n".join(msg))


def diff_tracing_cache_keys(new_key: tuple, old_key: tuple) -> tuple[int, int, str]:
    """(severity, number of differences, explanation); lower severity is a closer key."""
    new_ctx, new_in, new_dbg = new_key
    old_ctx, old_in, old_dbg = old_key
    return (diff_tracing_ctx(new_ctx, old_ctx) or diff_trees(new_in.tree, old_in.tree)
            or diff_debug(new_dbg, old_dbg)
            or diff_types(new_dbg, new_in.avals, old_in.avals)
            or (4, 0, "cache miss explanation unavailable"))


def diff_tracing_ctx(new_ctx: tuple, old_ctx: tuple) -> tuple[int, int, str] | None:
    if new_ctx == old_ctx:
        return None
    msg = "Tracing context doesn't match, e.g. due to config or context manager."
    diffs = [f"  * {name} differs: now {new} and before {old}"
             for name, new, old in zip(config.trace_context_names(), new_ctx, old_ctx,
                                       strict=True) if new != old]
    return 0, len(diffs), msg + "\n" + "\n".join(diffs)


def diff_trees(new_tree: Any, old_tree: Any) -> tuple[int, int, str] | None:
    diffs = [f"  * at input path {keystr(tuple(path))}, now {thing1} and before {thing2}, "
             f"so {why}" for path, thing1, thing2, why in
             equality_errors_pytreedef(new_tree, old_tree)]
    if diffs:
        return 1, len(diffs), "different input pytree:\n" + "\n".join(diffs)
    return None


def diff_debug(new_dbg: Any, old_dbg: Any) -> tuple[int, int, str] | None:
    num_diff = sum(map(op.ne, new_dbg, old_dbg))
    return (2, num_diff, "Debug info doesn't match.") if num_diff else None


def diff_types(dbg: Any, new_avals: tuple, old_avals: tuple) -> tuple[int, int, str] | None:
    if new_avals == old_avals:
        return None
    diffs, weak_type_hint = [], False
    for name, new, old in zip(dbg.arg_names, new_avals, old_avals, strict=True):
        if new == old:
            continue
        new_str, old_str = new.str_short(short_dtypes=True), old.str_short(short_dtypes=True)
        if new.ndim != old.ndim:  # JAX quirk: the avals' shardings differ, and print empty
            new_str, old_str = new_str + "({})", old_str + "({})"
        if new.weak_type != old.weak_type:
            weak_type_hint = True
            new_str += f"{{weak_type={new.weak_type}}}"
            old_str += f"{{weak_type={old.weak_type}}}"
        diffs.append(f"  * at {name}, now {new_str} and before {old_str}")
    msg = "different input types:\n" + "\n".join(diffs)
    if weak_type_hint:  # JAX quirk: no newline before the link
        msg += "https://docs.jax.dev/en/latest/type_promotion.html#weak-types"
    return 3, len(diffs), msg
