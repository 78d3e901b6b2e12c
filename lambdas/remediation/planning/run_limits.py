"""The planner at the run's own limits: a job SageMaker stopped at its MaxRuntimeInSeconds, and the stack's
instance-hours guardrail (contracts.stack_guardrails). Pure: no AWS calls (lambdas.remediation.planning.planner calls these).
"""

from __future__ import annotations

import dataclasses

from contracts.run_spec import MAX_RUN_SECONDS
from lambdas.remediation.state.attempts import Attempt, Decision
from lambdas.remediation.state.payload import WorkflowState

#: Decision.remedy when the planner ends the run (policies.NO_REMEDY).
NO_REMEDY = "none"


@dataclasses.dataclass(frozen=True)
class Limit:
    """A limit of the run that leaves no launch: the end cause, and the sentence that says so."""

    end_cause: str
    sentence: str


def limit_reached(state: WorkflowState) -> Limit | None:
    """The relaunch budget spent, or the stack's instance-hours guardrail (None: another job may launch)."""
    if state.retraining_budget_left == 0:
        launches = state.history.num_retraining
        return Limit(
            "budget_spent",
            f"The relaunch budget is spent ({launches} launch{'' if launches == 1 else 'es'} of "
            f"max_num_retraining={state.max_num_retraining})",
        )
    spent = instance_hours_spent(state)
    return Limit("instance_hours_spent", spent) if spent else None


def instance_hours_spent(state: WorkflowState) -> str | None:
    """Why no job fits the instance-hours the stack's guardrail leaves this execution (None: one fits, or none set)."""
    left = state.instance_seconds_left
    if left is None or left // state.run_spec.instance_count >= MAX_RUN_SECONDS.low:
        return None
    return (
        f"The stack's instance-hours guardrail is spent: {state.history.instance_seconds_used / 3600:.2f} of "
        f"{state.max_instance_seconds / 3600:.2f} instance-hours used, less than a {int(MAX_RUN_SECONDS.low)} s job "
        f"on {state.run_spec.instance_count} instance(s) left (-c max_instance_hours sets it)"
    )


def continue_after_max_runtime(state: WorkflowState, attempt: Attempt) -> WorkflowState:
    """SageMaker stopped the job at its MaxRuntimeInSeconds: it ran out of time, not into a problem, so the next job
    continues from its checkpoints with the same hyperparameters (the train Lambda cuts its runtime to the time and
    instance-hours the execution has left, and refuses, naming which, when less than a job's shortest run is left),
    or the run ends saying why it cannot."""
    why = attempt.outcome_reason or f"Job {attempt.job_name} reached its MaxRuntimeInSeconds."
    if state.retraining_budget_left == 0:
        launches = state.history.num_retraining
        return _end(
            state,
            f"{why} The launch budget is spent ({launches} launch{'' if launches == 1 else 'es'} of "
            f"max_num_retraining={state.max_num_retraining}), so it cannot be continued from its checkpoints. Ending; "
            "start a new run with a longer max_run_seconds.",
            "max_runtime_exceeded",
        )
    spent = instance_hours_spent(state)
    if spent:
        return _end(state, f"{why} {spent}, so it cannot be continued. Ending.", "instance_hours_spent")
    decision = Decision(
        remedy="ResumeWithTimeLeft",
        reason=(
            f"{why} It ran out of time, not into a problem: the next job continues from its checkpoints with the same "
            f"hyperparameters ({state.run_spec.summary()}) and the time the execution has left."
        ),
        next_action="launch_new",
        resume_from=attempt.job_name,
    )
    return state.with_last_attempt(decision=decision).updated(next_action="launch_new", end_reason=None)


def _end(state: WorkflowState, reason: str, end_cause: str) -> WorkflowState:
    decision = Decision(remedy=NO_REMEDY, reason=reason, next_action="end", end_cause=end_cause)
    return state.with_last_attempt(decision=decision).updated(next_action="end", end_reason=reason)
