"""What a job that has ended means: a success, a reason to plan, a relaunch, or rules still evaluating.

* Completed: a success only if every rule that must report on the job (each selected rule, and in legacy mode
  SageMaker's evaluation of it besides) says NoIssuesFound and the objective is met. A rule still InProgress (or not
  reported yet) is waited for, a bounded number of times (``contracts.run_spec.RULE_WAITS``); a rule in Error or
  Stopped, or one that never reported in time, is missing evidence, said so: quiet rules are never claimed from
  silence.
* Stopped: by SageMaker at the job's MaxRuntimeInSeconds (SecondaryStatus MaxRuntimeExceeded: the planner resumes
  from its checkpoints with the time left, or ends saying so); at its MaxWaitTimeInSeconds (MaxWaitTimeExceeded: no
  spot capacity in time, a capacity problem: relaunched after a delay, on demand if the run_spec allows it); or by
  someone else.
* Failed: capacity (relaunched after a delay), data, memory, the training code, or anything else.

No AWS calls: :mod:`lambdas.remediation.monitoring.verdict` gathers what is read and records what is decided.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from contracts import rule_selection, rule_status
from contracts.job import BATCH_OF_ONE_FAILURE, DATA_ERROR_FAILURE, OUT_OF_MEMORY_FAILURE
from contracts.remedies import show
from contracts.run_spec import CAPACITY_RELAUNCHES, RULE_WAITS
from lambdas.remediation.state.attempts import Outcome
from lambdas.remediation.state.payload import WorkflowState
from lambdas.remediation.state.validation_messages import clip
from lambdas.remediation.text import loss_text

NextStep = Literal["wait", "wait_rules", "plan", "relaunch", "completed"]

#: Capacity and internal errors are SageMaker's, not the run_spec's: relaunch this many times with the same spec
#: (stated with the execution's bounds, which count these launches).
CAPACITY_RETRIES = CAPACITY_RELAUNCHES
#: FailureReason prefixes SageMaker uses when it could not run the job (not the training code's fault).
CAPACITY_FAILURES = ("CapacityError", "InsufficientCapacityError", "InternalServerError", "InternalFailure")
#: SecondaryStatus of a job SageMaker stopped at its own limits (StoppingCondition).
MAX_RUNTIME_EXCEEDED = "MaxRuntimeExceeded"
MAX_WAIT_TIME_EXCEEDED = "MaxWaitTimeExceeded"
#: Rule evaluation statuses that will not change into a verdict: the rule's evidence is missing.
NO_VERDICT = (rule_status.ERROR, rule_status.STOPPED)


@dataclasses.dataclass(frozen=True)
class MonitorDecision:
    next_step: NextStep
    outcome: Outcome
    reason: str
    stop_job: bool = False
    issues: tuple[rule_status.RuleStatus, ...] = ()
    #: The objective's metric as the job reported it, when there is an objective and a value.
    objective_value: float | None = None
    #: A relaunch's run_spec changes (on demand after spot capacity never came) and the job it resumes from.
    run_spec_changes: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    resume_from: str | None = None


# --------------------------------------------------------------------------- completed


def rule_verdicts(
    statuses: Sequence[rule_status.RuleStatus], state: WorkflowState
) -> tuple[list[str], list[str], list[str]]:
    """(clean, pending, without a verdict) among the rules that must report on the job: NoIssuesFound; InProgress,
    Stopping or not reported yet; Error or Stopped ("name (status: details)")."""
    by_name = {status.RuleConfigurationName: status for status in statuses}
    run_spec = state.run_spec
    clean, pending, missing = [], [], []
    for name in rule_selection.reporting_rule_names(run_spec.rules, run_spec.framework, run_spec.legacy_sagemaker_debugger):
        status = by_name.get(name)
        if status is not None and status.RuleEvaluationStatus == rule_status.NO_ISSUES_FOUND:
            clean.append(name)
        elif status is not None and status.RuleEvaluationStatus in NO_VERDICT:
            details = f": {clip(status.StatusDetails, 200)}" if status.StatusDetails else ""
            missing.append(f"{name} ({status.RuleEvaluationStatus}{details})")
        else:
            pending.append(name)
    return clean, pending, missing


def judge_completed(
    job: str,
    state: WorkflowState,
    statuses: Sequence[rule_status.RuleStatus],
    objective_value: float | None,
    *,
    rules_reported: bool,
    foreign_job: str | None = None,
) -> MonitorDecision:
    """A completed job with no issue found: success only with every rule's NoIssuesFound and the objective met."""
    if foreign_job is not None:
        return MonitorDecision(
            next_step="plan",
            outcome="missing_evidence",
            reason=(
                f"Job {job} completed but the rule-status document under its key names job {foreign_job}: it is not "
                "this job's evidence (another run's job wrote or copied it), so quiet rules cannot be claimed."
            ),
            objective_value=objective_value,
        )
    if not rules_reported:
        return MonitorDecision(
            next_step="plan",
            outcome="missing_evidence",
            reason=(
                f"Job {job} completed but its debugger never reported a rule status, so no rule was evaluated "
                "and quiet rules cannot be claimed: the debugger did not start in the job (its log says why: a "
                "script it cannot watch unchanged is named there with the fix) or its debug output never reached "
                "the bucket."
            ),
            objective_value=objective_value,
        )
    clean, pending, missing = rule_verdicts(statuses, state)
    if missing:
        return MonitorDecision(
            next_step="plan",
            outcome="missing_evidence",
            reason=(
                f"Job {job} completed but rule(s) {', '.join(missing)} gave no verdict: their evidence is missing, so "
                "quiet rules cannot be claimed."
            ),
            objective_value=objective_value,
        )
    if pending:
        waits = state.history.rule_waits
        if waits < RULE_WAITS and state.history.num_monitor_transitions <= state.max_monitor_transitions:
            return MonitorDecision(
                next_step="wait_rules",
                outcome="running",
                reason=(
                    f"Job {job} completed; rule(s) {', '.join(pending)} still evaluating (wait {waits + 1} of "
                    f"{RULE_WAITS})."
                ),
                objective_value=objective_value,
            )
        return MonitorDecision(
            next_step="plan",
            outcome="missing_evidence",
            reason=(
                f"Job {job} completed but rule(s) {', '.join(pending)} were still evaluating after {waits} waits: "
                "their verdict never came, so quiet rules cannot be claimed."
            ),
            objective_value=objective_value,
        )
    return _judge_objective(job, state, objective_value)


