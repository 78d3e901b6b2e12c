"""Reading a remediation execution back from Step Functions' answers (DescribeExecution and
GetExecutionHistory), the same for a local run, one in an AWS account, and the execution-cleanup Lambda."""

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


def execution_start_time(history: list[Mapping[str, Any]]) -> str:
    """$$.Execution.StartTime as the tasks got it (the jobs' tags carry it), from a Lambda task's parameters in the
    history ('' when no task was scheduled)."""
    for event in history:
        parameters = (event.get("taskScheduledEventDetails") or {}).get("parameters")
        if not parameters:
            continue
        try:
            payload = json.loads(parameters).get("Payload")
        except (TypeError, json.JSONDecodeError, AttributeError):
            continue
        if isinstance(payload, dict) and isinstance(payload.get("execution_start_time"), str):
            return payload["execution_start_time"]
    return ""


def read_history(stepfunctions: Any, execution_arn: str) -> list[dict[str, Any]]:
    """Every event of the execution, oldest first (GetExecutionHistory, every page)."""
    events: list[dict[str, Any]] = []
    request: dict[str, Any] = {"executionArn": execution_arn, "maxResults": 1000}
    while True:
        page = stepfunctions.get_execution_history(**request)
        events += page["events"]
        if not page.get("nextToken"):
            return events
        request["nextToken"] = page["nextToken"]
