"""The stack's ceiling on executions running at once (contracts.stack_guardrails: max_concurrent_executions).

No IAM condition key counts executions, so the workflow counts them: at Initialize, before anything is launched, an
execution lists its state machine's RUNNING executions and is refused when ``max_concurrent_executions`` of them
started before it. Ranked by start (then ARN), two executions started together never both take the last place: the
later one is refused, whatever order their Initialize ran in. An execution refused at Initialize, still RUNNING
while it ends, counts against those that start after it, never against those before.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

#: At most this many executions listed per page (ListExecutions' maximum).
PAGE = 1000


class ConcurrentExecutionsLimit(RuntimeError):
    """The stack's max_concurrent_executions executions started before this one still run (the Fail state's Error)."""


def state_machine_arn(execution_arn: str) -> str:
    """arn:...:execution:<machine>:<name> -> arn:...:stateMachine:<machine>."""
    return ":".join([*_parts(execution_arn)[:5], "stateMachine", _parts(execution_arn)[6]])


def region_of(execution_arn: str) -> str:
    return _parts(execution_arn)[3]


def _parts(execution_arn: str) -> list[str]:
    parts = execution_arn.split(":")
    if len(parts) < 8 or parts[5] != "execution":
        raise ValueError(
            f"execution_id: {execution_arn!r} is not a Step Functions execution ARN (the state machine passes "
            "$$.Execution.Id)"
        )
    return parts


def check_running_executions(stepfunctions: Any, execution_arn: str, execution_start_time: str, limit: int) -> int:
    """How many of the state machine's running executions started before this one; ConcurrentExecutionsLimit when
    that is ``limit`` or more (naming the context key that sets it)."""
    mine = (_when(execution_start_time), execution_arn)
    ahead = [
        execution["executionArn"]
        for execution in _running(stepfunctions, state_machine_arn(execution_arn))
        if execution["executionArn"] != execution_arn
        and (_when(execution["startDate"]), execution["executionArn"]) < mine
    ]
    if len(ahead) >= limit:
        raise ConcurrentExecutionsLimit(
            f"max_concurrent_executions: {len(ahead)} execution(s) of this state machine started before this one are "
            f"still running and the stack allows {limit} at once (the stack's -c max_concurrent_executions sets it); "
            f"nothing was launched: start it again once one of them has ended (running: {', '.join(ahead[:5])}"
            f"{', ...' if len(ahead) > 5 else ''})"
        )
    return len(ahead)


def _running(stepfunctions: Any, machine_arn: str) -> list[dict[str, Any]]:
    executions: list[dict[str, Any]] = []
    request: dict[str, Any] = {"stateMachineArn": machine_arn, "statusFilter": "RUNNING", "maxResults": PAGE}
    while True:
        page = stepfunctions.list_executions(**request)
        executions += page.get("executions", [])
        if not page.get("nextToken"):
            return executions
        request["nextToken"] = page["nextToken"]


def _when(value: dt.datetime | str) -> dt.datetime:
    """A start time as ListExecutions gives it (a datetime) or as $$.Execution.StartTime does (ISO 8601), in UTC."""
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
