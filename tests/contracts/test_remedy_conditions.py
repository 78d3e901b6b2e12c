"""Conditions on the rule's own account of the failure (its issue kind and value), and remedy declarations that
resume, adapt to a script's names, or may not exist (data errors)."""

import pytest

from contracts import ContractError
from contracts.remedies import DATA_ERROR, Change, adapt_to_script, parse_remedies, remedies_to_json
from contracts.remedy_condition_parsing import parse_condition
from contracts.remedy_conditions import Condition
from contracts.rule_status import Peak
from contracts.situation import Situation

START = {"lr": 0.1, "epochs": 5, "activation": "relu"}


def test_issue_kind_and_value_conditions_hold_on_what_the_rule_reported_and_say_so():
    dead = Situation(issue_kind="layer_dead", issue_value=0.8, issue_tensor="relu1_output_0")
    holds, facts = Condition(issue_value_above=0.5).check(dead, START)
    assert holds and [(fact.test, fact.measured, fact.bound) for fact in facts] == [("issue_value_above", 0.8, 0.5)]
    assert [fact.text for fact in facts] == ["the rule's value 0.8 (relu1_output_0) is above 0.5"]
    assert not Condition(issue_value_below=0.5).check(dead, START)[0]
    assert not Condition(issue_value_above=0.5).check(Situation(), START)[0]  # no value: the remedy waits
    holds, facts = Condition(issue_kind="above_max").check(Situation(issue_kind="above_max"), START)
    assert holds and [(fact.test, fact.measured, fact.text) for fact in facts] == [
        ("issue_kind", "above_max", "the rule found above max")
    ]
    assert not Condition(issue_kind="above_max").check(Situation(issue_kind="below_min"), START)[0]


def test_a_hyperparameter_above_a_bound_holds_only_above_it_and_adapts_to_the_scripts_name():
    condition = parse_condition({"hyperparameters_above": {"lr": 0.4}}, START, "when")
    holds, facts = condition.check(Situation(), {**START, "lr": 20.0})
    assert holds and [(fact.test, fact.measured, fact.bound, fact.text) for fact in facts] == [
        ("hyperparameters_above", 20.0, 0.4, "lr 20 is above 0.4")
    ]
    assert not condition.check(Situation(), {**START, "lr": 0.4})[0]
    preset = {"ExplodingTensor": [{"hyperparameter": "learning_rate", "set_to": 0.1,
                                   "when": {"hyperparameters_above": {"learning_rate": 0.4}}}]}
    adapted = adapt_to_script(preset, {"learning_rate": "lr"}, START)
    assert adapted["ExplodingTensor"][0]["when"] == {"hyperparameters_above": {"lr": 0.4}}
    assert adapt_to_script(preset, {}, {"epochs": 5}) == {}  # the script has no such knob: the remedy is left out


@pytest.mark.parametrize(
    ("when", "field", "fragment"),
    [
        ({"issue_kind": "Above Max"}, "when.issue_kind", "a rule's issue kind"),
        ({"issue_value_above": "0.5"}, "when.issue_value_above", "finite number"),
        ({"issue_value_above": 0.9, "issue_value_below": 0.1}, "when.issue_value_above", "no value could pass both"),
        ({"hyperparameters": {"optimizer": "adam"}}, "when.hyperparameters.optimizer", "not in run_spec.hyperparameters"),
        ({"steps": 3}, "when.steps", "is not a condition"),
        ({"hyperparameters_above": {"activation": 1}}, "when.hyperparameters_above.activation", "not a number"),
        ({"hyperparameters_above": {"lr": "0.4"}}, "when.hyperparameters_above.lr", "finite number"),
        ({"hyperparameters_above": {"momentum": 0.4}}, "when.hyperparameters_above.momentum", "not in run_spec"),
        ({"spiked_above": 1}, "when.spiked_above", "a factor above 1"),
        ({"spiked_above": 10, "spike_phase": "cooldown"}, "when.spike_phase", "warmup, main"),
        ({"spike_phase": "warmup"}, "when.spike_phase", "needs spiked_above"),
        ({"spiked_above": 2, "spike_series": "weights"}, "when.spike_series", "loss, gradient norm"),
        ({"spike_series": "loss"}, "when.spike_series", "needs spiked_above"),
    ],
)
def test_a_bad_condition_names_its_field(when, field, fragment):
    with pytest.raises(ContractError) as caught:
        parse_condition(when, START, "when")
    assert caught.value.field == field and fragment in caught.value.problem


def test_a_debugger_setting_tried_holds_for_any_job_of_the_run_and_says_so():
    hyperparameters = {"lr": 0.1, "debugger_class_weighting": "off"}
    condition = parse_condition({"debugger_settings_tried": {"class_weighting": "balanced"}}, hyperparameters, "when")
    assert condition.debugger_settings_tried == (("debugger_class_weighting", "balanced"),)
    tried = Situation(debugger_settings_tried=(("debugger_class_weighting", "balanced"),))
    holds, facts = condition.check(tried, hyperparameters)  # the job planned from ran with "off"
    assert holds and [fact.text for fact in facts] == ["a job of this run trained with the debugger's class_weighting balanced"]
    assert not condition.check(Situation(), hyperparameters)[0]
    assert condition.to_json() == {"debugger_settings_tried": {"class_weighting": "balanced"}}
    with pytest.raises(ContractError) as caught:
        parse_condition({"debugger_settings_tried": {"class_weighting": "rebalanced"}}, hyperparameters, "when")
    assert caught.value.field == "when.debugger_settings_tried.class_weighting" and "must be one of" in caught.value.problem


