"""The interpreting backend's program format: a jaxpr as canonical JSON, versioned.

Not pickle: only the types below can be written, and reading one back imports nothing but
`stages.*` modules for the classes of enum and named-tuple params. The same bytes serve as the
persistent cache entry of an interpreter executable and, without debug info, as the
"computation" ingredient of its cache key (the same jaxpr always gives the same bytes: keys are
sorted, variables are numbered by first appearance).

Format version 1, a JSON object:

    {"format": "under-the-api/jaxpr", "version": 1, "module_name": str,
     "jaxpr": JAXPR, "consts": [VALUE, ...],            # one per constvar of the top jaxpr
     "extra": {str: VALUE, ...}}                         # the backend's own fields
    JAXPR  = {"constvars": [AVAL...], "invars": [AVAL...], "eqns": [EQN...],
              "outvars": [ATOM...], "debug_info": VALUE}  # variables are numbered: constvars,
                                                          # invars, then eqn outvars, in order
    EQN    = {"primitive": name, "params": {str: VALUE}, "invars": [ATOM...],
              "outvars": [AVAL | {"drop": AVAL}...]}
    ATOM   = {"var": int} | {"literal": VALUE, "aval": AVAL}
    AVAL   = [shape: [int...], dtype: str, weak_type: bool]
    VALUE  = null | bool | int | float | str
           | {"tuple": [VALUE...]} | {"list": [VALUE...]} | {"dict": [[VALUE, VALUE]...]}
           | {"float": "nan" | "inf" | "-inf"} | {"dtype": str}
           | {"scalar": VALUE, "dtype": str}                        # a numpy scalar
           | {"array": base64 bytes, "dtype": str, "shape": [int...]}  # a numpy array
           | {"eager_array": VALUE, "weak_type": bool}   # an eager Array (its numpy value)
           | {"jaxpr": JAXPR} | {"closed_jaxpr": JAXPR, "consts": [VALUE...]}
           | {"enum": "module:Qualname", "name": str} | {"namedtuple": "module:Qualname",
             "fields": [VALUE...]} | {"primitive": name} | {"unspecified": true}

Anything else (a Python callable in a param, say) raises `NotSerializable`: that program is
compiled again in every process instead of being written to disk.
"""

from __future__ import annotations

import base64
import importlib
import json
import math
import sys
from enum import Enum
from typing import Any

import numpy as np

from stages.s02_tracing import core
from stages.s02_tracing.array import Array, make_array
from stages.s02_tracing.core import ClosedJaxpr, Jaxpr, Literal, ShapedArray, Var

from .sharding_impls import UNSPECIFIED, UnspecifiedValue

FORMAT = "under-the-api/jaxpr"
VERSION = 1


class NotSerializable(TypeError):
    """A program holds something the format cannot write."""


class DeserializationError(ValueError):
    """Bytes that are not a program of this format and version."""


def dumps(module_name: str, closed_jaxpr: ClosedJaxpr, extra: dict[str, Any],
          debug_info: bool = True) -> bytes:
    doc = {"format": FORMAT, "version": VERSION, "module_name": module_name,
           "jaxpr": _jaxpr(closed_jaxpr.jaxpr, debug_info),
           "consts": [_value(c, debug_info) for c in closed_jaxpr.consts],
           "extra": {k: _value(v, debug_info) for k, v in extra.items()}}
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


