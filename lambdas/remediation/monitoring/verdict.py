"""What the monitor makes of a training job: keep waiting, plan, relaunch, wait for its rules, or finish.

:func:`decide` turns ``DescribeTrainingJob`` and every rule's status (read by
:mod:`lambdas.remediation.monitoring.rule_reading`) into a :class:`MonitorDecision`: an issue first, a running job next, and
what an ended job means (:mod:`lambdas.remediation.monitoring.job_endings`); :func:`apply_decision` records it on the state's
latest attempt. No AWS calls here.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

from contracts import objective_reach, rule_status
from contracts.job import STOP_TRAINING_FAILURE
from contracts.objective import ObjectiveCourse
from contracts.step_names import read_step_name
from lambdas.remediation.monitoring.job_endings import MonitorDecision, judge_completed, judge_failed, judge_stopped
from lambdas.remediation.monitoring.rule_reading import RuleReading
from lambdas.remediation.state.attempts import (
    MAX_NOT_JUDGED_CHARACTERS,
    AttemptEvidence,
    Change,
    Decision,
    Issue,
    Outcome,
    RuleStatusSummary,
)
from lambdas.remediation.state.payload import WorkflowState
from lambdas.remediation.state.payload_fields import MAX_METRICS, MAX_RULE_STATUSES
from lambdas.remediation.state.validation_messages import clip

#: Spot capacity was reclaimed; SageMaker restarts the job from its checkpoint by itself.
SPOT_INTERRUPTION_SECONDARY_STATUSES = ("Interrupted", "Restarting")


# --------------------------------------------------------------------------- deciding


def decide(
    describe_response: Mapping[str, Any],
    rule_statuses: Sequence[rule_status.RuleStatus],
    state: WorkflowState,
    saved_metrics: Mapping[str, float] | None = None,
    *,
    rules_reported: bool = True,
    foreign_job: str | None = None,
) -> MonitorDecision:
    """The next step for the state's latest job, from its description, every rule's status and (for the
    objective) the scalars the script saved.

    IssuesFound from any rule wins over the job status (a job that completed with
    a rule's issue is still planned). A job that completes is a success only if every
    rule that must report on it said NoIssuesFound (``rules_reported``: a rule status
    was read at all; ``foreign_job``: the status document under its key named that
    other job) and it meets the declared objective (job_endings.judge_completed).
    """
    objective_value = objective_metric_value(state, describe_response, saved_metrics)
    job = describe_response.get("TrainingJobName", state.history.latest_job_name)
    status = describe_response.get("TrainingJobStatus", "")
    secondary = describe_response.get("SecondaryStatus", "")
    failure = describe_response.get("FailureReason", "") or ""
    running = status == "InProgress"

    issues = tuple(rule for rule in rule_statuses if rule.RuleEvaluationStatus == rule_status.ISSUES_FOUND)
    data_issue = next(
        (rule for rule in issues if rule.issue is not None and rule.issue.kind in rule_status.DATA_ERROR_ISSUE_KINDS),
        None,
    )
    stopping = "; stopping the job" if running else ""
    if data_issue is not None:
        reason = (
            f"Job {job}: the data is wrong: {_describe_issue(data_issue)} "
            f"({clip(data_issue.issue.message, 300)}){stopping}."
        )
        return _plan_now("data_error", reason, (data_issue,), running)
    if issues and all(_out_of_reach(rule) for rule in issues):
        # the job cannot reach the objective in its epochs left: planned as a quiet miss, from what it showed so far
        reason = f"Job {job}: {objective_reach.RULE_NAME}: {clip(issues[0].issue.message, 400)}{stopping}."
        return _plan_now("objective_missed", reason, issues, running, objective_value)
    if issues:
        names = ", ".join(_describe_issue(rule) for rule in issues)
        reason = f"Job {job}: {len(issues)} rule(s) found issues: {names}{stopping}."
        return _plan_now("issues_found", reason, issues, running)
    stop_training = STOP_TRAINING_FAILURE.search(failure)
    if status in ("Failed", "Stopped") and stop_training:
        global_step, optimizer_step, evaluation = read_step_name(stop_training)
        issue = rule_status.RuleIssue(
            step=global_step, tensor="", value=None, message=clip(failure, 500), phase=None,
            optimizer_step=optimizer_step, evaluation_pass=evaluation,
        )  # fmt: skip
        rule = rule_status.RuleStatus(
            RuleConfigurationName=stop_training["rule"],
            RuleEvaluationStatus=rule_status.ISSUES_FOUND,
            StatusDetails=clip(failure, 500),
            issue=issue,
        )
        return MonitorDecision(
            next_step="plan",
            outcome="issues_found",
            reason=f"Job {job} was stopped by its {stop_training['rule']} rule at {issue.name(with_global=True)}.",
            issues=(rule,),
        )

    if running or status == "Stopping":
        transitions = state.history.num_monitor_transitions
        # As in the AWS sample: max_monitor_transitions polls are allowed; the one after them ends the run.
        if running and transitions > state.max_monitor_transitions:
            return MonitorDecision(
                next_step="plan",
                outcome="monitor_limit",
                reason=(
                    f"Job {job} is still running after {transitions} monitor transitions "
                    f"(max_monitor_transitions={state.max_monitor_transitions}); stopping it."
                ),
                stop_job=True,
            )
        if secondary in SPOT_INTERRUPTION_SECONDARY_STATUSES:
            reason = f"Job {job}: spot capacity interrupted ({secondary}); SageMaker resumes it from its checkpoint."
        else:
            reason = f"Job {job} is {status} ({secondary or 'no secondary status'}); no rule found an issue."
        return MonitorDecision(next_step="wait", outcome="running", reason=reason)

    if status == "Completed":
        return judge_completed(
            job, state, rule_statuses, objective_value, rules_reported=rules_reported, foreign_job=foreign_job
        )
    if status == "Stopped":
        return judge_stopped(job, secondary, state)
    if status == "Failed":
        return judge_failed(job, failure, state)
    raise ValueError(f"TrainingJobStatus: unknown status {status!r} for job {job}")


def objective_metric_value(
    state: WorkflowState, describe_response: Mapping[str, Any], script_metrics: Mapping[str, float] | None
) -> float | None:
    """The objective's metric for the job: its last value from SageMaker's MetricDefinitions (FinalMetricDataList),
    else the latest scalar of that name the script saved with the debugger."""
    objective = state.declared_objective()
    if objective is None:
        return None
    for item in describe_response.get("FinalMetricDataList", []):
        if item.get("MetricName") == objective.metric_name and isinstance(item.get("Value"), (int, float)):
            return float(item["Value"])
    value = (script_metrics or {}).get(objective.metric_name)
    return value if value is not None and math.isfinite(value) else None


def objective_course(state: WorkflowState, document: rule_status.RuleStatusDocument) -> ObjectiveCourse | None:
    """The objective's metric over the job, from every value of it the script saved with the debugger (None: no
    objective, the script saved none, or more than the document keeps)."""
    objective = state.declared_objective()
    metric = document.metrics.get(objective.metric_name) if objective is not None else None
    if metric is None or metric.values is None:
        return None
    return ObjectiveCourse.of(objective, metric.values)


def _plan_now(
    outcome: Outcome,
    reason: str,
    issues: tuple[rule_status.RuleStatus, ...],
    running: bool,
    objective_value: float | None = None,
) -> MonitorDecision:
    """Plan from what the rules found, stopping the job if it still runs."""
    return MonitorDecision(
        next_step="plan", outcome=outcome, reason=reason, stop_job=running, issues=issues,
        objective_value=objective_value,
    )  # fmt: skip


def _out_of_reach(rule: rule_status.RuleStatus) -> bool:
    """The issue of ObjectiveOutOfReach: the job cannot reach the objective (contracts.objective_reach)."""
    return (
        rule.RuleConfigurationName == objective_reach.RULE_NAME
        and rule.issue is not None
        and rule.issue.kind == objective_reach.OUT_OF_REACH
    )


def _describe_issue(rule: rule_status.RuleStatus) -> str:
    if rule.issue is not None:
        return f"{rule.RuleConfigurationName} at {rule.issue.name(with_global=True)}"
    return rule.RuleConfigurationName


# --------------------------------------------------------------------------- recording


def apply_decision(
    state: WorkflowState,
    decision: MonitorDecision,
    describe_response: Mapping[str, Any],
    reading: RuleReading,
    now: float | None = None,
) -> WorkflowState:
    """The state with the latest attempt updated and next_action set for the decision (``now``: epoch seconds, for
    the instance time of a job this decision stops; default the clock)."""
    statuses = list(reading.statuses) + [rule for rule in decision.issues if rule not in reading.statuses]
    summaries = [
        RuleStatusSummary(
            name=rule.RuleConfigurationName,
            status=rule.RuleEvaluationStatus,
            step=rule.issue.step if rule.issue and rule.issue.step >= 0 else None,
            not_judged=clip(rule.not_judged, MAX_NOT_JUDGED_CHARACTERS) if rule.not_judged else None,
        )
        for rule in statuses[:MAX_RULE_STATUSES]
    ]
    changes: dict[str, Any] = {
        "outcome": decision.outcome,
        "outcome_reason": decision.reason,
        "job_status": describe_response.get("TrainingJobStatus", "")[:64],
        "failure_reason": describe_response.get("FailureReason", "") or "",
        "rule_statuses": summaries,
        "metrics": _final_metrics(describe_response),
        "objective_value": decision.objective_value,
    }
    first_issue = next((rule for rule in decision.issues if rule.issue is not None), None)
    if first_issue is not None:
        changes["issue"] = Issue(
            rule=first_issue.RuleConfigurationName,
            step=first_issue.issue.step if first_issue.issue.step >= 0 else None,
            tensor=first_issue.issue.tensor,
            value=first_issue.issue.value,
            phase=first_issue.issue.phase,
            message=first_issue.issue.message,
            kind=first_issue.issue.kind,
            optimizer_step=first_issue.issue.optimizer_step if first_issue.issue.step >= 0 else None,
            evaluation_pass=first_issue.issue.evaluation_pass,
        )
    elif decision.issues:
        changes["issue"] = Issue(rule=decision.issues[0].RuleConfigurationName)
    if reading.document is not None:
        changes["evidence"] = AttemptEvidence.from_contract(
            reading.document.evidence, objective_course(state, reading.document)
        )
    updated = state.with_last_attempt(**changes)

    if decision.next_step == "relaunch" and (decision.resume_from or decision.run_spec_changes):
        # Recorded as the attempt's decision: the train step resumes from it, and the run_spec changes with it.
        updated = updated.with_last_attempt(
            decision=Decision(
                remedy="CapacityRelaunch",
                reason=decision.reason,
                next_action="launch_new",
                changes={
                    name: Change(before=getattr(updated.run_spec, name), after=value)
                    for name, value in decision.run_spec_changes.items()
                },
                resume_from=decision.resume_from,
            )
        ).updated(run_spec=updated.run_spec.with_changes(decision.run_spec_changes))
    overall = _overall_rule_status(statuses)
    history = updated.history.model_copy()
    used = _instance_seconds_used(describe_response, updated, decision, now)
    if used is not None:  # the attempt ended: its instance time counts against the stack's guardrail, once
        updated = updated.with_last_attempt(instance_seconds=used)
        history = updated.history.model_copy(update={"instance_seconds_used": history.instance_seconds_used + used})
    next_action = "monitor"
    end_reason = updated.end_reason
    if decision.next_step == "relaunch":
        history.capacity_retries += 1
        next_action = "launch_new"
    elif decision.next_step == "wait_rules":
        history.rule_waits += 1
    elif decision.next_step == "completed":
        next_action = "end"
        end_reason = decision.reason
    elif decision.next_step == "plan":
        next_action = "launch_new"  # the planner confirms it (new run_spec) or ends
    return updated.updated(
        history=history,
        job_status=changes["job_status"] or updated.job_status,
        rule_status=overall,
        next_action=next_action,
        end_reason=end_reason,
    )


#: A stopped job still runs this long (SageMaker's SIGTERM window) before it ends.
STOP_GRACE_SECONDS = 120


def _instance_seconds_used(
    describe_response: Mapping[str, Any], state: WorkflowState, decision: MonitorDecision, now: float | None
) -> int | None:
    """Instance-seconds of the attempt the decision ends, not yet counted: InstanceCount x TrainingTimeInSeconds
    once SageMaker reports it, else (a job this decision stops) its training so far plus the stop's grace, at most
    its reservation at launch. None while the attempt goes on, or once counted."""
    attempt = state.last_attempt
    if decision.next_step not in ("plan", "relaunch", "completed") or attempt is None:
        return None
    if attempt.instance_seconds is not None:
        return None
    count = int((describe_response.get("ResourceConfig") or {}).get("InstanceCount", state.run_spec.instance_count))
    reserved = attempt.reserved_instance_seconds
    seconds = describe_response.get("TrainingTimeInSeconds")
    if isinstance(seconds, int) and seconds >= 0:
        return count * seconds
    started = describe_response.get("TrainingStartTime")
    if hasattr(started, "timestamp"):
        elapsed = (time.time() if now is None else now) - started.timestamp()
        estimate = count * int(max(0.0, elapsed) + STOP_GRACE_SECONDS)
        return min(estimate, reserved) if reserved else estimate
    return reserved if reserved is not None else count * STOP_GRACE_SECONDS


def _overall_rule_status(statuses: Sequence[rule_status.RuleStatus]) -> str:
    if not statuses:
        return rule_status.IN_PROGRESS
    for status in (rule_status.ISSUES_FOUND, rule_status.ERROR, rule_status.IN_PROGRESS, rule_status.STOPPING, rule_status.STOPPED):
        if any(rule.RuleEvaluationStatus == status for rule in statuses):
            return status
    return rule_status.NO_ISSUES_FOUND


def _final_metrics(describe_response: Mapping[str, Any]) -> dict[str, float]:
    """The job's final metrics, as many as an attempt keeps (MAX_METRICS)."""
    metrics = {}
    for item in describe_response.get("FinalMetricDataList", []):
        name, value = item.get("MetricName"), item.get("Value")
        if isinstance(name, str) and 1 <= len(name) <= 64 and isinstance(value, (int, float)):
            metrics[name] = float(value)
            if len(metrics) == MAX_METRICS:
                break
    return metrics
