"""The tensor and activation rules (DeadRelu, SaturatedActivation, AllZero, UnchangedTensor, TensorVariance,
CheckInputImages): each fires at its documented threshold and stays quiet just short of it, on constructed
tensors (the real torch jobs: test_tensor_rules_jobs.py)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from rule_trials import assert_refused, make, trial_with

from contracts.rule_status import NAN_INPUT, RULE_STATUS_FILE, RuleStatusDocument
from debugger import Hook
from debugger.rules import BUILTIN_RULES, builtin_rule_parameters
from debugger.trial import LiveTrial

TENSOR_RULES = ("DeadRelu", "SaturatedActivation", "AllZero", "UnchangedTensor", "TensorVariance", "CheckInputImages")



def relu_outputs(dead_units: int, units: int = 10, batch: int = 100, active_in: int = 50) -> np.ndarray:
    """ReLU outputs (batch, units): the first ``dead_units`` units are 0 everywhere, the others > 0 in
    ``active_in`` of the ``batch`` samples."""
    values = np.zeros((batch, units), dtype=np.float32)
    values[:active_in, dead_units:] = 1.0
    return values


def test_every_tensor_rule_is_registered_with_its_documented_defaults():
    assert set(TENSOR_RULES) <= set(BUILTIN_RULES)
    dead = builtin_rule_parameters("DeadRelu", {}, "x")
    assert [p.pattern for p in dead["tensor_regex"]] == [".*relu_output"]
    assert (dead["threshold_inactivity"], dead["threshold_layer"]) == (1.0, 50.0)
    saturated = builtin_rule_parameters("SaturatedActivation", {}, "x")
    assert [p.pattern for p in saturated["tensor_regex"]] == [".*tanh_input", ".*sigmoid_input"]
    assert saturated["threshold_tanh"] == (-9.4999, 9.4999) and saturated["threshold_sigmoid"] == (-23.0, 16.99999)
    assert builtin_rule_parameters("AllZero", {}, "x")["threshold"] == 100.0
    unchanged = builtin_rule_parameters("UnchangedTensor", {}, "x")
    assert (unchanged["num_steps"], unchanged["rtol"], unchanged["atol"], unchanged["equal_nan"]) == (3, 1e-05, 1e-08, False)
    variance = builtin_rule_parameters("TensorVariance", {}, "x")
    assert variance["max_threshold"] is None and variance["min_threshold"] is None
    images = builtin_rule_parameters("CheckInputImages", {}, "x")
    assert (images["threshold_mean"], images["threshold_samples"], images["channel"]) == (0.2, 500, 1)
    assert images["regex"].pattern == ".*hybridsequential0_input_0"


# --------------------------------------------------------------------------- DeadRelu


@pytest.mark.parametrize(("dead_units", "fires"), [(6, True), (5, False)])
def test_dead_relu_fires_above_threshold_layer(tmp_path, dead_units, fires):
    trial = trial_with(tmp_path, {3: {"layers.0.relu_output_0": ("activations", relu_outputs(dead_units))}})
    rule = make("DeadRelu", trial)
    assert rule.invoke_at_step(3) is fires
    if fires:
        assert rule.finding.tensor == "layers.0.relu_output_0"
        assert rule.finding.value == pytest.approx(60.0)
        assert "60% of the 10 units of layers.0.relu_output_0 were dead" in rule.finding.message
        assert "step 3" in rule.finding.message and "threshold_layer 50%" in rule.finding.message


def test_dead_relu_threshold_inactivity_is_a_percent_of_the_unit_outputs(tmp_path):
    # every unit is > 0 in exactly 1 of 100 samples: active 1%, not less than the default 1%
    rare = relu_outputs(0, active_in=1)
    trial = trial_with(tmp_path, {0: {"layers.0.relu_output_0": ("activations", rare)}})
    assert make("DeadRelu", trial).invoke_at_step(0) is False
    assert make("DeadRelu", trial, threshold_inactivity="1.5").invoke_at_step(0) is True


def test_dead_relu_reads_relu_outputs_only_and_reports_the_worst_layer(tmp_path):
    trial = trial_with(
        tmp_path,
        {
            0: {
                "layers.0.relu_input_0": ("activations", relu_outputs(10)),  # an input: not a ReLU's output
                "layers.0.relu_output_0": ("activations", relu_outputs(6)),
                "layers.1.relu_output_0": ("activations", relu_outputs(9)),
                "layers.2.tanh_output_0": ("activations", relu_outputs(10)),
            }
        },
    )
    rule = make("DeadRelu", trial)
    assert rule.invoke_at_step(0) is True
    assert rule.finding.tensor == "layers.1.relu_output_0" and rule.finding.value == pytest.approx(90.0)
    assert "1 other layer(s) too" in rule.finding.message


def test_default_regexes_also_find_activation_modules_by_type(tmp_path):
    # an anonymous nn.Sequential names its modules by index: "1" is a ReLU, "3" a Sigmoid, "4" an ELU
    trial = trial_with(
        tmp_path,
        {
            0: {
                "1_output_0": ("activations", relu_outputs(7)),
                "3_input_0": ("activations", tanh_inputs(10)),  # 12: inside a sigmoid's bounds
                "4_output_0": ("activations", relu_outputs(10)),
            }
        },
    )
    trial.activation_kinds.update({"1": "ReLU", "3": "Sigmoid", "4": "ELU"})
    dead = make("DeadRelu", trial)
    assert dead.invoke_at_step(0) is True and dead.finding.tensor == "1_output_0"  # not the ELU
    assert make("DeadRelu", trial, tensor_regex="^0_").invoke_at_step(0) is False  # a regex of one's own: names only
    assert make("SaturatedActivation", trial).invoke_at_step(0) is False
    trial.activation_kinds["3"] = "Tanh"
    saturated = make("SaturatedActivation", trial)
    assert saturated.invoke_at_step(0) is True and saturated.finding.tensor == "3_input_0"


def test_dead_relu_counts_convolution_channels_as_units(tmp_path):
    outputs = np.ones((4, 8, 5, 5), dtype=np.float32)
    outputs[:, :5] = 0.0  # 5 of 8 channels never active over the batch and positions
    trial = trial_with(tmp_path, {0: {"conv.relu_output_0": ("activations", outputs)}})
    rule = make("DeadRelu", trial)
    assert rule.invoke_at_step(0) is True and rule.finding.value == pytest.approx(62.5)


# --------------------------------------------------------------------------- SaturatedActivation


def tanh_inputs(saturated_units: int, magnitude: float = 12.0) -> np.ndarray:
    values = np.zeros((50, 10), dtype=np.float32)
    values[:, :saturated_units] = magnitude
    values[::2, :saturated_units] *= -1  # saturated at both ends
    return values


@pytest.mark.parametrize(("saturated_units", "fires"), [(6, True), (5, False)])
def test_saturated_activation_fires_above_threshold_layer(tmp_path, saturated_units, fires):
    trial = trial_with(tmp_path, {2: {"block.tanh_input_0": ("activations", tanh_inputs(saturated_units))}})
    rule = make("SaturatedActivation", trial)
    assert rule.invoke_at_step(2) is fires
    if fires:
        assert rule.finding.value == pytest.approx(60.0) and "were saturated" in rule.finding.message


def test_saturated_activation_uses_the_bounds_of_the_function(tmp_path):
    # 12 is flat for tanh (beyond 9.4999) but not for a sigmoid (its bounds are -23 and 16.99999)
    trial = trial_with(
        tmp_path,
        {0: {"head.sigmoid_input_0": ("activations", tanh_inputs(10)), "head.sigmoid_output_0": ("activations", tanh_inputs(10))}},
    )
    assert make("SaturatedActivation", trial).invoke_at_step(0) is False
    assert make("SaturatedActivation", trial, threshold_sigmoid="(-5, 5)").invoke_at_step(0) is True
    inside = trial_with(tmp_path, {0: {"block.tanh_input_0": ("activations", tanh_inputs(10, magnitude=9.49))}})
    assert make("SaturatedActivation", inside).invoke_at_step(0) is False
    assert make("SaturatedActivation", inside, threshold_tanh="-9,9").invoke_at_step(0) is True


# --------------------------------------------------------------------------- AllZero


@pytest.mark.parametrize(("zeros", "threshold", "fires"), [(100, "100", True), (99, "100", False), (90, "90", True), (89, "90", False)])
def test_all_zero_fires_at_threshold_percent(tmp_path, zeros, threshold, fires):
    values = np.ones(100, dtype=np.float32)
    values[:zeros] = 0.0
    trial = trial_with(tmp_path, {0: {"fc.weight": ("weights", values)}, 5: {"fc.weight": ("weights", values)}})
    rule = make("AllZero", trial, collection_names="weights", threshold=threshold)
    assert rule.invoke_at_step(0) is False  # a parameter's initial value is the user's choice
    assert rule.invoke_at_step(5) is fires  # still zero after training has updated it
    if fires:
        assert rule.finding.value == pytest.approx(zeros) and "fc.weight" in rule.finding.message
        assert "5 training steps after step 0" in rule.finding.message


def test_all_zero_judges_gradients_and_activations_at_once(tmp_path):
    trial = trial_with(tmp_path, {0: {"gradient/fc.weight": ("gradients", np.zeros(4)), "fc.bias": ("biases", np.zeros(4))}})
    rule = make("AllZero", trial)
    assert rule.invoke_at_step(0) is True and rule.finding.tensor == "gradient/fc.weight"


def test_all_zero_without_selection_leaves_the_hooks_scalars_out(tmp_path):
    trial = trial_with(tmp_path, {0: {"fc.weight": ("weights", np.ones(4))}})
    trial.add_scalar("learning_rate", "learning_rate", 0, 0.0)  # a warmup starting at 0
    assert make("AllZero", trial).invoke_at_step(0) is False
    assert make("AllZero", trial, tensor_regex="learning").invoke_at_step(0) is True


# --------------------------------------------------------------------------- UnchangedTensor


def weights_over(tmp_path: Path, values: dict[int, np.ndarray]) -> LiveTrial:
    return trial_with(tmp_path, {step: {"fc.weight": ("weights", value)} for step, value in values.items()})


def test_unchanged_tensor_fires_over_num_steps_saved_steps(tmp_path):
    same = np.linspace(-1, 1, 12, dtype=np.float32)
    trial = weights_over(tmp_path, {0: same, 5: same, 10: same})
    rule = make("UnchangedTensor", trial, collection_names="weights")
    assert rule.invoke_at_step(0) is False and rule.invoke_at_step(5) is False  # 1 and 2 saved steps: too few
    assert rule.invoke_at_step(10) is True
    assert rule.finding.tensor == "fc.weight" and "last 3 saved steps (0, 5, 10)" in rule.finding.message


def test_unchanged_tensor_tolerance_is_numpy_allclose(tmp_path):
    base = np.ones(8)
    within = base + 1e-5 + 1e-8 - 1e-12  # |a - b| <= atol + rtol * |b|
    beyond = base + 1e-5 + 1e-8 + 1e-9
    rule = make("UnchangedTensor", weights_over(tmp_path, {0: base, 1: base, 2: within}), tensor_regex="fc")
    assert [rule.invoke_at_step(step) for step in (0, 1, 2)] == [False, False, True]
    rule = make("UnchangedTensor", weights_over(tmp_path, {0: base, 1: base, 2: beyond}), tensor_regex="fc")
    assert [rule.invoke_at_step(step) for step in (0, 1, 2)] == [False, False, False]


def test_unchanged_tensor_num_steps_and_equal_nan(tmp_path):
    with_nan = np.array([1.0, math.nan])
    trial = weights_over(tmp_path, {0: with_nan, 1: with_nan})
    assert [make("UnchangedTensor", trial, tensor_regex="fc", num_steps="2").invoke_at_step(s) for s in (0, 1)] == [False, False]
    rule = make("UnchangedTensor", trial, tensor_regex="fc", num_steps="2", equal_nan="True")
    assert [rule.invoke_at_step(s) for s in (0, 1)] == [False, True]


# --------------------------------------------------------------------------- TensorVariance


@pytest.mark.parametrize(
    ("parameters", "variance", "kind"),
    [
        ({"max_threshold": "4.0"}, 4.0001, "above_max"),
        ({"max_threshold": "4.0"}, 4.0, None),
        ({"min_threshold": "0.01"}, 0.0099, "below_min"),
        ({"min_threshold": "0.01"}, 0.01, None),
        ({"max_threshold": "4.0", "min_threshold": "0.01"}, 1.0, None),
        ({}, 1e9, None),  # no bound: nothing to compare with
    ],
)
def test_tensor_variance_bounds_and_kinds(tmp_path, parameters, variance, kind):
    values = np.array([-1.0, 1.0]) * math.sqrt(variance)  # variance of [-a, a] is a**2
    trial = trial_with(tmp_path, {7: {"gradient/fc.weight": ("gradients", values)}})
    rule = make("TensorVariance", trial, collection_names="gradients", **parameters)
    assert rule.invoke_at_step(7) is (kind is not None)
    if kind:
        assert rule.finding.kind == kind and rule.finding.value == pytest.approx(variance)
        assert "gradient/fc.weight" in rule.finding.message and "step 7" in rule.finding.message


# --------------------------------------------------------------------------- CheckInputImages


def images(mean: float, batch: int = 100, seed: int = 0) -> np.ndarray:
    """A batch of 3-channel 4x4 images whose channel 2 has exactly ``mean``, the others 0."""
    values = np.random.default_rng(seed).normal(size=(batch, 3, 4, 4))
    values -= values.mean(axis=(0, 2, 3), keepdims=True)
    values[:, 2] += mean
    return values.astype(np.float32)


@pytest.mark.parametrize(("mean", "fires"), [(0.2001, True), (0.2, False), (-0.3, True)])
def test_check_input_images_fires_on_the_mean_after_threshold_samples(tmp_path, mean, fires):
    trial = LiveTrial(tmp_path)
    rule = make("CheckInputImages", trial)
    results = []
    for step in range(5):  # 100 samples per step: 500 by step 4
        trial.begin_step(step)
        trial.set_model_inputs(step, {"Net_input_0": torch.from_numpy(images(mean, seed=step)), "Net_input_1": np.ones(3)})
        results.append(rule.invoke_at_step(step))
    assert results == [False] * 4 + [fires]
    if fires:
        assert rule.finding.tensor == "Net_input_0" and rule.finding.value == pytest.approx(mean, abs=1e-6)
        assert "channel 2" in rule.finding.message and "500 samples" in rule.finding.message


def test_check_input_images_catches_a_nan_input_at_once_as_a_data_error(tmp_path):
    trial = LiveTrial(tmp_path)
    rule = make("CheckInputImages", trial)
    bad = images(0.0, batch=4)
    bad[1, 0, 2, 2] = math.nan
    bad[3, 1, 0, 0] = math.inf
    trial.set_model_inputs(0, {"Net_input_0": images(0.0, batch=4)})
    assert rule.invoke_at_step(0) is False
    trial.set_model_inputs(1, {"Net_input_0": bad})
    assert rule.invoke_at_step(1) is True
    assert rule.finding.kind == NAN_INPUT and rule.finding.value == 2 and "model input Net_input_0" in rule.finding.message


def test_check_input_images_channel_last_and_a_saved_tensor_named_by_regex(tmp_path):
    channels_last = np.moveaxis(images(0.5), 1, -1)  # (100, 4, 4, 3): axis 1 is a row, each row's mean about 0.17
    trial = trial_with(tmp_path, {0: {"encoder_input_0": ("default", channels_last)}})
    settings = {"regex": "encoder_input_0", "threshold_samples": "100", "threshold_mean": "0.3"}
    assert make("CheckInputImages", trial, channel="1", **settings).invoke_at_step(0) is False
    rule = make("CheckInputImages", trial, channel="-1", **settings)
    assert rule.invoke_at_step(0) is True and rule.finding.value == pytest.approx(0.5, abs=1e-6)


# --------------------------------------------------------------------------- parameters


@pytest.mark.parametrize(
    ("rule", "parameter", "value", "hint"),
    [
        ("DeadRelu", "threshold_layer", "150", "between 0 and 100"),
        ("DeadRelu", "threshold_inactivity", "-1", ">= 0"),
        ("SaturatedActivation", "threshold_tanh", "9.5", '"(min, max)"'),
        ("SaturatedActivation", "threshold_sigmoid", "(5, -5)", "below the maximum"),
        ("UnchangedTensor", "num_steps", "1", ">= 2"),
        ("UnchangedTensor", "equal_nan", "maybe", '"True" or "False"'),
        ("TensorVariance", "max_threshold", "big", "number"),
        ("CheckInputImages", "channel", "first", "whole number"),
        ("CheckInputImages", "regex", "input_(", "regular expression"),
        ("CheckInputImages", "threshold_samples", "0", ">= 1"),
    ],
)
def test_bad_parameters_name_the_field(tmp_path, rule, parameter, value, hint):
    assert_refused(tmp_path, rule, parameter, value, hint)


def test_unchanged_tensor_spares_a_run_that_meets_its_objective(tmp_path):
    # a converged model's weights stop changing (in float32 an update below a weight's precision leaves it as it was)
    same = np.linspace(-1, 1, 12, dtype=np.float32)
    objective = '{"metric_name": "validation:accuracy", "type": "Maximize", "target_value": 0.9}'
    trial = weights_over(tmp_path, {0: same, 5: same, 10: same})
    trial.latest_metrics["validation:accuracy"] = 0.98
    rule = make("UnchangedTensor", trial, collection_names="weights", objective=objective)
    assert [rule.invoke_at_step(step) for step in (0, 5, 10)] == [False, False, False]
    assert "but the run meets its objective (validation:accuracy >= 0.9: 0.98)" in rule.latest_note
    trial.latest_metrics["validation:accuracy"] = 0.5  # a run that has not got there is stuck
    rule = make("UnchangedTensor", trial, collection_names="weights", objective=objective)
    assert [rule.invoke_at_step(step) for step in (0, 5, 10)] == [False, False, True]


@pytest.mark.parametrize(
    ("save_interval", "said"),
    [("4", "last 3 saved steps (1, 2, 3)"), ("1", "last 3 saved steps (global steps 4, 5, 6: step 1)")],
)
def test_unchanged_tensor_names_its_saved_steps_as_the_user_counts_them(tmp_path, save_interval, said):
    """Real training with 4 micro-batches an optimizer step and a rate of 0 (decision 205): saved every 4 global steps,
    the steps are named by optimizer step (they were "4, 8, 12"); saved at every micro-batch of one update, by their
    global steps and the one optimizer step they share (not "1, 1, 1"). (The rule starts at global step 4: before the
    job's first update the hook cannot yet tell micro-batches from steps, decision 205.)"""
    torch.manual_seed(4)
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    rules = [{"RuleConfigurationName": "UnchangedTensor", "RuleParameters": {"rule_to_invoke": "UnchangedTensor",
                                                                              "collection_names": "weights",
                                                                              "start_step": "4"}}]  # fmt: skip
    hook = Hook.from_configs(
        {"HookParameters": {"save_interval": save_interval}, "CollectionConfigurations": [{"CollectionName": "weights"}]},
        rules, out_dir=tmp_path / "out", job_name="job",
    )  # fmt: skip
    hook.register_module(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    generator = torch.Generator().manual_seed(5)
    for _ in range(4):
        optimizer.zero_grad()
        for _ in range(4):
            inputs, labels = torch.randn(16, 6, generator=generator), torch.randint(0, 3, (16,), generator=generator)
            (torch.nn.functional.cross_entropy(model(inputs), labels) / 4).backward()
        optimizer.step()
    hook.close()
    document = RuleStatusDocument.from_json((tmp_path / "out" / RULE_STATUS_FILE).read_text())
    assert said in document.rules[0].issue.message
