"""`remediate cloud status`: an execution's progress and attempts, once (DescribeExecution and its history) or
followed live with ``--watch``: one line per new attempt, outcome and decision, as the local run prints its
notifications, until the execution ends."""

from __future__ import annotations

import argparse
import json
import re
import time
from collections.abc import Callable, Mapping
from typing import Any

from contracts.run_spec import HISTORY_EVENT_LIMIT
from contracts.step_names import step_name
from lambdas.remediation.state.execution_history import current_state_name, latest_state_payload
from remediate.aws_access import CloudCommandError, aws_call
from remediate.cloud_stack import outputs_for

EXECUTION_NAME = re.compile(r"^[A-Za-z0-9_-]{1,80}$")
DEFAULT_WATCH_SECONDS = 10.0


def execution_arn_for(name_or_arn: str, state_machine_arn: str) -> str:
    if name_or_arn.startswith("arn:"):
        return name_or_arn
    if not EXECUTION_NAME.fullmatch(name_or_arn):
        raise CloudCommandError(f"EXECUTION_ARN_OR_NAME: {name_or_arn!r} is neither an execution ARN nor a valid name")
    head, _, machine = state_machine_arn.rpartition(":")
    return f"{head.replace(':stateMachine', ':execution')}:{machine}:{name_or_arn}"


def summarize_execution(description: Mapping[str, Any], history: list[Mapping[str, Any]]) -> dict[str, Any]:
    payload = latest_state_payload(description, history)
    state = (payload or {}).get("state", {})
    attempts = []
    for attempt in state.get("attempts", []) or []:
        decision = attempt.get("decision") or {}
        issue = attempt.get("issue") or {}
        attempts.append(
            {
                "number": attempt.get("number"),
                "job_name": attempt.get("job_name"),
                "outcome": attempt.get("outcome"),
                "issue": f"{issue.get('rule')} at {_step_said(issue)}" if issue.get("rule") else None,
                "remedy": decision.get("remedy"),
                "reason": decision.get("reason"),
            }
        )
    summary = {
        "execution_arn": description.get("executionArn"),
        "status": description.get("status"),
        "start_date": _iso(description.get("startDate")),
        "stop_date": _iso(description.get("stopDate")),
        "current_state": current_state_name(history) or None,
        "next_action": state.get("next_action"),
        "job_status": state.get("job_status"),
        "rule_status": state.get("rule_status"),
        "history": state.get("history"),
        "end_reason": state.get("end_reason"),
        "attempts": attempts,
        "run_spec": state.get("run_spec"),
        "history_events": len(history),
    }
    if description.get("status") != "SUCCEEDED" and description.get("error"):
        summary["error"] = description.get("error")
        summary["cause"] = description.get("cause")
    return summary


def _iso(value: Any) -> str | None:
    return value.isoformat() if hasattr(value, "isoformat") else value


class HistoryReader:
    """An execution's history, read once and then only its new events (newest first, down to the last one seen)."""

    def __init__(self, client: Any, execution_arn: str):
        self.client = client
        self.execution_arn = execution_arn
        self.events: list[dict[str, Any]] = []

    def read(self) -> list[dict[str, Any]]:
        seen = self.events[-1]["id"] if self.events else 0
        newer: list[dict[str, Any]] = []
        # A poll sees a handful of new events: a small first page, then whole pages while they are all new.
        request: dict[str, Any] = {
            "executionArn": self.execution_arn,
            "reverseOrder": True,
            "maxResults": 100 if seen else 1000,
        }
        while True:
            page = self.client.get_execution_history(**request)
            fresh = [event for event in page["events"] if event["id"] > seen]
            newer += fresh
            if len(fresh) < len(page["events"]) or not page.get("nextToken"):
                break
            request.update(nextToken=page["nextToken"], maxResults=1000)
        self.events += sorted(newer, key=lambda event: event["id"])
        return self.events


