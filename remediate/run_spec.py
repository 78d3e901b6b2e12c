"""A run_spec file (the execution input JSON), read and checked the same way by `local run` and `cloud start`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any


class RunSpecError(ValueError):
    """The run_spec file or its content is bad; the message names the file or field and the fix."""


def read_run_spec(path: Path) -> dict[str, Any]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RunSpecError(f"--run-spec {path}: no such file; pass the path of an execution-input JSON file") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise RunSpecError(f"--run-spec {path}: not valid JSON ({error})") from None
    if not isinstance(value, dict):
        raise RunSpecError(f"--run-spec {path}: must hold a JSON object of execution-input keys")
    return value


def check_execution_input(execution_input: Mapping[str, Any], where: str = "--run-spec") -> None:
    """The check the workflow's first step applies, so bad input stops the command before anything starts."""
    from lambdas.remediation.execution_input import InvalidExecutionInput, initial_state

    try:
        initial_state(dict(execution_input))
    except InvalidExecutionInput as error:
        problems = "; ".join(f"{field}: {problem}" for field, problem in error.problems.items())
        raise RunSpecError(f"{where}: {problems}") from None
