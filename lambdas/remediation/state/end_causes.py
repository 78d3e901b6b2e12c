"""How an execution ends, by name: the Error of its Fail state, and which of those are expected (a run that gave up,
a guardrail, a refused input) rather than a fault someone must look at. Standard library only: the stack's alarms
(infra/alarms.py) and the handlers read the same names.

Every execution that does not succeed fails with one of :data:`NAMED_END_ERRORS` and a Cause that says why; the
fault-injection harness (tests/workflow/fault_harness.py) checks it under every fault it injects.
"""

from __future__ import annotations

import dataclasses

#: The Error name the state machine's RemediationGaveUp state fails with, by the planner's end cause.
END_ERRORS = {
    "budget_spent": "RemediationBudgetExhausted",
    "no_remedy_left": "NoRemedyLeft",
    "algorithm_error": "TrainingAlgorithmError",
    "out_of_memory": "TrainingOutOfMemory",
    "batch_of_one": "TrainingBatchOfOne",
    "data_error": "TrainingDataError",
    "capacity_error": "TrainingCapacityError",
    "stopped": "TrainingJobStopped",
    "failed": "TrainingJobFailed",
    "monitor_limit": "MonitorLimitReached",
    "objective_missed": "ObjectiveMissed",
    "objective_unmeasured": "ObjectiveUnmeasured",
    "missing_evidence": "MissingEvidence",
    "max_runtime_exceeded": "MaxRuntimeExceeded",
    "instance_hours_spent": "InstanceHoursBudgetSpent",
    "completed": "RemediationEnded",
}
#: The state machine's guardrails (Pass states before HandleFailure, statemachine/remediation.asl.json).
GUARDRAIL_ERRORS = ("MonitorLimitExceeded", "RetrainingBudgetExceeded")
#: What the launch or the input refused before anything ran (the stack's guardrails included), and a capacity shortage
#: that outlasted the retries.
REFUSAL_ERRORS = (
    "InvalidExecutionInput",
    "NotEnoughTimeLeft",
    "InstanceHoursBudgetSpent",
    "TrainingCapacityUnavailable",
    "TooManyHyperparameters",
    "ConcurrentExecutionsLimit",
    "OutsideCostGuardrails",
)
#: Ends that are the product working as designed: notified on the topic, never an alarm.
EXPECTED_ENDS = frozenset(END_ERRORS.values()) | frozenset(GUARDRAIL_ERRORS) | frozenset(REFUSAL_ERRORS)
#: A handler's answer the workflow does not know (a bug): the one guardrail that is a fault.
UNEXPECTED_HANDLER_RESULT = "UnexpectedHandlerResult"
#: An AWS call that kept failing transiently through every retry of its task (minutes of an outage): the run ends
#: saying which call, before or without a job at stake (a healthy job's steps never end on it), and alarms.
AWS_TRANSIENT_ERROR = "AwsTransientError"
NAMED_END_ERRORS = EXPECTED_ENDS | {UNEXPECTED_HANDLER_RESULT, AWS_TRANSIENT_ERROR}
#: Error names Step Functions and Lambda give a task that failed outside the handler (a Lambda throttled or timed out
#: through every retry, a task past its TimeoutSeconds): named by AWS, alarmed.
AWS_ERROR_PREFIXES = ("Lambda.", "Sandbox.", "States.")


def is_named(error: str | None) -> bool:
    """Whether an execution's Error is one of the product's names, or AWS's for a task that failed outside a handler
    (not a handler's crash: KeyError, TypeError, ...)."""
    return bool(error) and (error in NAMED_END_ERRORS or error.startswith(AWS_ERROR_PREFIXES))

#: What StopExecution is given when someone stops an execution on purpose: `remediate cloud stop` (and the fault
#: harness, which plays it) and the stack's delete. Such an end is notified, not alarmed.
USER_STOP = "UserStop"
STACK_DELETED = "StackDeleted"
DELIBERATE_STOP_ERRORS = (USER_STOP, STACK_DELETED)
#: The Fail states an execution reaches after the workflow has notified its end itself (HandleFailure's
#: workflow_error, the plan's gave_up): any other last state means no one did.
NOTIFIED_FAIL_STATES = ("WorkflowFailed", "RemediationGaveUp")
#: The notification's Error for an execution that timed out, or was stopped (its own error, when it failed).
ENDED_ERRORS = {"TIMED_OUT": "ExecutionTimedOut", "ABORTED": "ExecutionAborted"}


@dataclasses.dataclass(frozen=True)
class EndVerdict:
    """What an ended execution (not SUCCEEDED) needs: a notification (no one has sent one) and an alarm (it ended
    otherwise than by an expected end or a deliberate stop); ``error`` and ``reason`` name why, for both."""

    error: str
    reason: str
    notify: bool
    alarm: bool


def judge_end(status: str, error: str | None, cause: str | None, last_state: str) -> EndVerdict:
    """Judge an execution's end from its status, its Error and Cause and the state it was in last, whatever that
    state: a failure reached through the workflow's own ending (a Fail state after HandleFailure or the plan) was
    notified there and is alarmed only if its Error is not an expected end; one that failed anywhere else (its
    cleanup failed, a state failed outside a Catch), timed out, or was stopped other than on purpose, is notified
    and alarmed here."""
    error, cause, where = error or "", cause or "", last_state or "an unknown state"
    said = f"{error}: {cause}" if error and cause else error or cause or "no error given"
    if status == "ABORTED":
        deliberate = error in DELIBERATE_STOP_ERRORS
        how = "stopped on purpose" if deliberate else "stopped (not by `remediate cloud stop` or the stack's delete)"
        return EndVerdict(ENDED_ERRORS[status], f"the execution was {how} in state {where} ({said})", True, not deliberate)
    if status == "TIMED_OUT":
        return EndVerdict(ENDED_ERRORS[status], f"the execution timed out in state {where} ({said})", True, True)
    name = error or "ExecutionFailed"
    if last_state in NOTIFIED_FAIL_STATES:
        return EndVerdict(name, f"the execution failed in state {where}: {said}", False, name not in EXPECTED_ENDS)
    return EndVerdict(
        name, f"the execution failed in state {where} without the workflow's own ending (no one notified): {said}", True, True
    )


# The handlers' own metrics (Powertools EMF; infra/alarms.py alarms on them).
#: A transient fault handed back to the state machine (or EventBridge) for a retry: a Lambda error, not an alarm.
TRANSIENT_FAULTS_DEFERRED = "TransientFaultsDeferred"
#: An execution that ended otherwise than by an expected end or a deliberate stop (the execution-cleanup Lambda
#: counts every end, whatever state it happened in).
UNEXPECTED_WORKFLOW_ERRORS = "UnexpectedWorkflowErrors"
#: A notification SNS kept refusing (the step went on without it).
NOTIFICATIONS_NOT_SENT = "NotificationsNotSent"
#: An exception a handler did not hand back as a transient fault or an expected refusal (counted by the handler
#: itself as it raises, in the period it happened: lambdas.remediation.handler_support.counting_errors).
UNHANDLED_ERRORS = "UnhandledErrors"
