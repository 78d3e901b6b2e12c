"""A finding about the data that a remedy answers without changing it (ClassImbalance's label counts, answered by
class weights): the next job's rule bound goes above the measured value, so the job is judged on its training and
not stopped again on the same data."""

from __future__ import annotations

import json

import pytest

from lambdas.remediation.execution_input import initial_state
from lambdas.remediation.job.job_request import rule_configs
from lambdas.remediation.planning.planner import plan
from tests.lambdas.remediation.decision_fields import changes_of, ended

SOURCE = "s3://remediation-artifacts-123456789012/code/mlp-0123456789abcdef/sourcedir.tar.gz"
MLP_HYPERPARAMETERS = {"lr": 0.05, "epochs": 6, "class_weighting": "none", "batch-size": 64}


@pytest.fixture
def mlp_input(account_input):
    return {
        **account_input,
        "source_dir": SOURCE,
        "entry_point": "train.py",
        "hyperparameters": MLP_HYPERPARAMETERS,
        "hyperparameter_names": {"learning_rate": "lr", "num_epochs": "epochs", "batch_size": "batch-size"},
        "rules": ["ExplodingTensor", {"name": "ClassImbalance", "parameters": {"samples": "2000"}}],
    }


def class_imbalance(state, kind: str, value: float):
    """Launch the next job and record that ClassImbalance stopped it, as the monitor records the rule's finding."""
    launched = state.with_new_attempt(f"remediation-mlp-{state.attempt_count + 1}")
    return launched.with_last_attempt(
        outcome="issues_found",
        issue={"rule": "ClassImbalance", "step": 31, "tensor": "labels", "value": value, "kind": kind},
        rule_statuses=[{"name": "ClassImbalance", "status": "IssuesFound", "step": 31}],
        evidence={"initial_loss": 2.3, "last_finite_loss": 0.4, "first_issue_step": 31, "last_step": 31},
    )


def class_imbalance_parameters(state) -> dict[str, str]:
    job = state.with_new_attempt("remediation-mlp-next").last_attempt.job_name
    configs = rule_configs(job, state.run_spec.rules, state.run_spec.framework)
    return next(config["RuleParameters"] for config in configs if config["RuleConfigurationName"] == "ClassImbalance")


def test_class_weights_answer_the_imbalance_and_the_next_job_watches_mispredictions_only(mlp_input):
    state = plan(class_imbalance(initial_state(mlp_input), "imbalance", 19.5))
    decision = state.last_attempt.decision
    assert decision.remedy == "WeightClasses" and decision.next_action == "launch_new"
    assert state.run_spec.hyperparameters["class_weighting"] == "balanced"
    parameters = class_imbalance_parameters(state)
    assert parameters["threshold_imbalance"] == "39" and parameters["samples"] == "2000"  # the user's own kept
    # the measured imbalance (19.5) describes the data: the bound goes to twice it (the words: test_reasons.py)
    assert {name: (change.before, change.after) for name, change in decision.rule_changes.items()} == {
        "ClassImbalance.threshold_imbalance": ("10", "39")
    }
    assert changes_of(decision) == {"class_weighting": ("none", "balanced")}
    assert [rule["name"] for rule in state.run_spec.rules] == ["ExplodingTensor", "ClassImbalance"]

    # The payload round trip keeps the new bound (the state travels as JSON between the Lambdas).
    restored = type(state).model_validate(json.loads(state.model_dump_json()))
    assert restored.run_spec.rules == state.run_spec.rules


def test_a_misprediction_finding_leaves_the_rules_as_they_were(mlp_input):
    state = plan(class_imbalance(initial_state(mlp_input), "misprediction", 0.8))
    assert state.last_attempt.decision.remedy == "WeightClasses"
    assert state.run_spec.rules == initial_state(mlp_input).run_spec.rules
    assert state.last_attempt.decision.rule_changes == {}


def test_a_users_own_bound_is_raised_and_the_reason_says_so(mlp_input):
    rules = ["ExplodingTensor", {"name": "ClassImbalance", "parameters": {"threshold_imbalance": "5"}}]
    state = plan(class_imbalance(initial_state({**mlp_input, "rules": rules}), "imbalance", 7.25))
    assert class_imbalance_parameters(state)["threshold_imbalance"] == "14.5"
    change = state.last_attempt.decision.rule_changes["ClassImbalance.threshold_imbalance"]
    assert (change.before, change.after) == ("5", "14.5")


def test_once_weighted_the_same_data_does_not_end_the_run_but_mispredictions_still_can(mlp_input):
    """Before: the weighted job stopped again on the label counts and the run ended with no remedy left."""
    state = plan(class_imbalance(initial_state(mlp_input), "imbalance", 19.5))
    # The weighted job's rule can no longer fire on a ratio of 19.5 (bound 39); were it to mispredict the rare
    # class anyway, class weighting is already on and the run ends saying which remedies were tried.
    state = plan(class_imbalance(state, "misprediction", 0.6))
    assert state.next_action == "end"
    assert ended(state.last_attempt.decision) == ("none", "end", "no_remedy_left")
    assert state.last_attempt.decision.cause == "ClassImbalance"
    first = state.attempts[0].decision
    assert (first.remedy, changes_of(first)) == ("WeightClasses", {"class_weighting": ("none", "balanced")})


def test_xgboost_weighs_the_positive_class_and_raises_the_bound_too(account_input):
    from tests.lambdas.remediation.planning.remedies.test_xgboost_remedies import EXAMPLE_SPEC, XGBOOST_START

    source = "s3://remediation-artifacts-123456789012/code/xgboost-0123456789abcdef/sourcedir.tar.gz"
    xgboost_input = {
        **account_input, **EXAMPLE_SPEC, "source_dir": source,
        "hyperparameters": {**XGBOOST_START, "scale_pos_weight": 1.0},
        "rules": ["Overtraining", "ClassImbalance"],
    }  # fmt: skip
    state = plan(class_imbalance(initial_state(xgboost_input), "imbalance", 45.0))
    assert state.run_spec.hyperparameters["scale_pos_weight"] == 30.0
    assert class_imbalance_parameters(state)["threshold_imbalance"] == "90"


def test_a_remedy_for_any_rule_does_not_answer_the_data(mlp_input):
    """The anchor ladder (the AWS sample's, for every rule) changes the learning rate, which leaves the class counts
    as unanswered as they were: the next job is watched as before."""
    state = plan(class_imbalance(initial_state({**mlp_input, "policy": "anchor"}), "imbalance", 19.5))
    assert state.last_attempt.decision.next_action == "launch_new"
    assert class_imbalance_parameters(state) == class_imbalance_parameters(initial_state({**mlp_input, "policy": "anchor"}))