def _judge_objective(job: str, state: WorkflowState, value: float | None) -> MonitorDecision:
    """A completed job whose every rule said NoIssuesFound is a success only if it meets the declared objective."""
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
            f"{objective.describe()}. Final hyperparameters: {state.run_spec.summary(400)}."
            f"{loss_text.success_notes(state.run_spec)}",
            objective_value=value,
        )
    return MonitorDecision(
        next_step="plan",
        outcome="objective_missed",
        reason=f"Job {job} completed with quiet rules but {objective.metric_name} = {show(value)} misses "
        f"{objective.describe()} by {show(objective.shortfall(value))}.",
        objective_value=value,
    )


# --------------------------------------------------------------------------- stopped and failed


def judge_stopped(job: str, secondary: str, state: WorkflowState) -> MonitorDecision:
    if secondary == MAX_RUNTIME_EXCEEDED:
        limit = _max_runtime(state)
        return MonitorDecision(
            next_step="plan",
            outcome="max_runtime_exceeded",
            reason=f"Job {job} reached its MaxRuntimeInSeconds{limit} and SageMaker stopped it (MaxRuntimeExceeded).",
        )
    if secondary == MAX_WAIT_TIME_EXCEEDED:
        return _capacity(
            job,
            state,
            "no spot capacity came within its MaxWaitTimeInSeconds (MaxWaitTimeExceeded)",
            spot_wait=True,
        )
    return MonitorDecision(next_step="plan", outcome="stopped", reason=f"Job {job} was stopped outside the workflow.")


def _max_runtime(state: WorkflowState) -> str:
    attempt = state.last_attempt
    if attempt is None or not attempt.reserved_instance_seconds:
        return ""
    return f" ({attempt.reserved_instance_seconds // max(1, state.run_spec.instance_count)} s)"


def judge_failed(job: str, failure: str, state: WorkflowState) -> MonitorDecision:
    if failure.startswith(CAPACITY_FAILURES):
        return _capacity(job, state, f"it could not run ({clip(failure, 300)})")
    if DATA_ERROR_FAILURE.search(failure):
        return MonitorDecision(next_step="plan", outcome="data_error", reason=f"Job {job} failed on its data: {clip(failure, 500)}")
    if OUT_OF_MEMORY_FAILURE.search(failure):
        return MonitorDecision(
            next_step="plan", outcome="out_of_memory", reason=f"Job {job} ran out of memory: {clip(failure, 500)}"
        )
    if BATCH_OF_ONE_FAILURE.search(failure):
        return MonitorDecision(
            next_step="plan",
            outcome="batch_of_one",
            reason=f"Job {job} failed on a training batch of one sample: {clip(failure, 500)}",
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


def _capacity(job: str, state: WorkflowState, what: str, spot_wait: bool = False) -> MonitorDecision:
    """Capacity is SageMaker's problem, not the run_spec's: relaunch after a delay (the state's
    capacity_wait_seconds), once; a spot job that never got capacity comes back on demand if the run_spec allows it,
    from its own checkpoints."""
    delay = f"after {state.capacity_wait_seconds} s"
    if state.history.capacity_retries < CAPACITY_RETRIES and state.retraining_budget_left > 0:
        changes: dict[str, Any] = {}
        how = "with the same run_spec"
        if spot_wait and state.run_spec.use_spot_instances and state.run_spec.spot_fallback_on_demand:
            changes = {"use_spot_instances": False}
            how = "on demand (spot_fallback_on_demand), from its checkpoints"
        elif spot_wait:
            how = "on spot again, from its checkpoints (set spot_fallback_on_demand to relaunch on demand)"
        return MonitorDecision(
            next_step="relaunch",
            outcome="capacity_error",
            reason=f"Job {job}: {what}; relaunching {delay} {how}.",
            run_spec_changes=changes,
            resume_from=job if spot_wait else None,
        )
    if state.history.capacity_retries:
        again = f"again after {CAPACITY_RETRIES} relaunch"
    else:
        again = f"and the launch budget is spent (max_num_retraining={state.max_num_retraining})"
    return MonitorDecision(next_step="plan", outcome="capacity_error", reason=f"Job {job}: {what} {again}.")
