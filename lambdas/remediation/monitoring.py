"""What the monitor makes of a training job: keep waiting, plan, relaunch or finish.

:func:`read_rule_statuses` gathers the debugger's rule statuses (our
``rule-status.json`` in the artifacts bucket; in legacy mode also SageMaker's
``DebugRuleEvaluationStatuses``); :func:`decide` turns them and
``DescribeTrainingJob`` into a :class:`MonitorDecision`; :func:`apply_decision`
records it on the state's latest attempt. No AWS calls in ``decide`` or
``apply_decision``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from botocore.exceptions import ClientError

import contracts
from contracts import bucket_layout, rule_status
from contracts.job import DATA_ERROR_FAILURE, OUT_OF_MEMORY_FAILURE, STOP_TRAINING_FAILURE
from contracts.remedies import show
from contracts.run_spec import CAPACITY_RELAUNCHES
from lambdas.remediation.attempts import AttemptEvidence, Issue, Outcome, RuleStatusSummary
from lambdas.remediation.payload import WorkflowState
from lambdas.remediation.payload_fields import MAX_METRICS, MAX_RULE_STATUSES
from lambdas.remediation.validation_messages import clip

NextStep = Literal["wait", "plan", "relaunch", "completed"]

#: Capacity and internal errors are SageMaker's, not the run_spec's: relaunch this many times with the same spec
#: (stated with the execution's bounds, which count these launches).
CAPACITY_RETRIES = CAPACITY_RELAUNCHES
#: FailureReason prefixes SageMaker uses when it could not run the job (not the training code's fault).
CAPACITY_FAILURES = ("CapacityError", "InsufficientCapacityError", "InternalServerError", "InternalFailure")
#: Spot capacity was reclaimed; SageMaker restarts the job from its checkpoint by itself.
SPOT_INTERRUPTION_SECONDARY_STATUSES = ("Interrupted", "Restarting")


@dataclasses.dataclass(frozen=True)
class MonitorDecision:
    next_step: NextStep
    outcome: Outcome
    reason: str
    stop_job: bool = False
    issues: tuple[rule_status.RuleStatus, ...] = ()
    #: The objective's metric as the job reported it, when there is an objective and a value.
    objective_value: float | None = None


@dataclasses.dataclass(frozen=True)
class RuleReading:
    """The rule statuses for a job, and our status document when there is one."""

    statuses: tuple[rule_status.RuleStatus, ...]
    document: rule_status.RuleStatusDocument | None = None


# --------------------------------------------------------------------------- reading


def read_rule_statuses(
    s3_client: Any, state: WorkflowState, job_name: str, describe_response: Mapping[str, Any]
) -> RuleReading:
    """Our rule-status.json (absent while the job starts: no statuses yet), plus SageMaker's in legacy mode."""
    document = read_rule_status_document(s3_client, state.run_spec.bucket, job_name)
    statuses = list(document.rules) if document else []
    if state.run_spec.legacy_sagemaker_debugger:
        statuses += rule_status.rule_statuses_from_sagemaker(describe_response.get("DebugRuleEvaluationStatuses", []))
    return RuleReading(statuses=tuple(statuses), document=document)


def read_rule_status_document(s3_client: Any, bucket: str, job_name: str) -> rule_status.RuleStatusDocument | None:
    """None while the job has not written its status yet.

    The key is listed before it is read: the monitor's s3:ListBucket grant is
    conditioned on the debug-output/ prefix, and a GetObject of a missing key
    answers 403 (not 404) to a caller whose ListBucket does not cover the request.
    """
    key = bucket_layout.rule_status_key(job_name)
    listing = s3_client.list_objects_v2(Bucket=bucket, Prefix=key, MaxKeys=1)
    if not any(item["Key"] == key for item in listing.get("Contents", [])):
        return None
    try:
        response = s3_client.get_object(Bucket=bucket, Key=key)
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound"):
            return None
        raise
    body = response["Body"].read()
    try:
        return rule_status.RuleStatusDocument.from_json(body)
    except contracts.ContractError as error:
        raise contracts.ContractError(f"s3://{bucket}/{key}", str(error)) from None


