"""The smdebug corpus (tests/smdebug_corpus): each script runs unchanged, as in a training job, and its
output is what smdebug documents for it."""

from __future__ import annotations

import json
import math
import subprocess

import numpy as np
import pytest
from smdebug_job_source import REPO, command, job_environment, run, source_dir, start

from contracts.rule_status import RULE_STATUS_FILE, RuleStatusDocument
from local_runtime.offline_aws import OFFLINE_AWS_ENVIRONMENT
from smdebug import modes
from smdebug.exceptions import TensorUnavailableForStep
from smdebug.trials import create_trial

pytestmark = pytest.mark.training


def ok(result) -> str:
    assert result.returncode == 0, f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr[-4000:]}"
    return result.stdout


def status(directory) -> RuleStatusDocument:
    return RuleStatusDocument.from_json((directory / RULE_STATUS_FILE).read_text())


SAGEMAKER_HOOK_FILE = {
    # as SageMaker writes /opt/ml/input/config/debughookconfig.json: smdebug's spelling of the S3 path,
    # numbers and booleans besides strings, mode-prefixed keys, a collection of the user's own
    "S3Path": "s3://example-bucket/job/debug-output",
    "HookParameters": {"save_all": False, "train.save_interval": 4, "eval.save_interval": "2", "include_regex": "fc2_output"},
    "CollectionConfigurations": [
        {"CollectionName": "weights"},
        {
            "CollectionName": "gradients",
            "CollectionParameters": {"save_steps": "1, 2", "reductions": "max,abs_mean,l2_norm", "save_raw_tensor": True},
        },
        {"CollectionName": "losses", "CollectionParameters": {"save_interval": 1}},
        {"CollectionName": "ReluActivation", "CollectionParameters": {"include_regex": "relu*", "eval.save_interval": 1}},
    ],
}


def test_hook_from_sagemakers_json_file(tmp_path):
    src = source_dir(tmp_path, "hook_from_json")
    out = tmp_path / "tensors"
    config = tmp_path / "config" / "debughookconfig.json"
    config.parent.mkdir()
    config.write_text(json.dumps({**SAGEMAKER_HOOK_FILE, "LocalPath": str(out)}))
    rules = tmp_path / "config" / "rules.json"
    rules.write_text(json.dumps([{"RuleConfigurationName": "VanishingGradient", "RuleParameters": {"rule_to_invoke": "VanishingGradient"}}]))
    env = job_environment(SMDEBUG_CONFIG_FILE_PATH=str(config), DEBUGGER_RULE_CONFIG_FILE_PATH=str(rules))
    assert "Training is complete" in ok(run(src, "train.py", env=env))

    trial = create_trial(str(out))
    # 2 epochs of 8 training and 4 evaluation steps: losses saved at every step (save_interval 1)
    assert trial.steps(mode=modes.TRAIN) == list(range(16)) and trial.steps(mode=modes.EVAL) == list(range(8))
    assert trial.steps() == list(range(24)) and trial.mode(8) == modes.EVAL and trial.global_step(modes.EVAL, 4) == 20
    weight = trial.tensor("Net_fc1.weight")
    assert weight.steps(mode=modes.TRAIN) == [0, 4, 8, 12] and weight.steps(mode=modes.EVAL) == [0, 2, 4, 6]
    gradient = trial.tensor("gradient/Net_fc1.weight")
    assert gradient.steps(mode=modes.TRAIN) == [0, 1, 2, 4, 8, 12]  # save_steps besides the interval
    assert gradient.steps(mode=modes.EVAL) == []  # no gradients in evaluation
    saved = gradient.reduction_values(1, mode=modes.TRAIN)
    assert set(saved) == {("max", False), ("mean", True), ("l2", False)}
    raw = gradient.value(1, mode=modes.TRAIN)
    assert saved[("l2", False)] == pytest.approx(np.linalg.norm(raw), rel=1e-5)
    assert saved[("mean", True)] == pytest.approx(np.abs(raw).mean(), rel=1e-5)
    assert {"relu1_input_0", "relu1_output_0"} <= set(trial.tensor_names(collection="ReluActivation"))
    assert trial.tensor("relu1_input_0").steps(mode=modes.EVAL) == list(range(8))
    assert trial.tensor_names(collection="default") == ["fc2_output_0"]
    assert len(trial.tensor("NLLLoss_output_0").values(mode=modes.EVAL)) == 8
    assert trial.collection("ReluActivation").include_regex == ["relu*"]
    document = status(out)
    assert [(rule.RuleConfigurationName, rule.RuleEvaluationStatus) for rule in document.rules] == [("VanishingGradient", "NoIssuesFound")]


