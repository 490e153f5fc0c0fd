"""Where in the user's code something happened: the innermost frame that is not the library's.

JAX: jax/_src/source_info_util.py (`current`, `summarize`, `is_user_filename`). JAX records a
traceback wherever it may later have to say where a value came from (an equation's source info,
a BatchTracer's origin); `summarize` prints its innermost user frame as `file:line:column
(function)`. Ours keeps only that frame's code object and instruction offset, which is all the
summary needs and holds no frame (so no local variable) alive.
"""

from __future__ import annotations

import inspect
import re
import sysconfig
from types import CodeType
from typing import NamedTuple

_STAGE_FILE = re.compile(r"[\\/]stages[\\/]s\d\d_\w+[\\/]")
_STDLIB = sysconfig.get_paths()["stdlib"]
_user_files: dict[str, bool] = {}  # filename -> is it the user's (asked once per file)


class SourceInfo(NamedTuple):
    code: CodeType
    lasti: int  # the frame's last instruction, in bytes: where in `code` the call was


def is_user_filename(filename: str) -> bool:
    """Neither a file of the course's stages nor of Python's standard library."""
    known = _user_files.get(filename)
    if known is None:
        known = _user_files[filename] = not (_STAGE_FILE.search(filename)
                                             or filename.startswith(_STDLIB))
    return known


def current() -> SourceInfo | None:
    """The innermost user frame of the calling thread, or None if there is none."""
    frame = inspect.currentframe().f_back
    while frame is not None and not is_user_filename(frame.f_code.co_filename):
        frame = frame.f_back
    return None if frame is None else SourceInfo(frame.f_code, frame.f_lasti)


def summarize(info: SourceInfo | None) -> str:
    """`file:line:column (function)`, as JAX prints a source location."""
    if info is None:
        return "unknown"
    line, _, column, _ = list(info.code.co_positions())[info.lasti // 2]
    where = f"{info.code.co_filename}:{line}" + (f":{column}" if column else "")
    return f"{where} ({info.code.co_qualname})"
