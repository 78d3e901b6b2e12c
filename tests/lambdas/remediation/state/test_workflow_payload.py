import json
import math

import pytest
from aws_lambda_powertools.utilities.parser import parse
from pydantic import ValidationError

from lambdas.remediation.execution_input import initial_state
from lambdas.remediation.state.attempts import MAX_KEPT_ATTEMPTS
from lambdas.remediation.state.payload import (
    STEP_FUNCTIONS_PAYLOAD_LIMIT,
    StatePayload,
    WorkflowState,
    parse_state,
    payload_size,
)
from lambdas.remediation.state.payload_fields import MAX_METRICS, MAX_RULE_STATUSES
from lambdas.remediation.state.validation_messages import InvalidState


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
    payload["state"]["run_spec"]["debugger_save_interval"] = -1
    payload["state"]["next_action"] = "relaunch"
    payload["state"]["history"]["surprise"] = 1
    with pytest.raises(InvalidState) as caught:
        parse_state(payload)
    assert set(caught.value.problems) == {
        "state.run_spec.debugger_save_interval",
        "state.next_action",
        "state.history.surprise",
    }
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
    assert state.last_attempt.hyperparameters == state.run_spec.hyperparameters
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


def _fill(limit: int, unit: str, make) -> object:
    """The largest value ``make(n)`` whose JSON stays within ``limit`` bytes."""
    count = 1
    while len(json.dumps(make(count + 1))) <= limit:
        count += 1
    return make(count)


def test_worst_case_payload_stays_far_below_the_step_functions_limit(account_input):
    """Every bounded field at its maximum, with characters that escape to the most JSON bytes."""
    from contracts.remedies import MAX_REMEDIES_JSON_BYTES
    from contracts.rule_status import MAX_REPORTED_LEARNING_RATES
    from contracts.run_spec import (
        MAX_CHANNELS_JSON_BYTES,
        MAX_HYPERPARAMETERS_JSON_BYTES,
        MAX_METRIC_DEFINITIONS_JSON_BYTES,
    )

    awkward = '\x01\U0001f600"'  # 6, 12 and 2 bytes once JSON-escaped
    role = "arn:aws:iam::123456789012:role/" + "p/" * 256 + "r" * 64
    hyperparameters = _fill(
        MAX_HYPERPARAMETERS_JSON_BYTES, awkward, lambda n: {f"h{index}": awkward * 8 for index in range(n)}
    )
    hyperparameters["lr"] = 0.1
    while len(json.dumps(hyperparameters)) > MAX_HYPERPARAMETERS_JSON_BYTES:
        hyperparameters.pop(next(iter(hyperparameters)))
    remedies = {"*": [{"hyperparameter": "lr", "multiply_by": 0.5, "min": 1e-9, "note": awkward * 40}] * 12}
    while len(json.dumps(remedies)) > MAX_REMEDIES_JSON_BYTES:
        remedies["*"].pop()
    metric_definitions = _fill(
        MAX_METRIC_DEFINITIONS_JSON_BYTES,
        awkward,
        lambda n: [{"Name": f"m{index}" + "x" * 60, "Regex": "(" + "\\d" * 60 + ")"} for index in range(n)],
    )
    channels = _fill(
        MAX_CHANNELS_JSON_BYTES, awkward, lambda n: {f"c{index}": "s3://" + "b" * 63 + "/" + "k" * 120 for index in range(n)}
    )
    spec = {
        **account_input,
        "sm_role": role[:640],
        "bucket": "b" * 63,
        "base_job_name": "j" * 32,
        "source_dir": "s3://" + "b" * 63 + "/" + "k" * 900,
        "entry_point": "t" * 197 + ".py",
        "hyperparameters": hyperparameters,
        "metric_definitions": metric_definitions,
        "channels": dict(list(channels.items())[:20]),
        "remedies": remedies,
        "objective": {"metric_name": awkward * 80, "type": "Maximize", "target_value": 0.9},
        "hyperparameter_kinds": {name: "real" if name == "lr" else "text" for name in hyperparameters},
    }
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
                **{
                    name: -1.7976931348623157e308
                    for name in (
                        "initial_loss",
                        "initial_gradient_norm",
                        "last_finite_loss",
                        "max_gradient_norm",
                        "learning_rate_at_issue",
                    )
                },
                "optimizer": awkward * 100,
                "learning_rates": [-1.7976931348623157e308] * MAX_REPORTED_LEARNING_RATES,
                **{
                    peak: {"value": -1.7976931348623157e308, "step": 10**9, "learning_rate": -1.7976931348623157e308,
                           "phase": "warmup"}
                    for peak in ("loss_peak", "gradient_norm_peak")
                },
                "checkpoint_files": 10**9,
            },
            metrics={f"{index:02d}" + "m" * 62: -1.7976931348623157e308 for index in range(MAX_METRICS)},
            objective_value=-1.7976931348623157e308,
            decision={
                "remedy": "r" * 64,
                "reason": awkward * 1000,
                "next_action": "launch_new",
                "changes": {
                    name: {"before": value, "after": value} for name, value in list(hyperparameters.items())[:8]
                },
            },
        )
    state = state.updated(end_reason=awkward * 1000, job_status=awkward * 100, rule_status=awkward * 100)
    size = payload_size(state)
    print(f"worst-case state payload: {size} bytes ({size / STEP_FUNCTIONS_PAYLOAD_LIMIT:.0%} of 256 KiB)")
    assert size < STEP_FUNCTIONS_PAYLOAD_LIMIT * 0.6  # measured: 55% (52% before the evidence kept the peaks)
    assert parse_state(json.loads(json.dumps(state.to_payload()))).to_payload() == state.to_payload()


def test_validated_updates_refuse_bad_values(reference_state):
    with pytest.raises(ValidationError, match="monitor_interval_seconds"):
        reference_state.updated(monitor_interval_seconds=-1)
    assert isinstance(reference_state.updated(job_status="Completed"), WorkflowState)


def test_attempt_evidence_has_exactly_the_debugger_contracts_fields():
    import dataclasses

    from contracts.rule_status import Evidence
    from lambdas.remediation.state.attempts import AttemptEvidence

    # ... and the objective's course, which the monitor reads from the same document's metrics; the gradient norm's
    # windows stay in the job's document: the payload keeps what was read from them (gradient_norm_divergence, and
    # the size the norm kept before it spiked, which clipping is scaled to)
    assert set(AttemptEvidence.model_fields) == (
        {field.name for field in dataclasses.fields(Evidence)} - {"gradient_norm_windows"}
    ) | {"objective_course", "gradient_norm_typical"}
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
        "import sys, lambdas.remediation.text.notifications, lambdas.remediation.planning.planner; "
        "print(sorted(name for name in ('torch', 'numpy', 'debugger') if name in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    assert result.stdout.strip() == "[]"
