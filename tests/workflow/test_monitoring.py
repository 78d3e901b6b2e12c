"""The monitor's decisions, rule by rule and status by status."""

from __future__ import annotations

import datetime

import boto3
import pytest
from moto import mock_aws

import contracts
from contracts import bucket_layout, rule_status
from contracts.rule_selection import DEFAULT_RULES
from lambdas.remediation.execution_input import initial_state
from lambdas.remediation.monitoring import rule_reading
from lambdas.remediation.monitoring import verdict as monitoring

INPUT = {"bucket": "artifacts-bucket", "region": "us-east-1", "sm_role": "arn:aws:iam::123456789012:role/SageMaker"}
JOB = "remediation-resnet-0123456789-001"


def _state(**overrides):
    return initial_state({**INPUT, **overrides}).with_new_attempt(JOB)


def _described(status="InProgress", secondary="Training", failure=""):
    described = {"TrainingJobName": JOB, "TrainingJobStatus": status, "SecondaryStatus": secondary}
    if failure:
        described["FailureReason"] = failure
    return described


def _rule(name, status, step=None):
    issue = rule_status.RuleIssue(step=step, tensor="loss", value=1.0, message="fired") if step is not None else None
    return rule_status.RuleStatus(name, status, issue=issue)


#: Every default rule's verdict at the end of a clean job.
QUIET = [_rule(name, rule_status.NO_ISSUES_FOUND) for name in DEFAULT_RULES]


def test_every_rule_is_considered_not_only_the_first():
    rules = [
        _rule("ExplodingTensor", rule_status.NO_ISSUES_FOUND),
        _rule("VanishingGradient", rule_status.IN_PROGRESS),
        _rule("LossNotDecreasing", rule_status.ISSUES_FOUND, step=40),
    ]
    decision = monitoring.decide(_described(), rules, _state())
    assert (decision.next_step, decision.outcome, decision.stop_job) == ("plan", "issues_found", True)
    assert [(rule.RuleConfigurationName, rule.issue.step) for rule in decision.issues] == [("LossNotDecreasing", 40)]


def test_issues_on_a_job_that_already_ended_do_not_stop_it_again():
    decision = monitoring.decide(
        _described("Stopped", "Stopped"), [_rule("ExplodingTensor", rule_status.ISSUES_FOUND, step=2)], _state()
    )
    assert (decision.next_step, decision.stop_job) == ("plan", False)


@pytest.mark.parametrize(
    ("described", "expected"),
    [
        (_described(), ("wait", "running")),
        (_described(secondary="Starting"), ("wait", "running")),
        (_described("Stopping", "Stopping"), ("wait", "running")),
        (_described(secondary="Interrupted"), ("wait", "running")),
        (_described(secondary="Restarting"), ("wait", "running")),
        (_described("Completed", "Completed"), ("wait_rules", "running")),  # no verdict from its rules yet
        (_described("Stopped", "Stopped"), ("plan", "stopped")),
        (
            _described("Failed", "Failed", "AlgorithmError: ExecuteUserScriptError: ExitCode 1"),
            ("plan", "algorithm_error"),
        ),
        (
            _described("Failed", "Failed", "CapacityError: Unable to provision requested ML compute capacity."),
            ("relaunch", "capacity_error"),
        ),
        (
            _described("Failed", "Failed", "InternalServerError: We encountered an internal error."),
            ("relaunch", "capacity_error"),
        ),
        (_described("Failed", "Failed", "ClientError: the role cannot be assumed"), ("plan", "failed")),
    ],
)
def test_decisions_by_job_status(described, expected):
    decision = monitoring.decide(described, [], _state())
    assert (decision.next_step, decision.outcome) == expected
    assert decision.stop_job is False


def _completed(metrics=()):
    described = _described("Completed", "Completed")
    described["FinalMetricDataList"] = [{"MetricName": name, "Value": value} for name, value in metrics]
    return described


