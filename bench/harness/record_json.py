"""A run record's JSON form: the shape each field must have before it is read (a record may be
edited or damaged by hand), and the non-finite floats JSON cannot hold, written as the strings
"inf", "-inf", "nan" (``strict``) and read back (``loose``)."""

from __future__ import annotations

import json
import math
from typing import Any

_NONE = type(None)
# each field's JSON type (a record may be edited or damaged by hand: each is checked before it is read)
_SHAPES: dict[str, tuple[type, ...]] = {
    "experiment": (str,),
    "run_id": (str,),
    "key": (str,),
    "kind": (str,),
    "label": (str,),
    "status": (str,),
    "start_time": (int,),
    "end_time": (int, _NONE),
    "cell": (dict, _NONE),
    "split": (dict, _NONE),
    "params": (dict,),
    "metrics": (dict,),
    "timings": (dict,),
    "tags": (dict,),
    "code": (dict,),
    "machine": (dict,),
    "ledger": (dict, _NONE),
    "ledger_missing": (str, _NONE),
}
_TEXT_MAPS = ("params", "tags")  # text as MLflow logs it
_NUMBER_MAPS = ("metrics", "timings")  # numbers, or "inf"/"-inf"/"nan"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def shape_problems(data: dict[str, Any]) -> list[str]:
    """What in a record's JSON object is missing or of the wrong type (empty: readable)."""
    problems = [f"{name} is missing" for name in _SHAPES if name not in data and name != "ledger_missing"]
    for name, types in _SHAPES.items():
        value = data.get(name)
        if name in data and (not isinstance(value, types) or isinstance(value, bool)):
            wanted = " or ".join(
                "null" if t is _NONE else {dict: "object", str: "text"}.get(t, t.__name__) for t in types
            )
            problems.append(f"{name} is {json.dumps(value)[:40]}, not {wanted}")
    if isinstance(data.get("kind"), str) and data["kind"] not in ("cell", "audit"):
        problems.append(f"kind is {data['kind']!r}, not 'cell' or 'audit'")
    for name in _TEXT_MAPS:
        if isinstance(data.get(name), dict) and not all(isinstance(v, str) for v in data[name].values()):
            problems.append(f"{name} holds a value that is not text")
    for name in _NUMBER_MAPS:
        values = data.get(name).values() if isinstance(data.get(name), dict) else ()
        if not all(_is_number(v) or isinstance(v, str) and v in _NON_FINITE for v in values):
            problems.append(f"{name} holds a value that is not a number")
    return problems


_NON_FINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def strict(value: Any) -> Any:
    """JSON has no inf or nan: they are written as the strings "inf", "-inf", "nan"."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, dict):
        return {k: strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict(v) for v in value]
    return value


def loose(value: Any) -> Any:
    """The inverse of :func:`strict` (params stay strings: they are logged as text; the cell
    has its own codec)."""
    if isinstance(value, str) and value in _NON_FINITE:
        return _NON_FINITE[value]
    if isinstance(value, dict):
        return {k: (v if k in ("params", "tags", "cell") else loose(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [loose(v) for v in value]
    return value