def test_a_resuming_remedy_round_trips_and_resume_must_be_a_flag():
    declared = {"Overfit": [{"hyperparameter": "epochs", "multiply_by": 2, "resume": True}]}
    parsed = parse_remedies(declared, START)
    assert parsed["Overfit"][0].resume is True
    assert remedies_to_json(parsed) == declared
    with pytest.raises(ContractError) as caught:
        parse_remedies({"Overfit": [{"hyperparameter": "epochs", "multiply_by": 2, "resume": "yes"}]}, START)
    assert caught.value.field == "remedies.Overfit[0].resume"


def test_data_errors_take_no_remedies():
    with pytest.raises(ContractError) as caught:
        parse_remedies({DATA_ERROR: [{"hyperparameter": "lr", "multiply_by": 0.5}]}, START)
    assert caught.value.field == "remedies.data_error" and "takes no remedies" in caught.value.problem


def test_any_documented_rule_may_have_remedies_even_one_only_sagemakers_evaluator_runs():
    parse_remedies({"NLPSequenceRatio": [{"hyperparameter": "lr", "multiply_by": 0.5}]}, START)
    with pytest.raises(ContractError) as caught:
        parse_remedies({"ExplodingTensors": [{"hyperparameter": "lr", "multiply_by": 0.5}]}, START)
    assert "is not a built-in rule or failure kind" in caught.value.problem


def test_a_whole_number_hyperparameter_rounds_and_the_reason_says_how_to_declare_a_real_one():
    change = Change("width", "multiply_by", 0.1, minimum=1e-4)  # a JSON integer that is no rate: a whole number
    assert change.apply(2) is None  # 0.2 rounds to 0, below the bound
    assert (
        "width is a whole number, so its results are rounded: exactly it would be 0.2; declare it real in "
        "run_spec.hyperparameter_kinds" in change.why_not(2)
    )


def test_a_built_in_set_adapts_to_a_scripts_names_and_leaves_out_what_the_script_lacks():
    preset = {
        "ExplodingTensor": [
            {"hyperparameter": "add_batch_norm", "set_to": True, "also": [{"hyperparameter": "warmup", "at_most": 0.1}]},
            {"hyperparameter": "learning_rate", "multiply_by": 0.5, "also": [{"hyperparameter": "warmup", "at_most": 0.1}]},
        ],
        "DeadRelu": [{"hyperparameter": "activation", "set_to": "leaky_relu", "when": {"hyperparameters": {"activation": "relu"}}}],
        "CheckInputImages": [{"hyperparameter": "normalize_inputs", "set_to": True}],
    }
    adapted = adapt_to_script(preset, {"learning_rate": "lr"}, START)
    assert adapted == {
        "ExplodingTensor": [{"hyperparameter": "lr", "multiply_by": 0.5}],
        "DeadRelu": [{"hyperparameter": "activation", "set_to": "leaky_relu", "when": {"hyperparameters": {"activation": "relu"}}}],
    }
    parse_remedies(adapted, START)


def test_a_spike_condition_says_which_series_peaked_where_and_holds_only_in_its_phase():
    """The run's history (contracts.situation finds the spike): the condition's fact names the series, its peak's
    step, phase and rate, and the step the rule fired."""
    loss = Peak(value=40.0, step=4, learning_rate=0.8, phase="warmup")
    norm = Peak(value=70.0, step=3, learning_rate=0.8, phase="warmup")
    situation = Situation(issue_step=10, initial_loss=2.0, initial_gradient_norm=6.0, loss_peak=loss, gradient_norm_peak=norm)
    condition = parse_condition({"spiked_above": 10, "spike_phase": "warmup"}, START, "when")
    holds, facts = condition.check(situation, START)
    assert holds and [(fact.test, round(fact.measured, 2), fact.bound) for fact in facts] == [("spiked_above", 11.67, 10)]
    assert [fact.text for fact in facts] == [
        "the gradient norm rose from 6 to 70 (11.7x) at step 3 (warmup phase, learning rate 0.8) before the rule "
        "fired at step 10, more than 10x its initial value"
    ]
    assert not parse_condition({"spiked_above": 10, "spike_phase": "main"}, START, "when").check(situation, START)[0]
    counted = Situation(
        issue_step=40, issue_optimizer_step=10, initial_gradient_norm=6.0,
        gradient_norm_peak=Peak(value=70.0, step=13, learning_rate=0.8, phase="warmup", optimizer_step=3),
    )  # fmt: skip
    assert [fact.text for fact in condition.check(counted, START)[1]] == [
        "the gradient norm rose from 6 to 70 (11.7x) at step 3 (saved as global step 13) (warmup phase, learning rate "
        "0.8) before the rule fired at step 10, more than 10x its initial value"
    ]  # the optimizer steps (decision 205), the saved global step once


def test_a_spike_condition_on_one_series_ignores_the_other():
    """``spike_series``: the gradient norm, which grows in healthy training, does not stand in for the loss."""
    loss = Peak(value=3.0, step=1, learning_rate=0.01)
    norm = Peak(value=70.0, step=3, learning_rate=0.01)
    situation = Situation(issue_step=10, initial_loss=2.0, initial_gradient_norm=6.0, loss_peak=loss, gradient_norm_peak=norm)
    assert not parse_condition({"spiked_above": 2, "spike_series": "loss"}, START, "when").check(situation, START)[0]
    holds, facts = parse_condition({"spiked_above": 1.4, "spike_series": "loss"}, START, "when").check(situation, START)
    assert holds and [(fact.test, fact.measured) for fact in facts] == [("spiked_above", 1.5)]
    assert parse_condition({"spiked_above": 2, "spike_series": "gradient norm"}, START, "when").check(situation, START)[0]