def test_hook_in_code_saves_reductions_instead_of_tensors(tmp_path):
    src = source_dir(tmp_path, "hook_in_code_reductions")
    out = tmp_path / "run"
    ok(run(src, "train.py", "--out_dir", str(out)))
    trial = create_trial(str(out))
    assert trial.steps() == [0, 5, 10]
    weight = trial.tensor("Model_fc.weight")
    with pytest.raises(TensorUnavailableForStep) as missing:
        weight.value(5)
    assert missing.value.has_reductions  # only reductions were saved
    assert set(weight.reduction_values(5)) == {("max", False), ("mean", False), ("mean", True), ("l2", False)}
    assert weight.reduction_value(5, "mean", abs=True) >= abs(weight.reduction_value(5, "mean"))
    with pytest.raises(TensorUnavailableForStep):
        weight.reduction_value(5, "min")  # neither saved nor computable
    bias = trial.tensor("Model_fc.bias")  # the biases collection keeps the tensor too
    assert bias.reduction_value(10, "mean") == pytest.approx(float(bias.value(10).mean()), rel=1e-6)
    assert trial.tensor("CrossEntropyLoss_output_0").value(10).shape == ()  # losses are never reduced


def test_modes_functional_loss_custom_collection_scalars(tmp_path):
    src = source_dir(tmp_path, "modes_custom_collections")
    out = tmp_path / "run"
    ok(run(src, "train.py", "--out_dir", str(out)))
    trial = create_trial(str(out))
    assert trial.modes() == [modes.TRAIN, modes.EVAL]
    loss = trial.tensor("loss_output_0")  # record_tensor_value(tensor_name="loss")
    assert loss.steps(mode=modes.TRAIN) == [0, 3, 6, 9, 12] and loss.steps(mode=modes.EVAL) == list(range(8))
    assert "loss_output_0" in trial.tensor_names(collection="losses")
    relu = trial.tensor_names(collection="relu_activations")
    assert relu == ["relu_output_0"] and trial.tensor("relu_output_0").steps(mode=modes.TRAIN) == [0, 1, 2]
    # save_tensor(..., "custom") after the optimizer step: smdebug writes it with the next step the hook sees (step 0
    # has none), when the hook's save configuration saves that step
    labels = trial.tensor("batch_labels")
    assert labels.steps(mode=modes.TRAIN) == [3, 6, 9, 12] and labels.value(3, mode=modes.TRAIN).shape == (10,)
    accuracy = trial.tensor("scalar/accuracy")  # save_scalar: at the step it was called, whatever the config
    assert sorted(accuracy.values(mode=modes.EVAL)) == [3, 7]
    assert all(value.shape == (1,) and 0.0 <= value[0] <= 1.0 for value in accuracy.values().values())  # as smdebug: (1,)
    metrics = status(out).metrics
    assert metrics["accuracy"].mode == "EVAL" and metrics["accuracy"].value == pytest.approx(accuracy.value(7, mode=modes.EVAL)[0])


@pytest.mark.parametrize("hook_type", ["saveall", "module-input-output"])
def test_save_all_and_module_tensors(tmp_path, hook_type):
    src = source_dir(tmp_path, "save_all_module_tensors")
    out = tmp_path / "run"
    ok(run(src, "train.py", "--smdebug_path", str(out), "--hook-type", hook_type))
    trial = create_trial(str(out))
    assert trial.steps() == [0, 2, 5]  # save_steps [2, 5] besides the interval's step 0
    names = set(trial.tensor_names())
    parameters = {"Net_fc1.weight", "Net_fc1.bias", "Net_fc2.weight", "Net_fc2.bias"}
    assert parameters <= names and {"gradient/" + name for name in parameters} <= names
    if hook_type == "saveall":
        io = {"fc1_input_0", "fc1_output_0", "relu1_input_0", "relu1_output_0", "fc2_input_0", "fc2_output_0", "Net_input_0", "Net_output_0"}
        assert io <= set(trial.tensor_names(collection="all"))
        assert np.allclose(trial.tensor("relu1_output_0").value(2), np.maximum(trial.tensor("relu1_input_0").value(2), 0))
    else:
        assert trial.tensor_names(collection="l_mod") == ["fc2_input_0", "fc2_output_0"]
        assert trial.tensor("fc2_output_0").value(5).shape == (8, 4)


