import json
import math

import pytest
from aws_lambda_powertools.utilities.parser import parse
from pydantic import ValidationError

from lambdas.remediation.payload import (
    MAX_KEPT_ATTEMPTS,
    MAX_METRICS,
    MAX_RULE_STATUSES,
    STEP_FUNCTIONS_PAYLOAD_LIMIT,
    ExecutionInput,
    InvalidExecutionInput,
    InvalidState,
    RunSpec,
    StatePayload,
    WorkflowState,
    default_execution_input,
    initial_state,
    parse_state,
    payload_size,
)
from model.hyperparameters import TrainingHyperparameters


def test_defaults_are_the_reference_scenario(account_input):
    defaults = default_execution_input()
    assert defaults["init_warmup_learning_rate"] == 0.1
    assert defaults["learning_rate"] == 0.1
    assert defaults["add_batch_norm"] is False
    assert (defaults["depth"], defaults["num_epochs"], defaults["batch_size"]) == (20, 2, 128)
    assert defaults["policy"] == "evidence"
    assert defaults["instance_type"] == "ml.m5.xlarge"
    assert defaults["max_num_retraining"] == 6
    assert defaults["monitor_interval_seconds"] == 60
    assert set(defaults) | {"bucket", "region", "sm_role"} == set(ExecutionInput.model_fields)

    state = initial_state(account_input)
    assert state.next_action == "launch_new"
    assert state.attempts == [] and state.history.num_retraining == 0
    assert state.run_spec.warmup_learning_rate == defaults["init_warmup_learning_rate"]
    # The job's own defaults are the same scenario.
    assert state.run_spec.training_hyperparameters() == TrainingHyperparameters()


def test_explicit_defaults_give_the_same_state_as_omitted_ones(account_input):
    assert initial_state({**default_execution_input(), **account_input}) == initial_state(account_input)


BAD_INPUTS = [
    ("init_warmup_learning_rate", -1, "must be > 0 (got -1)"),
    ("init_warmup_learning_rate", 0, "must be > 0 (got 0)"),
    ("learning_rate", 11, "must be <= 10"),
    ("learning_rate", "fast", "must be a number"),
    ("learning_rate", float("nan"), "must be a finite number"),
    ("learning_rate", True, "not a boolean"),
    ("add_batch_norm", 2, "true/false or 1/0 (got 2)"),
    ("add_batch_norm", "maybe", "true/false or 1/0"),
    ("bucket", "My_Bucket", "lowercase letters, digits, dots and hyphens"),
    ("bucket", "ab", "3-63 characters"),
    ("bucket", "192.168.10.4", "IP address"),
    ("bucket", "my..bucket", "no '..'"),
    ("bucket", "xn--bucket", "may not start with 'xn--'"),
    ("bucket", "bucket-s3alias", "may not end with '-s3alias'"),
    ("base_job_name", "bad name", "letters, digits and hyphens"),
    ("base_job_name", "a" * 33, "1-32"),
    ("instance_type", "m5.xlarge", "such as ml.m5.xlarge"),
    ("region", "useast1", "region code such as us-east-1"),
    ("sm_role", "SageMakerRole", "IAM role ARN"),
    ("sm_role", "arn:aws:iam::1234:role/x", "IAM role ARN"),
    ("num_epochs", 0, "must be >= 1 (got 0)"),
    ("num_epochs", 1.5, "whole number"),
    ("num_epochs", True, "not a boolean"),
    ("debugger_save_interval", 0, "must be >= 1"),
    ("max_num_retraining", -1, "must be >= 0"),
    ("max_num_retraining", 51, "must be <= 50"),
    ("max_monitor_transitions", 0, "must be >= 1"),
    ("policy", "random", "must be one of 'evidence' or 'anchor'"),
    ("depth", 21, "6n+2"),
    ("batch_size", 0, "must be >= 1"),
    ("seed", -1, "must be >= 0"),
    ("activation", "tanh", "must be one of elu, relu"),
    ("warmup_epochs", -1, "must be >= 0"),
    ("use_spot_instances", "sometimes", "true/false"),
    ("monitor_interval_seconds", -5, "must be >= 0 (got -5)"),
    ("monitor_interval_seconds", 1.5, "whole number"),
    ("max_run_seconds", 10, "must be >= 60"),
    (
        "topic_arn",
        "arn:aws:sns:us-east-1:123456789012:t",
        "is not a known key; allowed keys: init_warmup_learning_rate",
    ),
]


