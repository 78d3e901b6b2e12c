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
NAMED_END_ERRORS = EXPECTED_ENDS | {UNEXPECTED_HANDLER_RESULT}

# The handlers' own metrics (Powertools EMF; infra/alarms.py alarms on them).
#: A transient fault handed back to the state machine (or EventBridge) for a retry: a Lambda error, not an alarm.
TRANSIENT_FAULTS_DEFERRED = "TransientFaultsDeferred"
#: An execution that failed for a reason outside EXPECTED_ENDS.
UNEXPECTED_WORKFLOW_ERRORS = "UnexpectedWorkflowErrors"
