"""The reasons a run ends with when its last job ended in a way no remedy answers
(``lambdas.remediation.text.decision_text.outcome_reason``), whole, one test per outcome; and the decision's fields
that say so (no remedy, the outcome as the end cause, no failure answered)."""

from __future__ import annotations

from lambdas.remediation.execution_input import initial_state
from lambdas.remediation.planning.planner import plan
from lambdas.remediation.text.decision_text import outcome_reason
from tests.lambdas.remediation.decision_fields import ended


def ends_with(state, outcome: str) -> str:
    """Plan after the recorded job; the run ends on the outcome itself. Its reason."""
    planned = plan(state)
    decision = planned.last_attempt.decision
    assert ended(decision) == ("none", "end", outcome) and decision.cause is None
    assert planned.end_reason == decision.reason
    return decision.reason


def with_history(state, **counters):
    return state.updated(history={**state.history.model_dump(), **counters})


def test_completed_meeting_the_objective(reference_state, record):
    assert ends_with(record(reference_state, outcome="completed", objective_value=0.93), "completed") == (
        "Job remediation-resnet-1 completed with no rule issues after 1 attempt and test:accuracy = 0.93 meets "
        "test:accuracy >= 0.9; final hyperparameters: warmup_learning_rate=0.1, learning_rate=0.1 (+12 more)."
    )


def test_completed_without_an_objective(account_input, record):
    state = initial_state({**account_input, "objective": None})
    assert ends_with(record(state, outcome="completed"), "completed") == (
        "Job remediation-resnet-1 completed with no rule issues after 1 attempt and no objective was declared; "
        "final hyperparameters: warmup_learning_rate=0.1, learning_rate=0.1 (+12 more)."
    )


def test_objective_unmeasured(reference_state, record):
    assert ends_with(record(reference_state, outcome="objective_unmeasured"), "objective_unmeasured") == (
        "Job remediation-resnet-1 completed but never reported test:accuracy: no MetricDefinitions regex matched "
        "the log and the script saved no scalar of that name. Ending; check metric_definitions or save the metric "
        "with hook.save_scalar."
    )


def test_missing_evidence_when_the_debugger_never_reported(reference_state, record):
    said = "Job remediation-resnet-1 completed but its debugger never reported a rule status, so no rule was evaluated."
    state = record(reference_state, outcome="missing_evidence", outcome_reason=said)
    assert ends_with(state, "missing_evidence") == (
        "Job remediation-resnet-1 completed but its debugger never reported a rule status: no rule was evaluated, "
        "so the run cannot be called clean. Ending; the job's log says why its debugger did not start (a script it "
        "cannot watch unchanged is named there with the fix), and check that debug-output/ reaches the bucket."
    )
    assert ends_with(record(reference_state, outcome="missing_evidence"), "missing_evidence") == (
        "Job remediation-resnet-1 completed but its debugger never reported a rule status: no rule was evaluated, "
        "so the run cannot be called clean. Ending; the job's log says why its debugger did not start (a script it "
        "cannot watch unchanged is named there with the fix), and check that debug-output/ reaches the bucket."
    )


def test_missing_evidence_when_rules_gave_no_verdict_keeps_the_monitors_words(reference_state, record):
    said = "Rules LossNotDecreasing (Error: the rule container exited) gave no verdict on job remediation-resnet-1."
    state = record(reference_state, outcome="missing_evidence", outcome_reason=said)
    assert ends_with(state, "missing_evidence") == (
        "Rules LossNotDecreasing (Error: the rule container exited) gave no verdict on job remediation-resnet-1. "
        "Ending; look at those rules' evaluation (status details, logs)."
    )


def test_algorithm_error(reference_state, record):
    failure = "AlgorithmError: ExecuteUserScriptError: ImportError: No module named 'timm'"
    assert ends_with(record(reference_state, outcome="algorithm_error", failure_reason=failure), "algorithm_error") == (
        "Job remediation-resnet-1 failed in the training code, not because a rule fired: AlgorithmError: "
        "ExecuteUserScriptError: ImportError: No module named 'timm'. Other hyperparameters would not fix that; "
        "ending."
    )


def test_capacity_error(reference_state, record):
    failure = "CapacityError: Unable to provision requested ML compute capacity"
    state = record(with_history(reference_state, capacity_retries=3), outcome="capacity_error", failure_reason=failure)
    assert ends_with(state, "capacity_error") == (
        "Job remediation-resnet-1 got no ml.m5.xlarge capacity after 3 retries: CapacityError: Unable to provision "
        "requested ML compute capacity. Ending; try another instance type or region."
    )


def test_a_failure_reason_that_ends_with_a_full_stop_gets_no_second_one(reference_state, record):
    failure = "CapacityError: Unable to provision requested ML compute capacity."
    state = record(with_history(reference_state, capacity_retries=3), outcome="capacity_error", failure_reason=failure)
    assert ends_with(state, "capacity_error") == (
        "Job remediation-resnet-1 got no ml.m5.xlarge capacity after 3 retries: CapacityError: Unable to provision "
        "requested ML compute capacity. Ending; try another instance type or region."
    )


def test_stopped_outside_the_workflow(reference_state, record):
    assert ends_with(record(reference_state, outcome="stopped"), "stopped") == (
        "Job remediation-resnet-1 was stopped outside the workflow; ending."
    )


def test_failed(reference_state, record):
    failure = "ClientError: the role cannot be assumed"
    assert ends_with(record(reference_state, outcome="failed", failure_reason=failure), "failed") == (
        "Job remediation-resnet-1 failed: ClientError: the role cannot be assumed; ending."
    )


def test_monitor_limit(reference_state, record):
    state = record(reference_state, outcome="monitor_limit")
    state = with_history(state, num_monitor_transitions=state.max_monitor_transitions)
    assert ends_with(state, "monitor_limit") == (
        "Job remediation-resnet-1 was still running after 281 monitor transitions (max_monitor_transitions=281); "
        "ending."
    )


def test_max_runtime_exceeded(reference_state, record):
    """The planner continues such a job from its checkpoints (planning/test_run_limits.py); the text is kept for a
    caller that ends on it."""
    state = record(reference_state, outcome="max_runtime_exceeded", failure_reason="MaxRuntimeExceeded: the job ran past 3600 s")
    assert outcome_reason(state, state.last_attempt) == (
        "Job remediation-resnet-1 reached its MaxRuntimeInSeconds: MaxRuntimeExceeded: the job ran past 3600 s; "
        "ending."
    )
