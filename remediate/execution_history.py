"""Reading a remediation execution back from Step Functions' answers (DescribeExecution and
GetExecutionHistory), the same for a local run and one in an AWS account."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

_OUTPUT_DETAILS = ("stateExitedEventDetails", "taskSucceededEventDetails", "lambdaFunctionSucceededEventDetails")


def latest_state_payload(description: Mapping[str, Any], history: list[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The newest state payload ({"state": ...}): the execution's output, else the newest state or task
    output in the history (a Lambda task's raw output carries it under "Payload")."""
    candidates = [description.get("output")]
    for event in sorted(history, key=lambda event: event.get("id", 0), reverse=True):
        candidates.extend((event.get(key) or {}).get("output") for key in _OUTPUT_DETAILS)
    for text in candidates:
        if not text:
            continue
        try:
            value = json.loads(text)
        except (TypeError, json.JSONDecodeError):
            continue
        if isinstance(value, dict) and isinstance(value.get("Payload"), dict):
            value = value["Payload"]
        if isinstance(value, dict) and isinstance(value.get("state"), dict):
            return value
    return None


def current_state_name(history: list[Mapping[str, Any]]) -> str:
    """The state the execution entered last ('' before the first)."""
    for event in reversed(history):
        details = event.get("stateEnteredEventDetails")
        if details:
            return details.get("name", "")
    return ""