@pytest.mark.parametrize(("field", "value", "expected"), BAD_INPUTS, ids=[f"{f}={v!r}"[:40] for f, v, _ in BAD_INPUTS])
def test_bad_execution_input_names_the_field_and_the_fix(account_input, field, value, expected):
    with pytest.raises(InvalidExecutionInput) as caught:
        initial_state({**account_input, field: value})
    assert list(caught.value.problems) == [field]
    assert expected in caught.value.problems[field]
    assert f"{field}: " in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_every_bad_field_is_reported_at_once_and_required_keys_say_what_to_give():
    with pytest.raises(InvalidExecutionInput) as caught:
        initial_state({"init_warmup_learning_rate": -1, "depth": 21})
    problems = caught.value.problems
    assert set(problems) == {"init_warmup_learning_rate", "depth", "bucket", "region", "sm_role"}
    assert "is required" in problems["sm_role"] and "arn:aws:iam::" in problems["sm_role"]


def test_spot_instances_cannot_be_local(account_input):
    with pytest.raises(InvalidExecutionInput) as caught:
        initial_state({**account_input, "instance_type": "local", "use_spot_instances": True})
    assert list(caught.value.problems) == ["use_spot_instances"]


@pytest.mark.parametrize(
    ("given", "expected"), [(0, False), (1, True), (True, True), (False, False), ("true", True), ("0", False)]
)
def test_add_batch_norm_accepts_the_samples_0_1_and_booleans(account_input, given, expected):
    assert initial_state({**account_input, "add_batch_norm": given}).run_spec.add_batch_norm is expected


def test_input_that_is_not_an_object_is_refused():
    with pytest.raises(InvalidExecutionInput, match="must be a JSON object"):
        initial_state(["bucket"])  # type: ignore[arg-type]


def test_state_round_trips_through_json_powertools_and_parse_state(reference_state, record):
    state = record(reference_state, metrics={"test:accuracy": 0.25, "train:loss": float("inf")})
    payload = state.to_payload()
    text = json.dumps(payload, allow_nan=False)  # strict JSON: NaN/inf travel as strings
    assert '"value": "NaN"' in text
    again = parse_state(json.loads(text))
    assert again.to_payload() == payload
    assert math.isnan(again.last_attempt.issue.value)
    assert again.last_attempt.metrics["train:loss"] == math.inf
    assert parse(event=json.loads(text), model=StatePayload).state.to_payload() == payload
    # The ASL may put other keys next to the state (e.g. a Catch's error); they are ignored.
    assert parse_state({**payload, "error": {"Error": "x"}}).to_payload() == payload


def test_parse_state_names_nested_fields(reference_state):
    payload = reference_state.to_payload()
    payload["state"]["run_spec"]["learning_rate"] = -0.1
    payload["state"]["next_action"] = "relaunch"
    payload["state"]["history"]["surprise"] = 1
    with pytest.raises(InvalidState) as caught:
        parse_state(payload)
    assert set(caught.value.problems) == {"state.run_spec.learning_rate", "state.next_action", "state.history.surprise"}
    assert "must be one of 'launch_new', 'monitor' or 'end'" in caught.value.problems["state.next_action"]
    with pytest.raises(InvalidState, match="state: is required"):
        parse_state({"State": {}})
    with pytest.raises(ValidationError):
        parse(event=payload, model=StatePayload)


def test_launching_records_an_attempt_and_moves_to_monitor(reference_state):
    state = reference_state.with_new_attempt("remediation-resnet-1")
    assert state.next_action == "monitor"
    assert state.history.latest_job_name == "remediation-resnet-1"
    assert state.last_attempt.number == 1 and state.last_attempt.outcome == "running"
    assert state.last_attempt.run_spec == state.run_spec
    with pytest.raises(InvalidState, match="attempts"):
        reference_state.with_last_attempt(outcome="completed")
    with pytest.raises(ValidationError, match="job_name"):
        reference_state.with_new_attempt("bad job name!")


def test_attempts_keep_the_first_and_the_latest_with_a_dropped_count(reference_state, record):
    state = reference_state
    for _ in range(40):
        state = record(state)
    assert len(state.attempts) == MAX_KEPT_ATTEMPTS
    assert state.attempts_dropped == 40 - MAX_KEPT_ATTEMPTS
    assert state.attempt_count == 40
    numbers = [attempt.number for attempt in state.attempts]
    assert numbers == [1, *range(40 - MAX_KEPT_ATTEMPTS + 2, 41)]
    assert parse_state(state.to_payload()).attempt_count == 40


