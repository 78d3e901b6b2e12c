"""The files of a job's debug output that readers besides the debugger's own find by name. Standard library only.

The debugger writes one file per saved step under ``steps/`` (``debugger.storage.layout``: its format and the rest of the
layout); the trial reader lists them, and the local training platform watches them to follow a job's progress
(a spot interruption at a step, for a script that prints no progress lines).
"""

from __future__ import annotations

STEPS_DIR = "steps"
STEP_FILE_SUFFIX = ".npz"


def step_file_name(step: int) -> str:
    return f"{step:012d}{STEP_FILE_SUFFIX}"


def step_from_file_name(name: str) -> int | None:
    """The step a step file holds, from its name; None for any other file (a writer's dot-named temporary too)."""
    if not name.endswith(STEP_FILE_SUFFIX) or name.startswith("."):
        return None
    stem = name[: -len(STEP_FILE_SUFFIX)]
    return int(stem) if stem.isdigit() else None
