"""Bad data is not remediable: NaN inputs and labels outside the model's classes end the run at once, saying
why, without a relaunch; the monitor reads them from the rule's issue kind or the job's failure reason."""

from __future__ import annotations

import pytest

from contracts import rule_status
from lambdas.plan_handler import end_error
from lambdas.remediation.execution_input import initial_state
from lambdas.remediation.monitoring import verdict as monitoring
from lambdas.remediation.planning.planner import plan
from tests.lambdas.remediation.decision_fields import ended

JOB = "remediation-resnet-0123456789-001"


def _described(status: str, reason: str = "") -> dict:
    return {"TrainingJobName": JOB, "TrainingJobStatus": status, "SecondaryStatus": status, "FailureReason": reason}


@pytest.mark.parametrize(
    "reason",
    [
        "AlgorithmError: IndexError: Target 12 is out of bounds.",
        "AlgorithmError: RuntimeError: CUDA error: device-side assert triggered",
        "InvalidChannel: channel 'train' (env SM_CHANNEL_TRAIN): labels must be class indices 0-9",
        "AlgorithmError: ValueError: Input contains NaN.",
        "AlgorithmError: DataError: 3 rows of x.npy are NaN",
    ],
)
def test_the_monitor_reads_a_data_error_from_the_failure_reason(account_input, reason):
    state = initial_state(account_input).with_new_attempt(JOB)
    decision = monitoring.decide(_described("Failed", reason), [], state)
    assert (decision.next_step, decision.outcome, decision.issues) == ("plan", "data_error", ())


def test_a_rule_that_found_a_non_finite_input_is_a_data_error_and_the_job_is_stopped(account_input):
    state = initial_state(account_input).with_new_attempt(JOB)
    issue = rule_status.RuleIssue(
        step=0, tensor="ResNet_input_0", value=float("nan"), message="input has 12 NaN values",
        kind=rule_status.NAN_INPUT,
    )
    fired = rule_status.RuleStatus("ExplodingTensor", rule_status.ISSUES_FOUND, issue=issue)
    decision = monitoring.decide(_described("InProgress"), [fired], state)
    assert (decision.outcome, decision.stop_job) == ("data_error", True)
    assert [(status.RuleConfigurationName, status.issue.step, status.issue.kind) for status in decision.issues] == [
        ("ExplodingTensor", 0, rule_status.NAN_INPUT)
    ]


def test_the_planner_ends_a_data_error_at_once_without_a_relaunch(account_input, record):
    state = initial_state({**account_input, "max_num_retraining": 10})
    planned = plan(record(state, outcome="data_error", failure_reason="AlgorithmError: IndexError: Target 12 is out of bounds."))
    assert planned.next_action == "end"
    decision = planned.last_attempt.decision
    assert ended(decision) == ("none", "end", "data_error") and decision.cause == "data_error"
    assert decision.changes == {} and planned.history.num_retraining == 1  # its words: test_reasons.py
    assert end_error(planned) == "TrainingDataError"
