"""Training modes, as smdebug names and numbers them: a step belongs to one mode and has a step number
within it (its mode step) besides its global step."""

from __future__ import annotations

from enum import Enum
from typing import Any


class ModeKeys(Enum):
    TRAIN = 1
    EVAL = 2
    PREDICT = 3
    GLOBAL = 4


ALLOWED_MODE_NAMES = tuple(mode.name for mode in ModeKeys)
#: The prefixes of mode-specific save parameters in a hook configuration ("train.save_interval").
MODE_PREFIXES = {mode: f"{mode.name.lower()}." for mode in ModeKeys}


def parse_mode(value: Any, where: str = "mode") -> ModeKeys:
    """A ModeKeys member from itself, its name ("TRAIN", "train") or its number; ValueError names the field."""
    if isinstance(value, ModeKeys):
        return value
    # Another module's copy of the enum (e.g. a notebook that imported the real smdebug's ModeKeys): go by name.
    name = getattr(value, "name", value)
    if isinstance(name, str) and name.upper() in ALLOWED_MODE_NAMES:
        return ModeKeys[name.upper()]
    if isinstance(value, int) and not isinstance(value, bool):
        for mode in ModeKeys:
            if mode.value == value:
                return mode
    raise ValueError(f"{where}: {value!r} is not a mode; use one of smd.modes.{', smd.modes.'.join(ALLOWED_MODE_NAMES)}")
