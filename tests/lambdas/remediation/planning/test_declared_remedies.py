"""The planner on a user's own script: the remedies its run_spec declares, and its objective. The reasons' words
are in ``test_reasons.py``."""

import pytest

from lambdas.remediation.execution_input import initial_state
from lambdas.remediation.planning.planner import plan
from tests.lambdas.remediation.decision_fields import changes_of, ended, facts_of

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


def test_declared_remedies_apply_in_order(script_state, record):
    first = plan(record(script_state, step=7, phase=None, evidence=EVIDENCE))
    assert first.run_spec.hyperparameters == {"lr": 2.0, "grad_clip": 1.0, "epochs": 3}
    decision = first.last_attempt.decision
    assert (decision.remedy, decision.cause) == ("ClipGradients", "ExplodingTensor")
    assert changes_of(decision) == {"grad_clip": (0, 1.0)}
    assert facts_of(decision) == {}  # a remedy without a condition

    second = plan(record(first, step=5, phase=None, evidence=EVIDENCE))
    assert second.run_spec.hyperparameters["lr"] == pytest.approx(0.2)
    decision = second.last_attempt.decision
    assert (decision.remedy, decision.cause) == ("multiply lr by 0.1 (not below 0.0001)", "ExplodingTensor")
    assert changes_of(decision) == {"lr": (2.0, pytest.approx(0.2))}  # grad_clip stays at 1
    assert second.history.num_hyperparameter_adjustments == {"grad_clip": 1, "lr": 1}
    assert second.history.num_retraining == 2
    assert second.history.num_learning_rate_adjustments == 0  # the sample's counters count the example's names


def test_a_rule_without_its_own_list_takes_the_any_rule_list(script_state, record):
    planned = plan(record(script_state, rule="VanishingGradient", step=40, phase=None, evidence=EVIDENCE))
    assert planned.run_spec.hyperparameters["lr"] == 1.0
    decision = planned.last_attempt.decision
    # the any-rule list's halving (ExplodingTensor's own list would have clipped, or cut lr tenfold)
    assert (decision.remedy, decision.cause) == ("multiply lr by 0.5 (not below 0.0001)", "VanishingGradient")
    assert changes_of(decision) == {"lr": (2.0, 1.0)}


def test_missing_the_objective_applies_its_own_remedies_then_ends_at_their_bound(script_state, record):
    """Twice the epochs, up to the declared 12; then 24 would pass it, and the run ends (saying by how much it missed
    and what it changed: test_reasons.py)."""
    state = script_state
    for epochs in (6, 12):
        state = plan(record(state, outcome="objective_missed", objective_value=0.71))
        assert state.next_action == "launch_new"
        assert state.run_spec.hyperparameters["epochs"] == epochs
        assert state.last_attempt.decision.cause == "objective_missed"
    assert [changes_of(attempt.decision) for attempt in state.attempts] == [{"epochs": (3, 6)}, {"epochs": (6, 12)}]
    end = plan(record(state, outcome="objective_missed", objective_value=0.84))
    assert end.next_action == "end"
    assert ended(end.last_attempt.decision) == ("none", "end", "objective_missed")
    assert end.run_spec.hyperparameters["epochs"] == 12


def test_the_objective_missed_never_falls_back_to_the_any_rule_list(account_input, record):
    remedies = {"*": [{"hyperparameter": "lr", "multiply_by": 0.5, "min": 1e-4}]}
    state = initial_state({**account_input, **SCRIPT, "remedies": remedies})
    end = plan(record(state, outcome="objective_missed", objective_value=0.5))
    assert end.next_action == "end"
    assert ended(end.last_attempt.decision) == ("none", "end", "objective_missed")
    assert end.run_spec == state.run_spec  # the any-rule list would have halved lr


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
    assert changes_of(clipped.last_attempt.decision) == {"grad_clip": (0, 1.0)}
    # at step 3, before step 20 (half an epoch of 40 steps), and the initial gradient norm 900 above 100
    assert facts_of(clipped.last_attempt.decision) == {"early": (3, 20.0), "initial_gradient_norm_above": (900.0, 100.0)}
    late = plan(record(state, step=35, phase=None, evidence=large))
    assert changes_of(late.last_attempt.decision) == {"lr": (2.0, 1.0)}
    assert facts_of(late.last_attempt.decision) == {}


def test_a_job_that_never_reports_the_objectives_metric_ends_with_the_reason(script_state, record):
    end = plan(record(script_state, outcome="objective_unmeasured"))
    assert end.next_action == "end"
    decision = end.last_attempt.decision
    assert ended(decision) == ("none", "end", "objective_unmeasured") and decision.cause is None
    assert end.end_reason == decision.reason  # its words: text/test_decision_text.py


def test_a_completed_job_that_meets_the_objective_ends_the_run(script_state, record):
    end = plan(record(script_state, outcome="completed", objective_value=0.93))
    assert end.next_action == "end" and ended(end.last_attempt.decision) == ("none", "end", "completed")
    assert end.last_attempt.objective_value == 0.93 and end.run_spec == script_state.run_spec


def test_a_run_with_declared_remedies_and_its_epochs_in_its_hyperparameters_is_judged_out_of_reach(account_input):
    """A real job (60% wrong labels, declared remedies, no hyperparameter_names, "epochs": 12): ObjectiveOutOfReach
    got its planned epochs and stopped it at half of them, past its peak; the declared objective_missed remedy is
    what comes next."""
    from tests.lambdas.remediation.recorded_runs import finish, recorded, start

    run = recorded("mlp-declared-remedies-out-of-reach")
    state = finish(start(run, account_input, max_num_retraining=1), run["jobs"][0])
    assert state.policy == "declared" and not state.hyperparameter_names and state.epochs_in(state.run_spec.hyperparameters) == 12
    attempt = state.last_attempt
    assert (attempt.outcome, attempt.issue.rule, attempt.issue.kind) == ("objective_missed", "ObjectiveOutOfReach", "out_of_reach")
    assert attempt.issue.message == (
        "validation:accuracy was at best 0.7972 after 6 of 12 epochs, no longer improving (noise 0.000858); in the 6 "
        "epochs left it reaches at most 0.7981, short of validation:accuracy >= 0.9"
    )
    assert attempt.not_judged() == []
    decision = plan(state).last_attempt.decision
    assert (decision.end_cause, decision.next_remedy) == ("budget_spent", "set weight-decay to 0.001")
