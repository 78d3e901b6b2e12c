"""The evidence policy's remedies for gradient-boosted trees: on SageMaker's XGBoost names with no mapping, chosen by
what the debugger found, and kept apart from the networks' remedies (each run keeps the ones on its own names)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contracts.conventional_hyperparameters import XGBOOST_HYPERPARAMETERS
from contracts.remedies import adapt_to_script, parse_remedies
from lambdas.remediation.execution_input import initial_state
from lambdas.remediation.planning.planner import plan
from lambdas.remediation.planning.remedies.sets import EVIDENCE_REMEDIES
from lambdas.remediation.planning.remedies.xgboost import XGBOOST_EVIDENCE_REMEDIES
from tests.lambdas.remediation.decision_fields import facts_of

REPO = Path(__file__).resolve().parents[5]
EXAMPLE_SPEC = json.loads((REPO / "examples" / "xgboost" / "run_spec.json").read_text())
SOURCE = "s3://remediation-artifacts-123456789012/code/xgboost-0123456789abcdef/sourcedir.tar.gz"
XGBOOST_START = EXAMPLE_SPEC["hyperparameters"]  # max_depth 10, eta 0.9, min_child_weight 0, lambda 0, no early stop


@pytest.fixture
def xgboost_input(account_input):
    return {**account_input, **EXAMPLE_SPEC, "source_dir": SOURCE}


def issue(state, rule, *, kind, value, step=10):
    """Launch the next job and record that ``rule`` stopped it (as the monitor records an XGBoost rule's finding)."""
    launched = state.with_new_attempt(f"remediation-xgb-{state.attempt_count + 1}")
    return launched.with_last_attempt(
        outcome="issues_found",
        issue={"rule": rule, "step": step, "tensor": "validation-logloss", "value": value, "kind": kind},
        rule_statuses=[{"name": rule, "status": "IssuesFound", "step": step}],
        evidence={"initial_loss": 0.3, "last_finite_loss": 0.98, "first_issue_step": step, "last_step": step},
    )


def test_xgboosts_own_names_need_no_mapping_and_the_networks_remedies_drop_out():
    adapted = adapt_to_script(EVIDENCE_REMEDIES, {}, XGBOOST_START)
    changed = {entry["hyperparameter"] for entries in adapted.values() for entry in entries}
    assert changed <= set(XGBOOST_HYPERPARAMETERS)
    assert [entry["name"] for entry in adapted["Overtraining"]] == [
        "GentlerTrees", "ShallowerTrees", "StopEarlyKeepBest", "SmallerSteps", "RaiseMinChildWeight", "ShallowerTrees",
    ]  # fmt: skip  (no subsample in the example: Subsample left out)
    assert "ExplodingTensor" not in adapted and "VanishingGradient" not in adapted


def test_a_networks_run_gets_none_of_the_tree_remedies(account_input):
    pytorch = initial_state(account_input)  # the built-in example's hyperparameters
    adapted = adapt_to_script(EVIDENCE_REMEDIES, {}, pytorch.run_spec.hyperparameters)
    changed = {entry["hyperparameter"] for entries in adapted.values() for entry in entries}
    assert not changed & set(XGBOOST_HYPERPARAMETERS)
    tree_remedies = {entry["name"] for entries in XGBOOST_EVIDENCE_REMEDIES.values() for entry in entries} - {
        "StopEarlyKeepBest"  # a name both sets give their early stopping
    }
    assert adapted["Overtraining"] and not {entry["name"] for entry in adapted["Overtraining"]} & tree_remedies


def test_a_script_naming_eta_learning_rate_gets_the_tree_remedies_on_it_and_not_the_networks(account_input):
    hyperparameters = {"learning_rate": 0.9, "max_depth": 10, "num_round": 100}
    adapted = adapt_to_script(EVIDENCE_REMEDIES, {"eta": "learning_rate"}, hyperparameters)
    names = [entry.get("name") for entries in adapted.values() for entry in entries]
    assert "LowerLearningRate" not in names and "LearningRateIntoRange" not in names
    assert adapted["Overtraining"][0]["name"] == "GentlerTrees"
    assert adapted["Overtraining"][0]["hyperparameter"] == "learning_rate"
    assert adapted["Overtraining"][0]["when"] == {"hyperparameters_above": {"learning_rate": 0.3}}


def test_overtraining_trees_are_brought_into_range_then_stopped_early_then_gentler(xgboost_input):
    state = initial_state(xgboost_input)
    state = plan(issue(state, "Overtraining", kind="validation_not_improving", value=10))
    decision = state.last_attempt.decision
    assert decision.remedy == "GentlerTrees" and decision.resume_from is None  # the stopped job's trees overfit
    assert {name: (change.before, change.after) for name, change in decision.changes.items()} == {
        "eta": (0.9, 0.3), "max_depth": (10, 6), "min_child_weight": (0, 1), "early_stopping_rounds": (0, 5),
        "num_round": (100, 200),
    }  # fmt: skip
    assert decision.cause == "Overtraining" and facts_of(decision) == {"hyperparameters_above": (0.9, 0.3)}

    # In range already, with early stopping on: smaller steps with more rounds.
    state = plan(issue(state, "Overtraining", kind="validation_not_improving", value=10))
    assert state.last_attempt.decision.remedy == "SmallerSteps"
    assert state.run_spec.hyperparameters["eta"] == pytest.approx(0.15)
    assert state.run_spec.hyperparameters["num_round"] == 400


def test_early_stopping_comes_first_for_trees_already_in_range(xgboost_input):
    start = {**XGBOOST_START, "eta": 0.1, "max_depth": 3, "min_child_weight": 1}
    state = initial_state({**xgboost_input, "hyperparameters": start})
    state = plan(issue(state, "Overtraining", kind="validation_not_improving", value=10, step=68))
    decision = state.last_attempt.decision
    assert decision.remedy == "StopEarlyKeepBest"
    assert {name: change.after for name, change in decision.changes.items()} == {"early_stopping_rounds": 5}
    assert facts_of(decision) == {}  # the trees are in range: nothing to hold but the ladder's order


def test_an_eta_too_small_to_move_the_model_is_raised_boosting_on_from_the_checkpoint(xgboost_input):
    state = initial_state({**xgboost_input, "hyperparameters": {**XGBOOST_START, "eta": 0.001}})
    state = plan(issue(state, "LossNotDecreasing", kind="not_decreasing", value=0.69, step=20))
    decision = state.last_attempt.decision
    assert (decision.remedy, decision.resume_from) == ("EtaUpIntoRange", "remediation-xgb-1")
    assert state.run_spec.hyperparameters["eta"] == 0.1


@pytest.mark.parametrize(("imbalance", "weight"), [(12.0, 10.0), (45.0, 30.0), (250.0, 100.0)])
def test_class_imbalance_weighs_the_positive_class_by_about_the_measured_imbalance(xgboost_input, imbalance, weight):
    start = {**XGBOOST_START, "scale_pos_weight": 1.0}
    state = initial_state({**xgboost_input, "hyperparameters": start})
    state = plan(issue(state, "ClassImbalance", kind="imbalance", value=imbalance, step=0))
    decision = state.last_attempt.decision
    assert decision.remedy == "ScalePositiveWeight"
    assert state.run_spec.hyperparameters["scale_pos_weight"] == weight
    # the rule found imbalance; above 30 (or 100) the remedy for that band, held against the measured ratio
    above = {} if weight == 10.0 else {"issue_value_above": (imbalance, weight)}
    assert facts_of(decision) == {"issue_kind": ("imbalance", None), **above}


def test_a_mostly_mispredicted_class_doubles_the_positive_weight(xgboost_input):
    state = initial_state({**xgboost_input, "hyperparameters": {**XGBOOST_START, "scale_pos_weight": 1.0}})
    state = plan(issue(state, "ClassImbalance", kind="misprediction", value=0.8, step=0))
    assert state.run_spec.hyperparameters["scale_pos_weight"] == 2.0


def test_a_missed_objective_without_early_stopping_boosts_longer_from_the_checkpoint(xgboost_input):
    start = {**XGBOOST_START, "eta": 0.1, "max_depth": 3, "min_child_weight": 1}
    state = initial_state({**xgboost_input, "hyperparameters": start})
    launched = state.with_new_attempt("remediation-xgb-1")
    state = plan(launched.with_last_attempt(outcome="objective_missed", objective_value=0.93))
    decision = state.last_attempt.decision
    assert (decision.remedy, decision.resume_from) == ("BoostLonger", "remediation-xgb-1")
    assert state.run_spec.hyperparameters["num_round"] == 200


def test_every_tree_remedy_is_kept_and_valid_on_a_script_with_every_xgboost_name():
    start = {**XGBOOST_START, "subsample": 1.0, "scale_pos_weight": 1.0}
    adapted = adapt_to_script(XGBOOST_EVIDENCE_REMEDIES, {}, start)
    assert {key: len(entries) for key, entries in adapted.items()} == {
        key: len(entries) for key, entries in XGBOOST_EVIDENCE_REMEDIES.items()
    }
    parse_remedies(adapted, start, check_reachable=False, check_size=False)  # raises ContractError on a bad entry
