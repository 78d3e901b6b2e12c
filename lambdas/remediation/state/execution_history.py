"""Reading a remediation execution back from Step Functions' answers (DescribeExecution and
GetExecutionHistory), the same for a local run, one in an AWS account, and the execution-cleanup Lambda."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping
from typing import Any

_END_DETAILS = ("executionFailedEventDetails", "executionAbortedEventDetails", "executionTimedOutEventDetails")
_OUTPUT_DETAILS = ("stateExitedEventDetails", "taskSucceededEventDetails", "lambdaFunctionSucceededEventDetails")


#: What one page of a newest-first read asks for: the cleanup needs the few newest events, and an event may carry a
#: 256 KiB payload, so pages stay small.
NEWEST_FIRST_PAGE = 25
#: The most events the cleanup reads: the last state's output is at most a task's retries away from the end.
NEWEST_FIRST_LIMIT = 500


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
        found = _task_start_time(event)
        if found:
            return found
    return ""


def _task_start_time(event: Mapping[str, Any]) -> str:
    parameters = (event.get("taskScheduledEventDetails") or {}).get("parameters")
    if not parameters:
        return ""
    try:
        payload = json.loads(parameters).get("Payload")
    except (TypeError, json.JSONDecodeError, AttributeError):
        return ""
    if isinstance(payload, dict) and isinstance(payload.get("execution_start_time"), str):
        return payload["execution_start_time"]
    return ""


@dataclasses.dataclass
class LastMoments:
    """What the newest events of an execution say: the state it was in, its last state payload and the start time
    its tasks got. ``events_read`` counts the events it took."""

    current_state: str = ""
    state_payload: dict[str, Any] | None = None
    start_time: str = ""
    events_read: int = 0
    #: The Error and Cause the execution ended with (its ExecutionFailed, -Aborted or -TimedOut event; None while it
    #: runs or when the event was not read).
    end_error: str | None = None
    end_cause: str | None = None


def read_last_moments(stepfunctions: Any, execution_arn: str, limit: int = NEWEST_FIRST_LIMIT) -> LastMoments:
    """Read the history newest first and stop as soon as the current state, the newest state payload and the start
    time are known (a few events, whatever the length of the history: an execution may hold 25,000 events with
    payloads of up to 256 KiB each)."""
    found = LastMoments()
    for event in _newest_first(stepfunctions, execution_arn):
        found.events_read += 1
        if found.events_read == 1:
            ended = next((event[key] for key in _END_DETAILS if isinstance(event.get(key), dict)), None)
            if ended is not None:
                found.end_error, found.end_cause = ended.get("error"), ended.get("cause")
        if not found.current_state:
            found.current_state = (event.get("stateEnteredEventDetails") or {}).get("name", "")
        if not found.start_time:
            found.start_time = _task_start_time(event)
        if found.state_payload is None:
            found.state_payload = latest_state_payload({}, [event])
        if (found.current_state and found.start_time and found.state_payload is not None) or found.events_read >= limit:
            break
    return found


def _newest_first(stepfunctions: Any, execution_arn: str) -> Iterator[dict[str, Any]]:
    request: dict[str, Any] = {"executionArn": execution_arn, "maxResults": NEWEST_FIRST_PAGE, "reverseOrder": True}
    while True:
        page = stepfunctions.get_execution_history(**request)
        # Each page newest first even where reverseOrder is not honoured (moto returns every event, oldest first).
        yield from sorted(page["events"], key=lambda event: event.get("id", 0), reverse=True)
        if not page.get("nextToken"):
            return
        request["nextToken"] = page["nextToken"]


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
