"""What a hyperparameter is and how a changed value is written: a rate is a real number whatever its JSON form, a
flag keeps the run_spec's spelling, arithmetic noise never reaches the script."""

from __future__ import annotations

import pytest

from contracts.hyperparameter_values import FLAG, INTEGER, REAL, TEXT, human_number, infer_kinds, written
from contracts.job import render_hyperparameter
from contracts.remedies import parse_remedies


def test_a_rates_name_makes_a_json_integer_a_real_number_and_other_integers_stay_whole():
    kinds = infer_kinds({"lr": 50, "warmup-lr": 1, "base_learning_rate": 2, "eta": 1, "epochs": 5, "width": 128})
    assert kinds == {
        "lr": REAL, "warmup-lr": REAL, "base_learning_rate": REAL, "eta": REAL, "epochs": INTEGER, "width": INTEGER,
    }  # fmt: skip


def test_declared_kinds_win_then_meanings_then_names_then_values():
    hyperparameters = {"lr": 50, "width": 128, "bn": 0, "act": "relu"}
    kinds = infer_kinds(hyperparameters, declared={"width": REAL}, meanings={"bn": FLAG, "lr": INTEGER})
    assert kinds == {"lr": INTEGER, "width": REAL, "bn": FLAG, "act": TEXT}


@pytest.mark.parametrize(
    ("value", "kind", "like", "expected"),
    [
        (0.1 * 0.05, REAL, 0.1, 0.005),
        (0.1 * 0.9, REAL, 0.1, 0.09),
        (5.0, REAL, 50, 5.0),
        (2.6, INTEGER, 5, 3),
        (True, FLAG, 0, 1),
        (False, FLAG, 1, 0),
        (1, FLAG, False, True),
    ],
)
def test_a_result_is_written_as_its_kind_is(value, kind, like, expected):
    result = written(value, kind, like)
    assert result == expected and type(result) is type(expected)


def test_the_script_receives_numbers_as_a_person_writes_them():
    remedies = parse_remedies({"*": [{"hyperparameter": "lr", "multiply_by": 0.05}]}, {"lr": 0.1})
    new = remedies["*"][0].apply({"lr": 0.1})["lr"]
    assert render_hyperparameter(new) == "0.005"  # not 0.005000000000000001
    assert render_hyperparameter(0.1 * 0.05) == "0.005000000000000001"  # what plain arithmetic would have sent
    assert human_number(1e-05 * 3) == 3e-05


def test_a_rate_written_as_an_integer_is_multiplied_as_a_real_number():
    remedies = parse_remedies({"*": [{"hyperparameter": "lr", "multiply_by": 0.1, "min": 1e-4}]}, {"lr": 50})
    change = remedies["*"][0]
    assert change.apply({"lr": 50}) == {"lr": 5.0}
    assert change.apply({"lr": 5.0}) == {"lr": 0.5}


def test_a_flag_written_0_1_takes_true_and_false():
    start = {"batch-norm": 0}
    remedies = parse_remedies(
        {"*": [{"hyperparameter": "batch-norm", "set_to": True, "when": {"hyperparameters": {"batch-norm": False}}}]},
        start,
        kinds={"batch-norm": FLAG},
    )
    remedy = remedies["*"][0]
    assert remedy.change.describe() == "turn batch-norm on"
    assert remedy.apply(start) == {"batch-norm": 1}
    assert remedy.apply({"batch-norm": 1}) is None  # already on
