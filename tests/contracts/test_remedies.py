"""Remedy declarations: the operations, bounds and conditions, and the checks made before anything launches."""

import pytest

from contracts import ContractError
from contracts.remedies import Change, Condition, Remedy, adapt_to_script, parse_remedies, remedies_to_json
from contracts.situation import Situation

START = {"lr": 0.1, "batch_size": 128, "grad_clip": 0.0, "batch_norm": False, "optimizer": "sgd"}


@pytest.mark.parametrize(
    ("change", "current", "expected"),
    [
        (Change("lr", "multiply_by", 0.5, minimum=1e-5), 0.1, 0.05),
        (Change("lr", "multiply_by", 0.5, minimum=0.06), 0.1, None),  # would leave its bound
        (Change("lr", "multiply_by", 0.9, above=0.001), 0.0011, None),  # exclusive: 0.00099 is not above
        (Change("lr", "multiply_by", 0.9, above=0.001), 0.0012, pytest.approx(0.00108)),
        (Change("lr", "add", 0.05, maximum=0.2), 0.1, pytest.approx(0.15)),
        (Change("batch_size", "multiply_by", 0.5, minimum=16), 128, 64),  # integers stay integers
        (Change("batch_size", "multiply_by", 0.5, minimum=16), 17, None),  # 8.5 -> 8 < 16
        (Change("grad_clip", "set_to", 1.0), 0.0, 1.0),
        (Change("grad_clip", "set_to", 1.0), 1.0, None),  # no change: does not apply
        (Change("lr", "at_most", 0.05), 0.1, 0.05),
        (Change("lr", "at_most", 0.5), 0.1, None),
        (Change("lr", "at_least", 0.5), 0.1, 0.5),
        (Change("batch_norm", "set_to", True), False, True),
    ],
)
def test_a_change_applies_within_its_bounds_or_not_at_all(change, current, expected):
    assert change.apply(current) == expected


def test_a_remedy_applies_its_main_change_and_the_others_where_they_apply():
    remedy = Remedy(
        change=Change("batch_norm", "set_to", True),
        also=(Change("lr", "at_most", 0.05), Change("grad_clip", "at_most", 5.0)),
    )
    assert remedy.apply(START) == {**START, "batch_norm": True, "lr": 0.05}
    assert remedy.apply({**START, "batch_norm": True}) is None


def test_conditions_hold_on_the_evidence_and_say_why_with_numbers():
    situation = Situation(issue_step=3, steps_per_epoch=20, phase="warmup", initial_gradient_norm=512.3,
                          initial_loss=2.3, last_finite_loss=9.1)
    holds, facts = Condition(phase="warmup", early=True, initial_gradient_norm_above=50, loss="rising").check(
        situation, START
    )
    assert holds
    assert [(fact.test, fact.measured, fact.bound) for fact in facts] == [
        ("phase", "warmup", None),
        ("early", 3, 10),
        ("initial_gradient_norm_above", 512.3, 50),
        ("loss", 9.1, 2.3),
    ]
    assert [fact.text for fact in facts] == [
        "it happened in the warmup phase",
        "at step 3, before step 10",
        "the initial gradient norm 512.3 is above 50",
        "the loss went from 2.3 to 9.1 (rising)",
    ]
    assert not Condition(phase="main").check(situation, START)[0]
    assert not Condition(early=False).check(situation, START)[0]
    assert not Condition(hyperparameters=(("optimizer", "adam"),)).check(situation, START)[0]
    assert Condition().check(Situation(), START) == (True, [])
    assert not Condition(early=True).check(Situation(), START)[0]  # unknown step: an early-only remedy waits


def test_a_declaration_round_trips_through_json():
    declared = {
        "ExplodingTensor": [
            {"hyperparameter": "grad_clip", "set_to": 1.0, "name": "Clip", "note": "why"},
            {
                "hyperparameter": "lr",
                "multiply_by": 0.5,
                "min": 1e-5,
                "also": [{"hyperparameter": "batch_size", "at_least": 64}],
                "when": {"phase": "main", "hyperparameters": {"optimizer": "sgd"}},
            },
        ],
        "objective_missed": [{"hyperparameter": "lr", "multiply_by": 2, "max": 0.4}],
    }
    parsed = parse_remedies(declared, START)
    assert remedies_to_json(parsed) == declared
    assert parsed["ExplodingTensor"][0].label == "Clip"
    assert parsed["objective_missed"][0].label == "multiply lr by 2 (not above 0.4)"