@pytest.mark.parametrize(
    ("final_metrics", "saved", "expected", "value"),
    [
        ([("test:accuracy", 0.97)], {}, ("completed", "completed"), 0.97),
        ([("test:accuracy", 0.48)], {}, ("plan", "objective_missed"), 0.48),
        ([], {"test:accuracy": 0.95}, ("completed", "completed"), 0.95),  # from the script's saved scalars
        ([("test:accuracy", 0.5)], {"test:accuracy": 0.99}, ("plan", "objective_missed"), 0.5),  # the log wins
        ([("train:loss", 0.1)], {"accuracy": 0.99}, ("plan", "objective_unmeasured"), None),
    ],
)
def test_a_completed_job_is_a_success_only_if_it_meets_the_objective(final_metrics, saved, expected, value):
    decision = monitoring.decide(_completed(final_metrics), QUIET, _state(), saved)
    assert (decision.next_step, decision.outcome) == expected
    assert decision.objective_value == value


def test_a_completed_job_whose_rules_never_reported_is_missing_evidence_not_a_success():
    decision = monitoring.decide(_completed([("test:accuracy", 0.99)]), [], _state(), rules_reported=False)
    assert (decision.next_step, decision.outcome) == ("plan", "missing_evidence")
    # the planner's end reason reads "never reported a rule status" in it (decision_text.outcome_reason)
    assert decision.reason == (
        f"Job {JOB} completed but its debugger never reported a rule status, so no rule was evaluated and quiet rules "
        "cannot be claimed: the debugger did not start in the job (its log says why: a script it cannot watch "
        "unchanged is named there with the fix) or its debug output never reached the bucket."
    )
    assert decision.objective_value == 0.99  # still recorded for the report


def test_the_reasons_say_the_metric_the_target_and_the_gap():
    missed = monitoring.decide(_completed([("test:accuracy", 0.48)]), QUIET, _state())
    assert (missed.outcome, missed.objective_value) == ("objective_missed", 0.48)
    assert missed.reason == f"Job {JOB} completed with quiet rules but test:accuracy = 0.48 misses test:accuracy >= 0.9 by 0.42."
    unmeasured = monitoring.decide(_completed(), QUIET, _state())
    assert (unmeasured.outcome, unmeasured.objective_value) == ("objective_unmeasured", None)
    assert unmeasured.reason == (
        f"Job {JOB} completed but never reported test:accuracy, so test:accuracy >= 0.9 cannot be judged."
    )


def test_without_an_objective_a_quiet_completed_job_succeeds_and_says_none_was_declared():
    decision = monitoring.decide(_completed(), QUIET, _state(objective=None))
    assert (decision.next_step, decision.outcome) == ("completed", "completed")
    assert decision.reason == (
        f"Job {JOB} completed and no rule found an issue; no objective was declared. Final hyperparameters: "
        "warmup_learning_rate=0.1, learning_rate=0.1, add_batch_norm=false, num_epochs=2, activation=elu, "
        "batch_size=128, grad_clip=0, weight_decay=0.0001, dropout=0, init_scale=1, class_weighting=none, "
        "early_stopping_patience=0, normalize_inputs=true, num_workers=0."
    )


def test_the_objective_value_is_recorded_on_the_attempt():
    state = _state()
    described = _completed([("test:accuracy", 0.97)])
    decision = monitoring.decide(described, QUIET, state)
    recorded = monitoring.apply_decision(state, decision, described, rule_reading.RuleReading(statuses=tuple(QUIET)))
    assert recorded.last_attempt.objective_value == 0.97 and recorded.next_action == "end"


def test_a_capacity_error_is_retried_only_once():
    state = _state()
    state = state.updated(history=state.history.model_copy(update={"capacity_retries": 1}))
    decision = monitoring.decide(_described("Failed", "Failed", "CapacityError: no capacity"), [], state)
    assert (decision.next_step, decision.outcome) == ("plan", "capacity_error")