def test_realtime_analysis_follows_a_running_job(tmp_path):
    src = source_dir(tmp_path, "realtime_analysis")
    out = tmp_path / "run"
    writer = start(src, "train.py", "--out_dir", str(out), "--steps", "10", "--seconds_per_step", "0.4")
    try:
        assert writer.stdout.readline().startswith("step 0")
        report = json.loads(ok(run(src, "analyse.py", str(out))))
        assert writer.wait(timeout=300) == 0, writer.stderr.read()
    finally:
        writer.kill()
    assert report["train_steps"] == list(range(10))
    assert sorted(int(step) for step in report["losses"]) == list(range(10))
    states = dict((step, state) for step, state in report["states_while_running"])
    assert "NOT_YET_AVAILABLE" in states.values()  # it looked ahead of the job at least once
    assert report["no_more_data_at"] == 10 and report["last_step"] == 9 and report["after_end"] == "UNAVAILABLE"
    trial = create_trial(str(out))
    assert [round(float(trial.tensor("CrossEntropyLoss_output_0").value(step, mode=modes.TRAIN)), 6) for step in range(10)] == [
        round(report["losses"][str(step)], 6) for step in range(10)
    ]


def test_custom_rule_with_invoke_rule_and_in_the_job(tmp_path):
    src = source_dir(tmp_path, "custom_rule_invoke")
    out = tmp_path / "run"
    rules = tmp_path / "rules.json"
    rules.write_text(
        json.dumps(
            [
                {
                    "RuleConfigurationName": "GradientTooLarge",
                    "RuleParameters": {"rule_to_invoke": "CustomGradientRule", "custom_rule_source": "my_rules.py", "threshold": "1.0"},
                }
            ]
        )
    )
    ok(run(src, "train.py", str(out), env=job_environment(DEBUGGER_RULE_CONFIG_FILE_PATH=str(rules))))
    report = json.loads(ok(run(src, "analyse.py", str(out), "1.0")))
    met = report["condition_met"]
    assert met["rule"] == "CustomGradientRule" and met["step"] == 6
    assert met["text"] == "Evaluation of the rule CustomGradientRule at step 6 resulted in the condition being met"
    assert report["completed_without_raising"]
    # the same rule, run in the job at every step, found the same step
    in_job = status(out).rules[0]
    assert in_job.RuleEvaluationStatus == "IssuesFound" and in_job.issue.step == 6


def test_rules_of_the_job_stop_training_at_the_step_it_explodes(tmp_path):
    src = source_dir(tmp_path, "rule_stops_training")
    out = tmp_path / "run"
    rules = tmp_path / "rules.json"
    rules.write_text(
        json.dumps(
            [
                {
                    "RuleConfigurationName": "ExplodingTensor",
                    "RuleParameters": {"rule_to_invoke": "ExplodingTensor", "action_json": '[{"name":"StopTraining"}]'},
                },
                {"RuleConfigurationName": "LossNotDecreasing", "RuleParameters": {"rule_to_invoke": "LossNotDecreasing"}},
            ]
        )
    )
    result = run(src, "train.py", "--out_dir", str(out), env=job_environment(DEBUGGER_RULE_CONFIG_FILE_PATH=str(rules)))
    assert result.returncode != 0
    assert "StopTraining: rule ExplodingTensor found an issue at step 5" in result.stderr
    assert "step 4 done" in result.stdout and "step 5 done" not in result.stdout  # no optimizer step at step 5
    document = status(out)
    exploding = document.rules[0]
    assert exploding.RuleEvaluationStatus == "IssuesFound" and exploding.issue.step == 5
    assert math.isnan(exploding.issue.value) and exploding.issue.tensor.startswith("gradient/Sequential_")
    trial = create_trial(str(out))
    assert trial.steps() == [0, 5]  # step 0 by the interval, the first non-finite step always
    assert np.isnan(trial.tensor("gradient/Sequential_0.weight").value(5)).any()


def test_s3_out_dir_and_s3_trial(tmp_path):
    src = source_dir(tmp_path, "s3_trial")
    uri = "s3://smdebug-corpus/jobs/run-1"
    scripts = json.dumps([["train.py", uri], ["analyse.py", uri]])
    runner = str(REPO / "tests" / "smdebug" / "run_under_moto.py")
    env = job_environment(**OFFLINE_AWS_ENVIRONMENT, AWS_DEFAULT_REGION="us-east-1")
    result = subprocess.run(
        command(runner, str(src), "smdebug-corpus", scripts), cwd=src, env=env, capture_output=True, text=True, timeout=180
    )
    report = json.loads(ok(result).strip().splitlines()[-1])
    assert report["steps"] == [0, 2, 4]
    assert report["gradients"] == ["gradient/Sequential_0.bias", "gradient/Sequential_0.weight", "gradient/Sequential_2.bias", "gradient/Sequential_2.weight"]
    assert {"Sequential_0.weight", "CrossEntropyLoss_output_0"} <= set(report["tensor_names"])
    assert report["weight_shape"] == [4, 5] and report["weight_l2_at_2"] > 0
    assert report["loss_steps"] == [0, 2, 4] and {"weights", "gradients", "losses"} <= set(report["collections"])