def test_inconsistent_attempt_numbers_are_refused(reference_state, record):
    payload = record(record(reference_state)).to_payload()
    payload["state"]["attempts_dropped"] = 3
    with pytest.raises(InvalidState, match="attempts_dropped must be 0"):
        parse_state(payload)


def test_worst_case_payload_stays_far_below_the_step_functions_limit(account_input):
    """Every bounded field at its maximum, with characters that escape to the most JSON bytes."""
    awkward = '\x01\U0001f600"'  # 6, 12 and 2 bytes once JSON-escaped
    role = "arn:aws:iam::123456789012:role/" + "p/" * 256 + "r" * 64
    spec = {**account_input, "sm_role": role[:640], "bucket": "b" * 63, "base_job_name": "j" * 32}
    state = initial_state({**spec, "max_num_retraining": 50})
    for number in range(1, 60):
        state = state.with_new_attempt(("n" * 60 + f"{number:03d}")[-63:])
        state = state.with_last_attempt(
            outcome="issues_found",
            job_status=awkward * 100,
            failure_reason=awkward * 1000,
            rule_statuses=[{"name": awkward * 100, "status": "IssuesFound", "step": 10**9}] * MAX_RULE_STATUSES,
            issue={
                "rule": awkward * 100,
                "step": 10**9,
                "tensor": awkward * 100,
                "value": -1.7976931348623157e308,
                "phase": "warmup",
                "message": awkward * 1000,
            },
            evidence={
                name: -1.7976931348623157e308
                for name in (
                    "initial_loss",
                    "initial_gradient_norm",
                    "last_finite_loss",
                    "max_gradient_norm",
                    "learning_rate_at_issue",
                )
            },
            metrics={f"{index:02d}" + "m" * 62: -1.7976931348623157e308 for index in range(MAX_METRICS)},
            decision={
                "remedy": "r" * 64,
                "reason": awkward * 1000,
                "next_action": "launch_new",
                "changes": {
                    name: {"before": awkward * 100, "after": awkward * 100} for name in list(RunSpec.model_fields)[:8]
                },
            },
        )
    state = state.updated(end_reason=awkward * 1000, job_status=awkward * 100, rule_status=awkward * 100)
    size = payload_size(state)
    print(f"worst-case state payload: {size} bytes ({size / STEP_FUNCTIONS_PAYLOAD_LIMIT:.0%} of 256 KiB)")
    assert size < STEP_FUNCTIONS_PAYLOAD_LIMIT * 0.4
    assert parse_state(json.loads(json.dumps(state.to_payload()))).to_payload() == state.to_payload()


def test_run_spec_maps_onto_the_jobs_hyperparameters(account_input):
    state = initial_state({**account_input, "add_batch_norm": 1, "depth": 32, "activation": "relu", "seed": 7})
    hyperparameters = state.run_spec.training_hyperparameters(debugger_rule_configs="[]")
    assert (hyperparameters.add_batch_norm, hyperparameters.depth, hyperparameters.activation) == (True, 32, "relu")
    assert hyperparameters.seed == 7 and hyperparameters.debugger_rule_configs == "[]"


def test_validated_updates_refuse_bad_values(reference_state):
    with pytest.raises(ValidationError, match="monitor_interval_seconds"):
        reference_state.updated(monitor_interval_seconds=-1)
    assert isinstance(reference_state.updated(job_status="Completed"), WorkflowState)


def test_attempt_evidence_has_exactly_the_debugger_contracts_fields():
    import dataclasses

    from contracts.rule_status import Evidence
    from lambdas.remediation.payload import AttemptEvidence

    assert set(AttemptEvidence.model_fields) == {field.name for field in dataclasses.fields(Evidence)}
    evidence = Evidence(
        initial_loss=31.7, initial_gradient_norm=512.3, first_issue_step=2, phase="warmup", steps_per_epoch=20
    )
    converted = AttemptEvidence.from_contract(evidence)
    assert (converted.initial_gradient_norm, converted.first_issue_step, converted.last_step) == (512.3, 2, None)


def test_the_domain_modules_import_without_torch_or_numpy():
    """The Lambda bundle has neither; importing the debugger package would pull both in."""
    import subprocess
    import sys

    code = (
        "import sys, lambdas.remediation.notifications, lambdas.remediation.policies; "
        "print(sorted(name for name in ('torch', 'numpy', 'debugger') if name in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert result.stdout.strip() == "[]"
