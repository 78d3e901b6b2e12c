"""A run_spec file (the execution input JSON), read and checked the same way by `local run` and `cloud start`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any


class RunSpecError(ValueError):
    """The run_spec file or its content is bad; the message names the file or field and the fix."""


#: A run_spec is a few keys; a file this big is not one (and is not read whole to find out).
MAX_RUN_SPEC_BYTES = 1 << 20


def read_run_spec(path: Path, option: str = "--run-spec") -> dict[str, Any]:
    """The JSON object in ``path``; RunSpecError naming the option, the path, what was found and the fix."""
    where = f"{option} {path}"
    path = Path(path)
    if not path.exists():
        raise RunSpecError(f"{where}: no such file; pass the path of an execution-input JSON file")
    if path.is_dir():
        raise RunSpecError(f"{where}: is a directory; pass the path of an execution-input JSON file")
    if not path.is_file():
        raise RunSpecError(f"{where}: is not a regular file; pass the path of an execution-input JSON file")
    size = path.stat().st_size
    if size > MAX_RUN_SPEC_BYTES:
        raise RunSpecError(f"{where}: is {size} bytes; a run_spec is a JSON object of at most {MAX_RUN_SPEC_BYTES} bytes")
    try:
        data = path.read_bytes()
    except PermissionError:
        raise RunSpecError(f"{where}: cannot be read (permission denied); make it readable") from None
    except OSError as error:
        raise RunSpecError(f"{where}: cannot be read ({error.strerror or error})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise RunSpecError(
            f"{where}: is not UTF-8 text (byte 0x{data[error.start]:02x} at offset {error.start}); save it as UTF-8 JSON"
        ) from None
    if not text.strip():
        raise RunSpecError(f"{where}: is empty; write a JSON object such as {{\"policy\": \"evidence\"}}")
    try:
        value = json.loads(text.removeprefix("\ufeff"), parse_constant=_refuse_constant)
    except json.JSONDecodeError as error:
        raise RunSpecError(f"{where}: not valid JSON at line {error.lineno} column {error.colno}: {error.msg}") from None
    except ValueError as error:
        raise RunSpecError(f"{where}: {error}") from None
    if not isinstance(value, dict):
        raise RunSpecError(f"{where}: must hold a JSON object of execution-input keys (got a JSON {_json_kind(value)})")
    return value


def _refuse_constant(name: str) -> Any:
    """Python's json reads NaN and Infinity, which JSON does not have: say so rather than carry them along."""
    raise ValueError(f"{name} is not JSON (JSON has no NaN or infinity); write a finite number")


def _json_kind(value: Any) -> str:
    return {list: "list", str: "string", bool: "boolean", int: "number", float: "number"}.get(type(value), "null")


def check_execution_input(execution_input: Mapping[str, Any], where: str = "--run-spec") -> Any:
    """The check the workflow's first step applies, so bad input stops the command before anything starts.
    Returns the first state (``lambdas.remediation.state.payload.WorkflowState``)."""
    from lambdas.remediation.execution_input import InvalidExecutionInput, initial_state

    try:
        return initial_state(dict(execution_input))
    except InvalidExecutionInput as error:
        problems = "; ".join(f"{field}: {problem}" for field, problem in error.problems.items())
        raise RunSpecError(f"{where}: {problems}") from None
