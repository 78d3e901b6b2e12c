"""The container contract: hyperparameters as SageMaker carries them, script-mode arguments, failure texts."""

import json

import pytest

from contracts.job import (
    MAX_HYPERPARAMETER_VALUE_LENGTH,
    STOP_TRAINING_FAILURE,
    HyperparameterError,
    decode_hyperparameter,
    encode_hyperparameters,
    parse_script_mode_arguments,
    render_hyperparameter,
    script_mode_arguments,
    stop_training_failure_text,
)


def test_values_are_encoded_as_the_sagemaker_sdk_sends_them_and_decoded_as_the_toolkit_reads_them():
    encoded = encode_hyperparameters({"lr": 0.1, "epochs": 3, "nesterov": True, "name": "run a", "layers": [1, 2]})
    assert encoded == {
        "lr": '"0.1"',
        "epochs": '"3"',
        "nesterov": '"true"',
        "name": '"run a"',
        "layers": '"[1,2]"',
    }
    assert {name: decode_hyperparameter(value) for name, value in encoded.items()} == {
        "lr": "0.1",
        "epochs": "3",
        "nesterov": "true",
        "name": "run a",
        "layers": "[1,2]",
    }
    assert decode_hyperparameter("0.1") == "0.1"  # a value written without the second encoding


def test_a_value_over_sagemakers_limit_is_refused_naming_it():
    with pytest.raises(HyperparameterError, match="'notes'.*SageMaker allows 2500"):
        encode_hyperparameters({"notes": "x" * MAX_HYPERPARAMETER_VALUE_LENGTH})


def test_script_mode_arguments_leave_out_sagemakers_own_and_round_trip():
    encoded = encode_hyperparameters({"lr": 0.1, "sagemaker_program": "x.py", "grad-clip": 0})
    arguments = script_mode_arguments(encoded)
    assert arguments == ["--lr", "0.1", "--grad-clip", "0"]
    assert parse_script_mode_arguments(arguments) == {"lr": "0.1", "grad_clip": "0"}
    assert parse_script_mode_arguments(["--learning_rate=0.1"]) == {"learning_rate": "0.1"}
    with pytest.raises(HyperparameterError, match="has no value"):
        parse_script_mode_arguments(["--learning_rate"])
    with pytest.raises(HyperparameterError, match="--name value"):
        parse_script_mode_arguments(["learning_rate", "0.1"])


def test_the_stop_training_failure_text_is_read_back_by_its_pattern():
    text = stop_training_failure_text("ExplodingTensor", 17, "2 NaN values in gradient/fc.weight")
    match = STOP_TRAINING_FAILURE.search("AlgorithmError: " + text)
    assert (match["rule"], match["step"]) == ("ExplodingTensor", "17")
    named = stop_training_failure_text("ExplodingTensor", 17, "2 NaN values", "step 12 (saved as global step 17)")
    assert named == "StopTraining: rule ExplodingTensor found an issue at step 12 (saved as global step 17): 2 NaN values"
    match = STOP_TRAINING_FAILURE.search(named)
    assert (match["rule"], match["step"], match["saved"]) == ("ExplodingTensor", "12", "17")


def test_rendering_keeps_json_for_structured_values():
    assert render_hyperparameter({"a": 1}) == json.dumps({"a": 1}, separators=(",", ":"))
    assert render_hyperparameter(False) == "false"


def test_a_value_longer_than_sagemakers_limit_travels_in_parts_each_within_it_and_joins_back():
    import json

    from contracts.job import (
        MAX_HYPERPARAMETER_VALUE_LENGTH,
        encode_hyperparameters,
        join_long_value,
        split_long_value,
    )

    text = json.dumps([{"RuleConfigurationName": f"Rule{index}", "RuleParameters": {"action_json": '[{"name":"StopTraining"}]',
                                                                                    "tensor_regex": ".*\\\\.weight"}}
                       for index in range(20)])
    parts = split_long_value("remediation_debugger_rule_configs", text)
    assert list(parts)[:2] == ["remediation_debugger_rule_configs", "remediation_debugger_rule_configs_1"]
    assert all(len(value) <= MAX_HYPERPARAMETER_VALUE_LENGTH for value in encode_hyperparameters(parts).values())
    assert join_long_value("remediation_debugger_rule_configs", parts) == text
    assert split_long_value("remediation_x", "short") == {"remediation_x": "short"}
    assert join_long_value("remediation_x", {}) is None