def changes(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> list[str]:
    """Lines for what is new in ``after``: attempts launched, their outcomes and the planner's decisions."""
    previous = {attempt["number"]: attempt for attempt in (before or {}).get("attempts", [])}
    lines = []
    for attempt in after["attempts"]:
        old = previous.get(attempt["number"], {})
        label = f"attempt {attempt['number']}"
        if not old:
            lines.append(f"{label}: launched {attempt['job_name']}")
        if attempt["outcome"] != old.get("outcome") and attempt["outcome"] != "running":
            issue = f" ({attempt['issue']})" if attempt["issue"] else ""
            lines.append(f"{label}: {attempt['outcome']}{issue}")
        if attempt["remedy"] and attempt["remedy"] != old.get("remedy"):
            lines.append(f"{label}: {attempt['remedy']}: {attempt['reason']}")
    return lines


def ending(summary: Mapping[str, Any]) -> str:
    line = f"{summary['status']}"
    if summary.get("end_reason"):
        line += f": {summary['end_reason']}"
    if summary.get("error"):
        line += f" ({summary['error']}: {summary.get('cause')})"
    return line


def follow_execution(
    client: Any,
    execution_arn: str,
    *,
    poll_seconds: float = DEFAULT_WATCH_SECONDS,
    out: Callable[[str], None] = print,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """Print a line for each new attempt, outcome and decision until the execution ends; returns the last summary."""
    reader = HistoryReader(client, execution_arn)
    summary: dict[str, Any] | None = None
    while True:
        description = aws_call("DescribeExecution", client.describe_execution, executionArn=execution_arn)
        history = aws_call("GetExecutionHistory", reader.read)
        latest = summarize_execution(description, history)
        for line in changes(summary, latest):
            out(line)
        summary = latest
        if summary["status"] != "RUNNING":
            out(ending(summary))
            return summary
        sleep(poll_seconds)


def status_command(arguments: argparse.Namespace) -> int:
    session, outputs = outputs_for(arguments)
    execution_arn = execution_arn_for(arguments.execution, outputs.state_machine_arn)
    client = session.client("stepfunctions")
    if arguments.watch:
        print(f"{execution_arn}: following it (every {arguments.poll_seconds:g} s; Ctrl-C stops following, not it)")
        summary = follow_execution(client, execution_arn, poll_seconds=arguments.poll_seconds)
        return 0 if summary["status"] == "SUCCEEDED" else 1
    description = aws_call("DescribeExecution", client.describe_execution, executionArn=execution_arn)
    history = aws_call("GetExecutionHistory", HistoryReader(client, execution_arn).read)
    summary = summarize_execution(description, history)
    if arguments.json:
        print(json.dumps(summary, indent=2, default=str))
        return 0
    print(f"{summary['execution_arn']}: {summary['status']} (state: {summary['current_state'] or '-'})")
    if summary.get("history"):
        counters = ", ".join(f"{k}={v}" for k, v in summary["history"].items() if k != "latest_job_name")
        print(f"  job {summary['history'].get('latest_job_name') or '-'}: {summary['job_status'] or '-'}; {counters}")
    for attempt in summary["attempts"]:
        line = f"  attempt {attempt['number']}: {attempt['job_name']} -> {attempt['outcome']}"
        if attempt["issue"]:
            line += f" ({attempt['issue']})"
        if attempt["remedy"]:
            line += f"; {attempt['remedy']}: {attempt['reason']}"
        print(line)
    print(f"  history: {summary['history_events']:,} of {HISTORY_EVENT_LIMIT:,} events")
    if summary.get("end_reason"):
        print(f"  end: {summary['end_reason']}")
    if summary.get("error"):
        print(f"  {summary['status'].lower()}: {summary['error']}: {summary.get('cause')}")
    return 0


def _step_said(issue: dict[str, Any]) -> str:
    """The issue's step as the user counts it (contracts.step_names); 'step None' for an issue without one, as before."""
    if issue.get("step") is None:
        return "step None"
    return step_name(issue["step"], issue.get("optimizer_step"), bool(issue.get("evaluation_pass")), with_global=True)
