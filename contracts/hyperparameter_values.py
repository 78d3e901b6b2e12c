"""A hyperparameter's value as a run_spec holds it (JSON: text, number or true/false), what kind of quantity it
is, how values of a kind are written after a remedy changes them, and how a value is shown in the reasons the
planner writes. Standard library only.

A JSON value alone does not say what a hyperparameter is: ``"lr": 50`` is a learning rate written without its
decimal point, ``"batch-norm": 0`` a switch written as a number. So every hyperparameter has a kind
(:data:`KINDS`), from, in order: what the run_spec declares (``hyperparameter_kinds``); what the conventional name
it stands for means (``learning_rate``: real; ``add_batch_norm``: flag); a learning rate's name (``lr``, ``eta``,
``learning_rate``, ``warmup-lr``, ...: a rate is a real number); and last the JSON value itself.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

Value = str | int | float | bool

INTEGER = "integer"  # a whole number: results are rounded (epochs, batch size, depth)
REAL = "real"  # a real number, whatever its JSON form: 50 * 0.1 is 5.0, then 0.5
FLAG = "flag"  # on/off, written true/false or 1/0 as the run_spec first wrote it
TEXT = "text"  # a name (an activation, a weighting scheme)
KINDS = (INTEGER, REAL, FLAG, TEXT)
#: A learning rate's usual names, alone or as part of a longer one (warmup_lr, lr-head, base_learning_rate).
RATE_NAME = re.compile(r"(^|[-_.])(lr|eta|learning[-_.]?rate)($|[-_.])", re.IGNORECASE)
#: Written results keep this many significant digits (a float holds 15 to 17): 0.1 * 0.05 is 0.005, not
#: 0.005000000000000001.
SIGNIFICANT_DIGITS = 15


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_flag_value(value: Any) -> bool:
    """true/false, or a number 0/1 (the AWS sample's add_batch_norm)."""
    return isinstance(value, bool) or (is_number(value) and value in (0, 1))


def kind_of_value(value: Any) -> str:
    if isinstance(value, bool):
        return FLAG
    if isinstance(value, int):
        return INTEGER
    if isinstance(value, float):
        return REAL
    return TEXT


def infer_kind(name: str, value: Any, declared: str | None = None, meaning: str | None = None) -> str:
    """The kind of hyperparameter ``name`` (see the module docstring for the order)."""
    if declared is not None:
        return declared
    if meaning is not None and fits_kind(value, meaning):
        return meaning
    if is_number(value) and RATE_NAME.search(name):
        return REAL
    return kind_of_value(value)


def infer_kinds(
    hyperparameters: Mapping[str, Any],
    declared: Mapping[str, str] | None = None,
    meanings: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Every hyperparameter's kind: ``declared`` by the run_spec, ``meanings`` from the conventional names."""
    declared, meanings = declared or {}, meanings or {}
    return {
        name: infer_kind(name, value, declared.get(name), meanings.get(name)) for name, value in hyperparameters.items()
    }


def numbers_written_as_text(
    hyperparameters: Mapping[str, Any], declared: Mapping[str, str], meanings: Mapping[str, str]
) -> dict[str, Any]:
    """``hyperparameters`` with a number written as JSON text ("lr": "0.002", as boto3's CreateTrainingJob wants
    every hyperparameter) read as the number, where the hyperparameter is a number: declared real or integer, the
    conventional one it stands for is, or (undeclared) a learning rate's name. The script sees the same value: every
    hyperparameter reaches it as text. Text that is no number, or not a whole one for an integer, stays as it is
    (the kind checks then say so)."""
    read = dict(hyperparameters)
    for name, value in hyperparameters.items():
        if not isinstance(value, str):
            continue
        kind = declared.get(name) or meanings.get(name) or (REAL if RATE_NAME.search(name) else None)
        if kind not in (REAL, INTEGER):
            continue
        try:
            number = float(value)
        except ValueError:
            continue
        if not math.isfinite(number) or (kind == INTEGER and not number.is_integer()):
            continue
        read[name] = int(number) if kind == INTEGER else number
    return read


def fits_kind(value: Any, kind: str) -> bool:
    """Whether ``value`` can be a value of ``kind`` (as a starting value, a ``set_to`` or a condition's value)."""
    if kind == FLAG:
        return is_flag_value(value)
    if kind == INTEGER:
        return is_number(value) and math.isfinite(value) and float(value).is_integer()
    if kind == REAL:
        return is_number(value)
    return isinstance(value, str)


def written(value: Any, kind: str, like: Any) -> Value:
    """``value`` as a ``kind`` hyperparameter whose current value is ``like`` is written: a whole number rounded, a
    real number to SIGNIFICANT_DIGITS, a flag as true/false or 1/0 as ``like`` is."""
    if kind == FLAG:
        on = bool(value)
        if isinstance(like, bool) or not is_number(like):
            return on
        return type(like)(1 if on else 0)
    if kind == INTEGER and is_number(value):
        return int(round(value))
    if kind == REAL and is_number(value):
        return human_number(float(value))
    return value


def human_number(value: float) -> float:
    """``value`` with the float noise of arithmetic removed, as a person would write it (0.005, not
    0.005000000000000001)."""
    if not math.isfinite(value) or value == 0:
        return value
    return float(f"{value:.{SIGNIFICANT_DIGITS}g}")


def same_value(a: Any, b: Any, kind: str) -> bool:
    """Equal as values of ``kind`` (a flag's true equals its 1)."""
    if kind == FLAG and is_flag_value(a) and is_flag_value(b):
        return bool(a) == bool(b)
    if isinstance(a, bool) != isinstance(b, bool):
        return False
    return a == b


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


def describe_kind(kind: str) -> str:
    """'a whole number', 'a real number', 'true/false (or 1/0)', 'text': for messages."""
    return {INTEGER: "a whole number", REAL: "a real number", FLAG: "true/false (or 1/0)", TEXT: "text"}[kind]


def show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.4g}" if math.isfinite(value) else str(value)
    return str(value)
