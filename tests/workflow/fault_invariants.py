"""The product's promises, checked after each execution the fault harness ran (fault_harness.py): every violation,
one line each. Read from what happened (the scripted SageMaker's jobs and what they wrote, the history, the
notifications SNS took, the metrics the handlers counted, the cleanup's deliveries), never from the product's own
verdicts.

1. no training job runs once the execution has ended: (a) not one launched after the end (a launch under way), whatever
   happened to the cleanup; (b) not one the execution left, unless the cleanup failed on every try (its event in the
   dead-letter queue, which alarms);
2. at most one job per attempt;
3. no success without every rule that must report on the job NoIssuesFound (whatever else it said) and the objective met;
4. no healthy job stopped while its execution ran (unless a fault outlasted its retry budget);
5. every end names its cause (a known Error, a non-empty Cause);
6. no end is silent: notified, and alarmed unless it is an expected end or a deliberate stop;
7. no run ends on a Lambda fault that stayed within its retries.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from workflow_harness import ASL_PATH

from lambdas.remediation.state.end_causes import (
    EXPECTED_ENDS,
    NOTIFICATIONS_NOT_SENT,
    UNEXPECTED_WORKFLOW_ERRORS,
    is_named,
)

#: The Errors of an execution that failed on a Lambda's own fault (throttled, 5xx, timed out) through its Retry.
LAMBDA_FAULT_PREFIXES = ("Lambda.", "Sandbox.")


@dataclasses.dataclass
class Outcome:
    """One execution under faults, and what it showed."""

    status: str
    error: str | None
    cause: str | None
    jobs: dict[str, str]
    violations: list[str]
    faults: int


def check_invariants(
    workflow: Any,
    harness: Any,
    description: dict[str, Any],
    *,
    healthy_jobs: set[str] | None = None,
    aborted: bool = False,
) -> list[str]:
    """Every promise the execution broke, one line each (empty: none)."""
    sagemaker = workflow.sagemaker
    violations: list[str] = []
    status = description["status"]
    arn = description["executionArn"]
    error = description.get("error")
    jobs = sagemaker.final_statuses()
    cleanup_failed = _cleanup_failed_on_every_try(workflow, arn)
    # the run may end on a fault (and stop its job to end) only once the fault outlasted its task's retries
    budget_exhausted = status == "FAILED" and _retries_ran_out(workflow.history(arn), error)
    for job, job_status in jobs.items():
        if job_status != "InProgress":
            continue
        if job in sagemaker.created_after_end:
            # 1a. a launch under way when the execution ended: the train Lambda's own look stops it, and the cleanup's
            # second look if that look failed; no failure of the cleanup excuses it
            violations.append(f"training job {job}, launched after the execution ended {status}, still runs")
        elif not cleanup_failed:
            # 1b. a job the execution left: the cleanup stops it (unless the cleanup failed on every try: its event is
            # then in the dead-letter queue, which alarms)
            violations.append(f"training job {job} still runs after the execution ended {status}")
    attempts = [request["Tags"] for request in sagemaker.created]
    numbers = [next(tag["Value"] for tag in tags if tag["Key"] == "remediation:attempt") for tags in attempts]
    if len(numbers) != len(set(numbers)):
        violations.append(f"more than one job for an attempt: attempts {numbers}")
    if status == "SUCCEEDED":
        violations += _success_violations(sagemaker, json.loads(description["output"])["state"])
    for job in sagemaker.stopped_while_running:
        if healthy_jobs is not None and job in healthy_jobs and not budget_exhausted:
            violations.append(f"healthy job {job} stopped while its execution ran")
    if status != "SUCCEEDED":
        cause = description.get("cause")
        if status == "FAILED" and (not is_named(error) or not cause):
            violations.append(f"execution failed with an unnamed cause: {error!r}: {str(cause)[:300]!r}")
        if status in ("ABORTED", "TIMED_OUT") and not aborted:
            violations.append(f"execution ended {status} though nothing stopped it")
        if status == "FAILED" and str(error).startswith(LAMBDA_FAULT_PREFIXES) and not budget_exhausted:
            violations.append(f"execution failed on {error} though no fault outlasted its retries")
        violations += _silence_violations(workflow, harness, description, cleanup_failed)
    return violations


def _success_violations(sagemaker: Any, output: dict[str, Any]) -> list[str]:
    """3. success only with every rule that must report on the job NoIssuesFound (each selected rule, and in legacy
    mode SageMaker's own evaluation of each), whatever else it said (Error, InProgress, Stopped, nothing), and the
    objective met. Read from what the scripted job wrote and SageMaker answered, not from the product's verdict."""
    violations = []
    last = output["attempts"][-1]
    job = sagemaker.jobs[last["job_name"]]
    tick = job["current"]
    if tick.status != "Completed":
        violations.append(f"succeeded although job {last['job_name']} ended {tick.status}")
    script = tick.rule_status if not isinstance(tick.rule_status, str) else None
    selected = [rule["name"] for rule in sagemaker.selected_rules(last["job_name"])]
    listed = set(script.rules or selected) if script is not None else set()
    for rule in selected:
        said = "NoIssuesFound"
        if script is None or rule not in listed:
            said = "nothing"
        elif rule == script.fired:
            said = "IssuesFound"
        elif rule in script.in_progress or (script.fired is not None):
            said = "InProgress"
        elif rule in script.errors:
            said = "Error"
        if said != "NoIssuesFound":
            violations.append(f"succeeded although rule {rule} reported {said}")
    legacy = tick.legacy_rules
    if isinstance(legacy, list):  # as the monitor's last read saw it
        legacy = legacy[min(job.get("legacy_reads", 1) - 1, len(legacy) - 1)]
    for configuration in job["request"].get("DebugRuleConfigurations", []):
        name = configuration["RuleConfigurationName"]
        said = (legacy or {}).get(name, "nothing")
        if said != "NoIssuesFound":
            violations.append(f"succeeded although SageMaker's evaluation {name} reported {said}")
    objective = output.get("objective")
    value = tick.final_metrics.get((objective or {}).get("metric_name", ""), None)
    if objective is not None and (value is None or not _meets(objective, value)):
        violations.append(f"succeeded with objective {objective} and value {value}")
    return violations


def _silence_violations(workflow: Any, harness: Any, description: dict[str, Any], cleanup_failed: bool) -> list[str]:
    """6. no end is silent: every execution that did not succeed was notified (a gave_up or workflow_error message,
    or a notification SNS kept refusing, counted and alarmed), and one that ended otherwise than by an expected end
    or a deliberate stop was alarmed (UnexpectedWorkflowErrors), whatever state it ended in; a cleanup that failed on
    every try is both (its event in the dead-letter queue, alarmed)."""
    if cleanup_failed:
        return []
    arn, status = description["executionArn"], description["status"]
    history = workflow.history(arn)
    last_state = next((e["stateEnteredEventDetails"]["name"] for e in reversed(history) if "stateEnteredEventDetails" in e), "")
    # the Error as the end's own event gives it (moto's DescribeExecution leaves out a stop's)
    ended = next(
        (e[key] for e in reversed(history) for key in ("executionFailedEventDetails", "executionAbortedEventDetails", "executionTimedOutEventDetails") if key in e),
        {},
    )
    error = ended.get("error") or description.get("error")
    expected = (status == "FAILED" and error in EXPECTED_ENDS and last_state in ("WorkflowFailed", "RemediationGaveUp")) or (
        status == "ABORTED" and error == "UserStop"
    )
    told = {message.get("event_type") for message in harness.published_since(arn)}
    violations = []
    if not told & {"gave_up", "workflow_error"} and not harness.metric_count_since(arn, NOTIFICATIONS_NOT_SENT):
        violations.append(f"execution ended {status} {error or ''} in {last_state} and no one was notified")
    if not expected and not harness.metric_count_since(arn, UNEXPECTED_WORKFLOW_ERRORS):
        violations.append(f"execution ended {status} {error or ''} in {last_state}, not an expected end, and no alarm")
    return violations


def _retries_ran_out(history: list[dict[str, Any]], error: str | None) -> bool:
    """Whether the task that failed with ``error`` failed as often in one visit as the stack's own definition
    (statemachine/remediation.asl.json, not the machine that ran: a test may run one without its Retry) allows: its
    retrier for that error's MaxAttempts + 1 tries. Read from the history."""
    definition = json.loads(ASL_PATH.read_text())["States"]
    state, failures, ran_out = "", [], False
    for event in history:
        entered = event.get("stateEnteredEventDetails")
        if entered:
            state, failures = entered["name"], []
        failed = event.get("taskFailedEventDetails") or event.get("taskTimedOutEventDetails")
        if not failed:
            continue
        failures.append(failed.get("error", ""))
        if failed.get("error") != error:
            continue
        retrier = next((r for r in definition.get(state, {}).get("Retry", []) if error in r["ErrorEquals"]), None)
        if retrier is None:
            ran_out = True  # the stack does not retry it: the first failure ends the task
            continue
        tries = sum(1 for name in failures if name in retrier["ErrorEquals"])
        ran_out = ran_out or tries >= retrier.get("MaxAttempts", 3) + 1
    return ran_out


def _cleanup_failed_on_every_try(workflow: Any, arn: str) -> bool:
    deliveries = [
        d for d in workflow.events.deliveries if d.rule.startswith("ExecutionEnded") and d.event["detail"]["executionArn"] == arn
    ]
    return bool(deliveries) and all(delivery.error is not None for delivery in deliveries)


def _meets(objective: dict[str, Any], value: float) -> bool:
    """Read the objective's JSON here, not with the product's Objective: the invariant is checked independently."""
    target = objective["target_value"]
    return value >= target if objective["type"] == "Maximize" else value <= target
