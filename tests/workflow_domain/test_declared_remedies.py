"""The planner on a user's own script: the remedies its run_spec declares, and its objective."""

import pytest

from lambdas.remediation.execution_input import initial_state
from lambdas.remediation.planning.planner import plan

SCRIPT = {
    "source_dir": "s3://remediation-artifacts-123456789012/code/mlp-0123456789abcdef/sourcedir.tar.gz",
    "entry_point": "train.py",
    "hyperparameters": {"lr": 2.0, "grad_clip": 0, "epochs": 3},
    "objective": {"metric_name": "validation:accuracy", "type": "Maximize", "target_value": 0.9},
    "remedies": {
        "ExplodingTensor": [
            {"hyperparameter": "grad_clip", "set_to": 1.0, "name": "ClipGradients"},
            {"hyperparameter": "lr", "multiply_by": 0.1, "min": 1e-4, "note": "Large steps overshoot."},
        ],
        "objective_missed": [{"hyperparameter": "epochs", "multiply_by": 2, "max": 12}],
        "*": [{"hyperparameter": "lr", "multiply_by": 0.5, "min": 1e-4}],
    },
}
EVIDENCE = {"initial_loss": 2.3, "initial_gradient_norm": 4.1, "last_finite_loss": 9.7e3, "max_gradient_norm": 3.2e5}


@pytest.fixture
def script_state(account_input):
    return initial_state({**account_input, **SCRIPT})


def test_declared_remedies_apply_in_order_with_their_reasons(script_state, record):
    first = plan(record(script_state, step=7, phase=None, evidence=EVIDENCE))
    assert first.run_spec.hyperparameters == {"lr": 2.0, "grad_clip": 1.0, "epochs": 3}
    decision = first.last_attempt.decision
    assert decision.remedy == "ClipGradients"
    assert decision.changes["grad_clip"].before == 0 and decision.changes["grad_clip"].after == 1.0
    for text in ("ExplodingTensor fired at step 7", "Remedy 1 of 2 for ExplodingTensor", "the declared remedies",
                 "initial gradient norm 4.1", "max gradient norm 3.2e+05", "ClipGradients (set grad_clip to 1)",
                 "Next: raising grad_clip 0 -> 1."):
        assert text in decision.reason, text

    second = plan(record(first, step=5, phase=None, evidence=EVIDENCE))
    assert second.run_spec.hyperparameters["lr"] == pytest.approx(0.2)
    assert "Large steps overshoot." in second.last_attempt.decision.reason
    assert "lowering lr 2 -> 0.2" in second.last_attempt.decision.reason
    assert second.history.num_hyperparameter_adjustments == {"grad_clip": 1, "lr": 1}
    assert second.history.num_retraining == 2
    assert second.history.num_learning_rate_adjustments == 0  # the sample's counters count the example's names


def test_a_rule_without_its_own_list_takes_the_any_rule_list(script_state, record):
    planned = plan(record(script_state, rule="VanishingGradient", step=40, phase=None, evidence=EVIDENCE))
    assert planned.run_spec.hyperparameters["lr"] == 1.0
    assert "Remedy 1 of 1 for *" in planned.last_attempt.decision.reason


def test_missing_the_objective_applies_its_own_remedies_then_ends_saying_by_how_much(script_state, record):
    state = script_state
    for epochs in (6, 12):
        state = plan(record(state, outcome="objective_missed", objective_value=0.71))
        assert state.next_action == "launch_new"
        assert state.run_spec.hyperparameters["epochs"] == epochs
    decision = state.last_attempt.decision
    assert "validation:accuracy = 0.71 missed validation:accuracy >= 0.9 by 0.19" in decision.reason
    ended = plan(record(state, outcome="objective_missed", objective_value=0.84))
    assert ended.next_action == "end"
    assert ended.last_attempt.decision.end_cause == "objective_missed"
    assert "missed validation:accuracy >= 0.9 by 0.06" in ended.end_reason
    assert "epochs 12 -> 24 would be above 12" in ended.end_reason  # why the remedy no longer applies
    assert "Changed so far: epochs 3 -> 6 -> 12." in ended.end_reason  # from what to what, not a count


def test_the_objective_missed_never_falls_back_to_the_any_rule_list(account_input, record):
    remedies = {"*": [{"hyperparameter": "lr", "multiply_by": 0.5, "min": 1e-4}]}
    state = initial_state({**account_input, **SCRIPT, "remedies": remedies})
    ended = plan(record(state, outcome="objective_missed", objective_value=0.5))
    assert ended.next_action == "end"
    assert "No remedies are declared for objective_missed" in ended.end_reason


def test_conditions_on_the_evidence_choose_between_remedies(account_input, record):
    remedies = {
        "ExplodingTensor": [
            {"hyperparameter": "grad_clip", "set_to": 1.0, "when": {"early": True, "initial_gradient_norm_above": 100}},
            {"hyperparameter": "lr", "multiply_by": 0.5, "min": 1e-4},
        ]
    }
    state = initial_state({**account_input, **SCRIPT, "remedies": remedies})
    large = {**EVIDENCE, "initial_gradient_norm": 900.0, "steps_per_epoch": 40}
    clipped = plan(record(state, step=3, phase=None, evidence=large))
    assert clipped.last_attempt.decision.changes.keys() == {"grad_clip"}
    assert "the initial gradient norm 900 is above 100" in clipped.last_attempt.decision.reason
    assert "at step 3, before step 20" in clipped.last_attempt.decision.reason
    late = plan(record(state, step=35, phase=None, evidence=large))
    assert late.last_attempt.decision.changes.keys() == {"lr"}


def test_a_job_that_never_reports_the_objectives_metric_ends_with_the_reason(script_state, record):
    ended = plan(record(script_state, outcome="objective_unmeasured"))
    assert ended.next_action == "end"
    assert ended.last_attempt.decision.end_cause == "objective_unmeasured"
    assert "never reported validation:accuracy" in ended.end_reason
    assert "metric_definitions" in ended.end_reason


def test_a_completed_job_that_meets_the_objective_ends_the_run(script_state, record):
    ended = plan(record(script_state, outcome="completed", objective_value=0.93))
    assert ended.next_action == "end" and ended.last_attempt.decision.end_cause == "completed"
    assert "validation:accuracy = 0.93 meets validation:accuracy >= 0.9" in ended.end_reason