BAD = [
    ([1], "remedies", "JSON object"),
    ({"Exploding": []}, "remedies.Exploding", "not a built-in rule or failure kind"),
    ({"*": {}}, "remedies.*", "JSON list"),
    ({"*": [{"hyperparameter": "lr"}]}, "remedies.*[0]", "exactly one operation"),
    ({"*": [{"hyperparameter": "lr", "set_to": 1, "multiply_by": 2}]}, "remedies.*[0]", "exactly one operation"),
    ({"*": [{"hyperparameter": "lr", "multiply_by": -1}]}, "remedies.*[0].multiply_by", "must be > 0"),
    ({"*": [{"hyperparameter": "lr", "multiply_by": float("nan")}]}, "remedies.*[0].multiply_by", "finite"),
    ({"*": [{"hyperparameter": "lr", "add": 0}]}, "remedies.*[0].add", "never changes lr"),
    ({"*": [{"hyperparameter": "lr", "scale": 2}]}, "remedies.*[0].scale", "not a remedy key"),
    ({"*": [{"hyperparameter": "lr", "multiply_by": 0.5, "above": 0.1, "below": 0.1}]}, "remedies.*[0].above", "wrong way"),
    ({"*": [{"hyperparameter": "optimizer", "set_to": 2}]}, "remedies.*[0].set_to", "must be text like optimizer's"),
    ({"*": [{"hyperparameter": "batch_norm", "multiply_by": 2}]}, "remedies.*[0].multiply_by", "needs a number"),
    ({"*": [{"hyperparameter": "lr", "multiply_by": 0.5, "when": {"loss": "flat"}}]}, "remedies.*[0].when.loss", "rising"),
    (
        {"*": [{"hyperparameter": "lr", "multiply_by": 0.5, "when": {"hyperparameters": {"momentum": 0.9}}}]},
        "remedies.*[0].when.hyperparameters.momentum",
        "not in run_spec.hyperparameters",
    ),
    ({"*": [{"hyperparameter": "lr", "multiply_by": 0.5, "also": [{"hyperparameter": "lr", "note": "x"}]}]},
     "remedies.*[0].also[0].note", "not a change key"),
    ({"*": [{"hyperparameter": "lr", "at_most": 0.5}]}, "remedies.*[0]", "can never apply: lr is already 0.1"),
]


@pytest.mark.parametrize(("declared", "field", "fragment"), BAD, ids=[str(index) for index in range(len(BAD))])
def test_a_bad_declaration_names_the_field_and_the_fix(declared, field, fragment):
    with pytest.raises(ContractError) as caught:
        parse_remedies(declared, START)
    assert caught.value.field == field
    assert fragment in caught.value.problem


def test_a_step_another_remedy_can_reach_is_not_refused():
    """lr 0.1 at_most 0.5 cannot apply from the start, but another remedy raises lr first."""
    declared = {"*": [{"hyperparameter": "lr", "at_most": 0.5}], "objective_missed": [{"hyperparameter": "lr", "multiply_by": 10}]}
    assert parse_remedies(declared, START)
    assert parse_remedies({"*": [{"hyperparameter": "lr", "at_most": 0.5}]}, START, check_reachable=False)


def test_to_best_epoch_sets_the_epochs_the_jobs_course_met_the_objective_at_and_says_so():
    """A job of 12 epochs whose held-out accuracy met 0.9 after epoch 6 (0.953) and ended at 0.897: the epochs go to
    6. A job that reported its metric more or fewer times than it trained epochs, or never met it before its last
    epoch, shows no such epoch: the change does not apply."""
    from contracts.objective import Objective, ObjectiveCourse

    objective = Objective("validation:accuracy", "Maximize", 0.9)
    start = {**START, "epochs": 12}
    declared = {"objective_missed": [{"hyperparameter": "epochs", "to_best_epoch": True,
                                      "when": {"objective_met_before_end": True}}]}
    remedy = parse_remedies(declared, start)["objective_missed"][0]
    assert remedies_to_json({"objective_missed": (remedy,)}) == declared
    course = ObjectiveCourse(reports=12, best_report=6, best_value=0.9528, last_value=0.8972)
    situation = Situation(objective=objective, objective_course=course, epochs=12)
    holds, facts = remedy.when.check(situation, start)
    assert holds and [(fact.test, fact.measured) for fact in facts] == [("objective_met_before_end", 6)]
    assert [fact.text for fact in facts] == [
        "validation:accuracy met the objective (>= 0.9) after epoch 6 of 12, at 0.9528 (its best), and ended at 0.8972"
    ]
    assert remedy.apply(start, situation) == {**start, "epochs": 6}
    assert remedy.change.describe() == "set epochs to the epoch at which the objective was met at its best"
    assert remedy.when.names_a_cause  # it answers a miss the training labels explain too
    for other in (
        Situation(objective=objective, objective_course=course, epochs=24),  # reported every other epoch
        Situation(objective=objective, objective_course=course),  # epochs unknown
        Situation(objective=objective, objective_course=ObjectiveCourse(12, 6, 0.88, 0.85), epochs=12),  # never met
        Situation(objective=objective, epochs=12),  # the script saved no course
    ):
        assert not remedy.when.check(other, start)[0]
        assert remedy.apply(start, other) is None
    assert "was not met at an epoch before its last" in remedy.change.why_not(12)