def loads(data: bytes) -> tuple[str, ClosedJaxpr, dict[str, Any]]:
    """(module_name, closed_jaxpr, extra) back from `dumps`."""
    try:
        doc = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise DeserializationError(f"not a JSON document: {err}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise DeserializationError("not an interpreter program")
    if doc.get("version") != VERSION:
        raise DeserializationError(f"format version {doc.get('version')}, expected {VERSION}")
    try:
        jaxpr = _read_jaxpr(doc["jaxpr"])
        consts = [_read_value(c) for c in doc["consts"]]
        extra = {k: _read_value(v) for k, v in doc["extra"].items()}
        return doc["module_name"], ClosedJaxpr(jaxpr, consts), extra
    except (KeyError, TypeError, ValueError, AttributeError, ImportError) as err:
        raise DeserializationError(f"malformed program: {type(err).__name__}: {err}") from None


# ------------------------------------------------------------------ writing


def _aval(aval: ShapedArray) -> list[Any]:
    return [list(aval.shape), aval.dtype.name, aval.weak_type]


def _jaxpr(jaxpr: Jaxpr, debug_info: bool) -> dict[str, Any]:
    numbers: dict[int, int] = {}

    def bind(v: Var) -> list[Any] | dict[str, Any]:
        if isinstance(v, core.DropVar):
            return {"drop": _aval(v.aval)}
        numbers[id(v)] = len(numbers)
        return _aval(v.aval)

    def atom(x: Any) -> dict[str, Any]:
        if isinstance(x, Literal):
            return {"literal": _value(x.val, debug_info), "aval": _aval(x.aval)}
        return {"var": numbers[id(x)]}

    doc: dict[str, Any] = {"constvars": [bind(v) for v in jaxpr.constvars],
                           "invars": [bind(v) for v in jaxpr.invars]}
    eqns = []
    for eqn in jaxpr.eqns:
        invars = [atom(x) for x in eqn.invars]  # read before the outvars are numbered
        params = {}
        for k, v in eqn.params.items():
            try:
                params[k] = _value(v, debug_info)
            except NotSerializable as err:
                raise NotSerializable(f"{eqn.primitive} param {k}: {err}") from None
        eqns.append({"primitive": eqn.primitive.name, "params": params, "invars": invars,
                     "outvars": [bind(v) for v in eqn.outvars]})
    doc["eqns"] = eqns
    doc["outvars"] = [atom(x) for x in jaxpr.outvars]
    doc["debug_info"] = _value(jaxpr.debug_info, debug_info) if debug_info else None
    return doc


def _class_path(cls: type) -> str:
    if not cls.__module__.startswith("stages."):
        raise NotSerializable(f"{cls.__module__}.{cls.__qualname__} is not a course type")
    return f"{cls.__module__}:{cls.__qualname__}"


# --8<-- [start:value]
def _value(v: Any, debug_info: bool) -> Any:
    """One param, literal or constant as JSON (see the module docstring for the cases)."""
    t = type(v)
    if v is None or t in (bool, int, str):
        return v
    if t is float:
        return v if math.isfinite(v) else {"float": repr(v)}
    if isinstance(v, Array):
        return {"eager_array": _value(np.asarray(v), debug_info), "weak_type": v.weak_type}
    if isinstance(v, np.ndarray):
        data = np.ascontiguousarray(v).tobytes()
        return {"array": base64.b64encode(data).decode(), "dtype": v.dtype.name,
                "shape": list(v.shape)}
    if isinstance(v, np.generic):
        return {"scalar": _value(v.item(), debug_info), "dtype": v.dtype.name}
    if isinstance(v, np.dtype):
        return {"dtype": v.name}
    if isinstance(v, Enum):
        return {"enum": _class_path(t), "name": v.name}
    if isinstance(v, tuple) and hasattr(v, "_fields"):
        return {"namedtuple": _class_path(t), "fields": [_value(x, debug_info) for x in v]}
    if t in (tuple, list):
        return {t.__name__: [_value(x, debug_info) for x in v]}
    if t is dict:
        return {"dict": [[_value(k, debug_info), _value(x, debug_info)] for k, x in v.items()]}
    if isinstance(v, ClosedJaxpr):
        return {"closed_jaxpr": _jaxpr(v.jaxpr, debug_info),
                "consts": [_value(c, debug_info) for c in v.consts]}
    if isinstance(v, Jaxpr):
        return {"jaxpr": _jaxpr(v, debug_info)}
    if isinstance(v, core.Primitive):
        return {"primitive": v.name}
    if isinstance(v, UnspecifiedValue):
        return {"unspecified": True}
    raise NotSerializable(f"cannot write a value of type {t.__name__}")
# --8<-- [end:value]


# ------------------------------------------------------------------ reading


def _read_aval(a: list[Any]) -> ShapedArray:
    shape, dtype, weak_type = a
    return ShapedArray(tuple(shape), np.dtype(dtype), weak_type)


def _read_jaxpr(doc: dict[str, Any]) -> Jaxpr:
    variables: list[Var] = []

    def bind(a: Any) -> Var:
        if isinstance(a, dict):
            return core.DropVar(_read_aval(a["drop"]))
        var = Var(_read_aval(a))
        variables.append(var)
        return var

    def atom(a: dict[str, Any]) -> Any:
        if "literal" in a:
            return Literal(_read_value(a["literal"]), _read_aval(a["aval"]))
        return variables[a["var"]]

    constvars = [bind(a) for a in doc["constvars"]]
    invars = [bind(a) for a in doc["invars"]]
    eqns = []
    for e in doc["eqns"]:
        ins = [atom(a) for a in e["invars"]]
        params = {k: _read_value(v) for k, v in e["params"].items()}
        outs = [bind(a) for a in e["outvars"]]
        eqns.append(core.new_jaxpr_eqn(ins, outs, primitive_by_name(e["primitive"]), params))
    outvars = [atom(a) for a in doc["outvars"]]
    return Jaxpr(constvars, invars, outvars, eqns, debug_info=_read_value(doc["debug_info"]))


def _read_class(path: str) -> type:
    module_name, _, qualname = path.partition(":")
    if not module_name.startswith("stages."):
        raise ValueError(f"refusing to import {module_name}: not a course module")
    obj: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    if not (isinstance(obj, type) and (issubclass(obj, Enum) or issubclass(obj, tuple))):
        raise ValueError(f"{path} is neither an enum nor a named tuple")
    return obj


def _read_value(v: Any) -> Any:
    if not isinstance(v, dict):
        return v
    if "tuple" in v:
        return tuple(_read_value(x) for x in v["tuple"])
    if "list" in v:
        return [_read_value(x) for x in v["list"]]
    if "dict" in v:
        return {_read_value(k): _read_value(x) for k, x in v["dict"]}
    if "float" in v:
        return float(v["float"])
    if "eager_array" in v:
        arr = _read_value(v["eager_array"])
        return make_array(arr, ShapedArray(arr.shape, arr.dtype, v["weak_type"]))
    if "array" in v:
        data = base64.b64decode(v["array"])
        return np.frombuffer(data, dtype=v["dtype"]).reshape(v["shape"]).copy()
    if "scalar" in v:
        return np.dtype(v["dtype"]).type(_read_value(v["scalar"]))
    if "dtype" in v:
        return np.dtype(v["dtype"])
    if "enum" in v:
        return _read_class(v["enum"])[v["name"]]
    if "namedtuple" in v:
        return _read_class(v["namedtuple"])(*[_read_value(x) for x in v["fields"]])
    if "closed_jaxpr" in v:
        return ClosedJaxpr(_read_jaxpr(v["closed_jaxpr"]), [_read_value(c) for c in v["consts"]])
    if "jaxpr" in v:
        return _read_jaxpr(v["jaxpr"])
    if "primitive" in v:
        return primitive_by_name(v["primitive"])
    if "unspecified" in v:
        return UNSPECIFIED
    raise ValueError(f"unknown value encoding {sorted(v)}")


_primitives: dict[str, core.Primitive] = {}


def primitive_by_name(name: str) -> core.Primitive:
    """The primitive called `name`, among those defined in the loaded `stages.*` modules."""
    if name not in _primitives:  # a stage loaded since the last look may define it
        found: dict[str, set[core.Primitive]] = {}
        for m in list(sys.modules.values()):
            if m is not None and m.__name__.startswith("stages."):
                for v in list(vars(m).values()):
                    if isinstance(v, core.Primitive):
                        found.setdefault(v.name, set()).add(v)
        _primitives.clear()
        _primitives.update({n: next(iter(ps)) for n, ps in found.items() if len(ps) == 1})
    if name not in _primitives:
        raise ValueError(f"no single loaded primitive is named {name!r}")
    return _primitives[name]
