import json

import pytest

from model.hyperparameters import (
    HyperparameterError,
    TrainingHyperparameters,
    check_json_values,
    parse_hyperparameters,
)
from model.hyperparameters import main as hyperparameters_main


def test_defaults_are_the_reference_scenario():
    defaults = TrainingHyperparameters()
    assert (defaults.warmup_learning_rate, defaults.learning_rate, defaults.add_batch_norm) == (0.1, 0.1, False)
    assert (defaults.depth, defaults.batch_size, defaults.momentum, defaults.weight_decay) == (20, 128, 0.9, 1e-4)


def test_round_trip_through_sagemaker_strings():
    original = TrainingHyperparameters(warmup_learning_rate=0.0125, add_batch_norm=True, depth=32, lr_decay_epochs="80,120")
    rendered = original.to_sagemaker()
    assert all(isinstance(value, str) for value in rendered.values())
    assert parse_hyperparameters(rendered) == original


def test_sagemaker_json_file_double_encoding_and_reserved_keys_are_accepted():
    file_content = {"warmup_learning_rate": json.dumps("0.05"), "sagemaker_program": json.dumps("train.py")}
    assert parse_hyperparameters(file_content).warmup_learning_rate == 0.05


@pytest.mark.parametrize(
    ("raw", "field", "fragment"),
    [
        ({"warmup_lr": "0.1"}, "warmup_lr", "not a known hyperparameter"),
        ({"learning_rate": "fast"}, "learning_rate", "must be a number"),
        ({"learning_rate": "0"}, "learning_rate", "must be > 0.0"),
        ({"num_epochs": "2.5"}, "num_epochs", "whole number"),
        ({"add_batch_norm": "maybe"}, "add_batch_norm", "true or false"),
        ({"depth": "21"}, "depth", "6n+2"),
        ({"activation": "swish"}, "activation", "elu"),
        ({"momentum": "1.0"}, "momentum", "< 1.0"),
        ({"lr_decay_epochs": "10,5"}, "lr_decay_epochs", "increasing"),
        ({"debugger_rule_configs": "[]"}, "debugger_rule_configs", "not a known hyperparameter"),
        ({"warmup_learning_rate": "nan"}, "warmup_learning_rate", "finite"),
    ],
)
def test_bad_values_name_the_field_and_what_is_allowed(raw, field, fragment):
    with pytest.raises(HyperparameterError) as caught:
        parse_hyperparameters(raw)
    assert caught.value.field == field
    assert fragment in str(caught.value)


def test_learning_rate_schedule_warmup_then_step_decay():
    spec = TrainingHyperparameters(warmup_learning_rate=0.01, learning_rate=0.1, lr_decay_epochs="3,5")
    assert [round(spec.learning_rate_at_epoch(epoch), 6) for epoch in range(6)] == [0.01, 0.1, 0.1, 0.01, 0.01, 0.001]
    assert [spec.phase_at_epoch(epoch) for epoch in range(2)] == ["warmup", "main"]


@pytest.mark.parametrize(
    ("values", "fragment"),
    [
        ({"learning_rate": "0.1"}, "'learning_rate': must be a number; got \"0.1\" (write it without quotes)"),
        ({"batch_size": 64.5}, "'batch_size': must be a whole number; got 64.5"),
        ({"add_batch_norm": 1}, "'add_batch_norm': must be true or false; got 1"),
        ({"activation": 3}, "'activation': must be text; got 3"),
        ({"batch_size": 0}, "'batch_size': must be >= 1"),
        ({"dept": 20}, "'dept': is not a known hyperparameter"),
    ],
)
def test_json_values_are_checked_strictly_before_a_job_starts(values, fragment):
    with pytest.raises(HyperparameterError) as caught:
        check_json_values(values)
    assert fragment in str(caught.value)


def test_the_check_tool_prints_the_full_set_or_one_error_line(capsys):
    assert hyperparameters_main(["check", '{"batch_size": 64, "add_batch_norm": true}']) == 0
    assert '"batch_size": "64"' in capsys.readouterr().out
    assert hyperparameters_main(["check", '{"depth": 21}']) == 2
    assert capsys.readouterr().err.startswith("error: hyperparameter 'depth': must be 6n+2")
