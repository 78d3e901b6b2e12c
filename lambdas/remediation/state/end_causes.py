"""How an execution ends, by name: the Error of its Fail state, and which of those are expected (a run that gave up,
a guardrail, a refused input) rather than a fault someone must look at. Standard library only: the stack's alarms
(infra/alarms.py) and the handlers read the same names.

Every execution that does not succeed fails with one of :data:`NAMED_END_ERRORS` and a Cause that says why; the
fault-injection harness (tests/workflow/fault_harness.py) checks it under every fault it injects.
"""

from __future__ import annotations

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
#: What the launch or the input refused before anything ran, and a capacity shortage that outlasted the retries.
REFUSAL_ERRORS = ("InvalidExecutionInput", "NotEnoughTimeLeft", "InstanceHoursBudgetSpent", "TrainingCapacityUnavailable")
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

# The handlers' own metrics (Powertools EMF; infra/alarms.py alarms on them).
#: A transient fault handed back to the state machine (or EventBridge) for a retry: a Lambda error, not an alarm.
TRANSIENT_FAULTS_DEFERRED = "TransientFaultsDeferred"
#: An execution that failed for a reason outside EXPECTED_ENDS.
UNEXPECTED_WORKFLOW_ERRORS = "UnexpectedWorkflowErrors"
#: A notification SNS kept refusing (the step went on without it).
NOTIFICATIONS_NOT_SENT = "NotificationsNotSent"