@pytest.mark.parametrize(
    ("entry", "field", "fragment"),
    [
        ({"hyperparameter": "lr", "to_best_epoch": True}, "remedies.*[0].to_best_epoch", "an epoch count is a whole number"),
        ({"hyperparameter": "epochs", "to_best_epoch": 3}, "remedies.*[0].to_best_epoch", "must be true"),
        ({"hyperparameter": "epochs", "to_best_epoch": True, "when": {"objective_met_before_end": "yes"}},
         "remedies.*[0].when.objective_met_before_end", "true or false"),
        ({"hyperparameter": "epochs", "multiply_by": 2, "when": {"objective_past_peak": "no"}},
         "remedies.*[0].when.objective_past_peak", "true or false"),
        ({"hyperparameter": "epochs", "multiply_by": 2, "when": {"objective_still_rising": 1}},
         "remedies.*[0].when.objective_still_rising", "true or false"),
        ({"hyperparameter": "epochs", "multiply_by": 2, "when": {"loss_weighted_by_class": "balanced"}},
         "remedies.*[0].when.loss_weighted_by_class", "true or false"),
        ({"hyperparameter": "lr", "multiply_by": 0.3, "when": {"loss_robust_to_wrong_labels": "off"}},
         "remedies.*[0].when.loss_robust_to_wrong_labels", "true or false"),
    ],
)
def test_a_bad_best_epoch_remedy_names_the_field(entry, field, fragment):
    with pytest.raises(ContractError) as caught:
        parse_remedies({"*": [entry]}, {**START, "epochs": 12})
    assert caught.value.field == field and fragment in caught.value.problem


def test_remedies_for_objective_out_of_reach_are_refused_pointing_at_objective_missed():
    """A job ObjectiveOutOfReach stops is a quiet miss caught early: remedies declared under the rule would never run."""
    with pytest.raises(ContractError) as caught:
        parse_remedies({"ObjectiveOutOfReach": [{"hyperparameter": "epochs", "multiply_by": 2}]}, {**START, "epochs": 12})
    assert caught.value.field == "remedies.ObjectiveOutOfReach"
    assert "declare them under 'objective_missed'" in caught.value.problem


def test_a_script_that_spells_a_knobs_values_its_own_way_gets_the_remedies_in_its_spelling():
    """Batch norm on is --norm batch, leaky ReLU is --act lrelu: the value map translates what a remedy sets and what
    a condition tests; a value the map does not name is one the script does not take, so that remedy is left out."""
    preset = {
        "ExplodingTensor": [{"name": "AddBatchNorm", "hyperparameter": "add_batch_norm", "set_to": True}],
        "DeadRelu": [
            {"name": "SwitchToLeakyReLU", "hyperparameter": "activation", "set_to": "leaky_relu",
             "when": {"hyperparameters": {"activation": "relu"}}},
            {"name": "SwitchToELU", "hyperparameter": "activation", "set_to": "elu"},
        ],
    }  # fmt: skip
    names = {"add_batch_norm": "norm", "activation": "act"}
    values = {"add_batch_norm": {"true": "batch", "false": "none"}, "activation": {"relu": "relu", "leaky_relu": "lrelu"}}
    hyperparameters = {"norm": "none", "act": "relu"}
    adapted = adapt_to_script(preset, names, hyperparameters, values)
    assert adapted == {
        "ExplodingTensor": [{"name": "AddBatchNorm", "hyperparameter": "norm", "set_to": "batch"}],
        "DeadRelu": [
            {"name": "SwitchToLeakyReLU", "hyperparameter": "act", "set_to": "lrelu", "when": {"hyperparameters": {"act": "relu"}}}
        ],
    }
    remedy = parse_remedies(adapted, hyperparameters)["ExplodingTensor"][0]
    assert remedy.apply(hyperparameters) == {"norm": "batch", "act": "relu"}
    # without a value map the names alone are translated, as before
    assert adapt_to_script(preset, names, hyperparameters)["ExplodingTensor"][0]["set_to"] is True
