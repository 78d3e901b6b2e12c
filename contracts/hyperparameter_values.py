"""A hyperparameter's value as a run_spec holds it (JSON: text, number or true/false), how kinds of values
compare, and how a value is shown in the reasons the planner writes. Standard library only."""

from __future__ import annotations

import math
from typing import Any

Value = str | int | float | bool


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def same_kind(a: Any, b: Any) -> bool:
    """Values a remedy may swap: booleans for booleans, numbers for numbers, strings for strings."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool)
    if is_number(a) or is_number(b):
        return is_number(a) and is_number(b)
    return type(a) is type(b)


def kind_of(value: Any) -> str:
    """'a number', 'true/false', 'a string': for messages."""
    if isinstance(value, bool):
        return "true/false"
    if is_number(value):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return type(value).__name__


def show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.4g}" if math.isfinite(value) else str(value)
    return str(value)
