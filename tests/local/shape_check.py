"""Check a parsed response against a botocore output shape: required members, member names, types, enums."""

from __future__ import annotations

import datetime as dt
from typing import Any


def shape_problems(value: Any, shape: Any, where: str = "response") -> list[str]:
    problems: list[str] = []
    kind = shape.type_name
    if kind == "structure":
        if not isinstance(value, dict):
            return [f"{where}: expected an object, got {type(value).__name__}"]
        for name in shape.required_members:
            if name not in value:
                problems.append(f"{where}.{name}: required but missing")
        for name, item in value.items():
            if name == "ResponseMetadata":
                continue
            if name not in shape.members:
                problems.append(f"{where}.{name}: not a member of {shape.name}")
                continue
            problems += shape_problems(item, shape.members[name], f"{where}.{name}")
    elif kind == "list":
        if not isinstance(value, list):
            return [f"{where}: expected a list, got {type(value).__name__}"]
        for index, item in enumerate(value):
            problems += shape_problems(item, shape.member, f"{where}[{index}]")
    elif kind == "map":
        if not isinstance(value, dict):
            return [f"{where}: expected a map, got {type(value).__name__}"]
        for key, item in value.items():
            problems += shape_problems(key, shape.key, f"{where} key")
            problems += shape_problems(item, shape.value, f"{where}.{key}")
    elif kind == "string":
        if not isinstance(value, str):
            problems.append(f"{where}: expected a string, got {type(value).__name__}")
        elif shape.enum and value not in shape.enum:
            problems.append(f"{where}: {value!r} is not one of {shape.enum}")
    elif kind in ("integer", "long"):
        if not isinstance(value, int) or isinstance(value, bool):
            problems.append(f"{where}: expected an integer, got {value!r}")
    elif kind in ("float", "double"):
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            problems.append(f"{where}: expected a number, got {value!r}")
    elif kind == "boolean":
        if not isinstance(value, bool):
            problems.append(f"{where}: expected a boolean, got {value!r}")
    elif kind == "timestamp":
        if not isinstance(value, dt.datetime) or value.tzinfo is None:
            problems.append(f"{where}: expected a timezone-aware datetime, got {value!r}")
    return problems