def test_a_rule_stop_is_read_from_the_failure_reason():
    failure = "AlgorithmError: ExecuteUserScriptError: StopTraining: rule VanishingGradient found an issue at step 17"
    decision = monitoring.decide(_described("Failed", "Failed", failure), [], _state())
    assert (decision.next_step, decision.outcome) == ("plan", "issues_found")
    assert decision.issues[0].RuleConfigurationName == "VanishingGradient" and decision.issues[0].issue.step == 17


def test_the_monitor_limit_stops_a_running_job():
    """As in the AWS sample: max_monitor_transitions polls are allowed, the one after them ends the run."""
    state = _state(max_monitor_transitions=3)
    at_limit = state.updated(history=state.history.model_copy(update={"num_monitor_transitions": 3}))
    assert monitoring.decide(_described(), [], at_limit).next_step == "wait"
    past = state.updated(history=state.history.model_copy(update={"num_monitor_transitions": 4}))
    decision = monitoring.decide(_described(), [], past)
    assert (decision.next_step, decision.outcome, decision.stop_job) == ("plan", "monitor_limit", True)


def test_an_unknown_status_is_an_error():
    with pytest.raises(ValueError, match="TrainingJobStatus"):
        monitoring.decide(_described("Exploded"), [], _state())


def test_apply_decision_records_the_issue_and_evidence():
    rules = [_rule("ExplodingTensor", rule_status.ISSUES_FOUND, step=2), _rule("VanishingGradient", rule_status.IN_PROGRESS)]
    document = rule_status.RuleStatusDocument(
        job_name=JOB,
        updated_at="now",
        rules=rules,
        evidence=rule_status.Evidence(initial_gradient_norm=512.0, steps_per_epoch=20),
    )
    reading = rule_reading.RuleReading(statuses=tuple(rules), document=document)
    state = _state()
    decision = monitoring.decide(_described(), reading.statuses, state)
    updated = monitoring.apply_decision(state, decision, _described(), reading)
    attempt = updated.last_attempt
    assert attempt.outcome == "issues_found" and attempt.issue.rule == "ExplodingTensor" and attempt.issue.step == 2
    assert attempt.evidence.initial_gradient_norm == 512.0
    assert [(status.name, status.status) for status in attempt.rule_statuses] == [
        ("ExplodingTensor", "IssuesFound"),
        ("VanishingGradient", "InProgress"),
    ]
    assert updated.rule_status == "IssuesFound"


@mock_aws
def test_rule_statuses_come_from_s3_and_from_sagemaker_in_legacy_mode(offline_aws_credentials):
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket=INPUT["bucket"])
    state = _state(legacy_sagemaker_debugger=True)
    legacy = {
        "DebugRuleEvaluationStatuses": [
            {
                "RuleConfigurationName": "SagemakerExplodingTensor",
                "RuleEvaluationStatus": "IssuesFound",
                "LastModifiedTime": datetime.datetime(2026, 11, 22, tzinfo=datetime.UTC),
            }
        ]
    }
    # the job has not written its status file yet: not an error
    reading = rule_reading.read_rule_statuses(s3, state, JOB, legacy)
    assert reading.document is None
    assert [(rule.RuleConfigurationName, rule.RuleEvaluationStatus) for rule in reading.statuses] == [
        ("SagemakerExplodingTensor", "IssuesFound")
    ]
    document = rule_status.RuleStatusDocument(
        job_name=JOB, updated_at="now", rules=[_rule("VanishingGradient", "InProgress")]
    )
    s3.put_object(Bucket=INPUT["bucket"], Key=bucket_layout.rule_status_key(JOB), Body=document.to_json().encode())
    reading = rule_reading.read_rule_statuses(s3, state, JOB, legacy)
    assert [rule.RuleConfigurationName for rule in reading.statuses] == [
        "VanishingGradient",
        "SagemakerExplodingTensor",
    ]
    s3.put_object(Bucket=INPUT["bucket"], Key=bucket_layout.rule_status_key(JOB), Body=b'{"schema_version": 99}')
    with pytest.raises(contracts.ContractError, match="rule-status.json"):
        rule_reading.read_rule_statuses(s3, state, JOB, {})