# --------------------------------------------------------------------------- deciding


def decide(
    describe_response: Mapping[str, Any],
    rule_statuses: Sequence[rule_status.RuleStatus],
    state: WorkflowState,
    saved_metrics: Mapping[str, float] | None = None,
    *,
    rules_reported: bool = True,
) -> MonitorDecision:
    """The next step for the state's latest job, from its description, every rule's status and (for the
    objective) the scalars the script saved.

    IssuesFound from any rule wins over the job status (a job that completed with
    a rule's issue is still planned); a rule in Error is reported, not acted on. A
    job that completes is a success only if its rules reported (``rules_reported``:
    a rule status was read) and it meets the declared objective.
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
    if data_issue is not None:
        stopping = "; stopping the job" if running else ""
        return MonitorDecision(
            next_step="plan",
            outcome="data_error",
            reason=(
                f"Job {job}: the data is wrong: {_describe_issue(data_issue)} "
                f"({clip(data_issue.issue.message, 300)}){stopping}."
            ),
            stop_job=running,
            issues=(data_issue,),
        )
    if issues:
        names = ", ".join(_describe_issue(rule) for rule in issues)
        stopping = "; stopping the job" if running else ""
        return MonitorDecision(
            next_step="plan",
            outcome="issues_found",
            reason=f"Job {job}: {len(issues)} rule(s) found issues: {names}{stopping}.",
            stop_job=running,
            issues=issues,
        )
    stop_training = STOP_TRAINING_FAILURE.search(failure)
    if status in ("Failed", "Stopped") and stop_training:
        rule = rule_status.RuleStatus(
            RuleConfigurationName=stop_training["rule"],
            RuleEvaluationStatus=rule_status.ISSUES_FOUND,
            StatusDetails=clip(failure, 500),
            issue=rule_status.RuleIssue(
                step=int(stop_training["step"]), tensor="", value=None, message=clip(failure, 500), phase=None
            ),
        )
        return MonitorDecision(
            next_step="plan",
            outcome="issues_found",
            reason=f"Job {job} was stopped by its {stop_training['rule']} rule at step {stop_training['step']}.",
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
        if not rules_reported:
            return MonitorDecision(
                next_step="plan",
                outcome="missing_evidence",
                reason=(
                    f"Job {job} completed but its debugger never reported a rule status, so no rule was evaluated "
                    "and quiet rules cannot be claimed: the script created no hook (smd.Hook.create_from_json_file()) "
                    "or its debug output never reached the bucket."
                ),
                objective_value=objective_value,
            )
        return _judge_completed(job, state, objective_value)
    if status == "Stopped":
        return MonitorDecision(
            next_step="plan", outcome="stopped", reason=f"Job {job} was stopped outside the workflow."
        )
    if status == "Failed":
        if failure.startswith(CAPACITY_FAILURES):
            # A relaunch is a launch like any other: it counts against max_num_retraining, as in the AWS sample.
            if state.history.capacity_retries < CAPACITY_RETRIES and state.retraining_budget_left > 0:
                return MonitorDecision(
                    next_step="relaunch",
                    outcome="capacity_error",
                    reason=f"Job {job} could not run ({clip(failure, 300)}); relaunching once with the same run_spec.",
                )
            again = (
                f"again ({clip(failure, 300)}) after {CAPACITY_RETRIES} relaunch"
                if state.history.capacity_retries
                else f"({clip(failure, 300)}) and the launch budget is spent (max_num_retraining="
                f"{state.max_num_retraining})"
            )
            return MonitorDecision(next_step="plan", outcome="capacity_error", reason=f"Job {job} could not run {again}.")
        if DATA_ERROR_FAILURE.search(failure):
            return MonitorDecision(
                next_step="plan",
                outcome="data_error",
                reason=f"Job {job} failed on its data: {clip(failure, 500)}",
            )
        if OUT_OF_MEMORY_FAILURE.search(failure):
            return MonitorDecision(
                next_step="plan",
                outcome="out_of_memory",
                reason=f"Job {job} ran out of memory: {clip(failure, 500)}",
            )
        if failure.startswith("AlgorithmError") or "ExitCode" in failure or "ExecuteUserScriptError" in failure:
            return MonitorDecision(
                next_step="plan",
                outcome="algorithm_error",
                reason=f"Job {job} failed in the training code: {clip(failure, 500)}",
            )
        return MonitorDecision(
            next_step="plan", outcome="failed", reason=f"Job {job} failed: {clip(failure, 500) or 'no reason given'}"
        )
    raise ValueError(f"TrainingJobStatus: unknown status {status!r} for job {job}")


def _judge_completed(job: str, state: WorkflowState, value: float | None) -> MonitorDecision:
    """A completed job with quiet rules is a success only if it meets the declared objective."""
    objective = state.declared_objective()
    if objective is None:
        return MonitorDecision(
            next_step="completed",
            outcome="completed",
            reason=f"Job {job} completed and no rule found an issue; no objective was declared. Final "
            f"hyperparameters: {state.run_spec.summary(400)}.",
            objective_value=value,
        )
    if value is None:
        return MonitorDecision(
            next_step="plan",
            outcome="objective_unmeasured",
            reason=f"Job {job} completed but never reported {objective.metric_name}, so {objective.describe()} "
            "cannot be judged.",
        )
    if objective.met(value):
        return MonitorDecision(
            next_step="completed",
            outcome="completed",
            reason=f"Job {job} completed, no rule found an issue and {objective.metric_name} = {show(value)} meets "
            f"{objective.describe()}. Final hyperparameters: {state.run_spec.summary(400)}.",
            objective_value=value,
        )
    return MonitorDecision(
        next_step="plan",
        outcome="objective_missed",
        reason=f"Job {job} completed with quiet rules but {objective.metric_name} = {show(value)} misses "
        f"{objective.describe()} by {show(objective.shortfall(value))}.",
        objective_value=value,
    )


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


def metrics_saved_by_script(document: rule_status.RuleStatusDocument | None) -> dict[str, float]:
    if document is None:
        return {}
    return {name: metric.value for name, metric in document.metrics.items() if metric.value is not None}


def _describe_issue(rule: rule_status.RuleStatus) -> str:
    if rule.issue is not None:
        return f"{rule.RuleConfigurationName} at step {rule.issue.step}"
    return rule.RuleConfigurationName


# --------------------------------------------------------------------------- recording


def apply_decision(
    state: WorkflowState,
    decision: MonitorDecision,
    describe_response: Mapping[str, Any],
    reading: RuleReading,
) -> WorkflowState:
    """The state with the latest attempt updated and next_action set for the decision."""
    statuses = list(reading.statuses) + [rule for rule in decision.issues if rule not in reading.statuses]
    summaries = [
        RuleStatusSummary(
            name=rule.RuleConfigurationName,
            status=rule.RuleEvaluationStatus,
            step=rule.issue.step if rule.issue and rule.issue.step >= 0 else None,
        )
        for rule in statuses[:MAX_RULE_STATUSES]
    ]
    changes: dict[str, Any] = {
        "outcome": decision.outcome,
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
        )
    elif decision.issues:
        changes["issue"] = Issue(rule=decision.issues[0].RuleConfigurationName)
    if reading.document is not None:
        changes["evidence"] = AttemptEvidence.from_contract(reading.document.evidence)
    updated = state.with_last_attempt(**changes)

    overall = _overall_rule_status(statuses)
    history = updated.history.model_copy()
    next_action = "monitor"
    end_reason = updated.end_reason
    if decision.next_step == "relaunch":
        history.capacity_retries += 1
        next_action = "launch_new"
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
