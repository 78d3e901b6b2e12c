"""Each built-in rule fires, and stays quiet, on crafted tensors at and around its thresholds."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from rule_trials import assert_refused, make, trial_with

from contracts.debugger_config import BUILTIN_RULE_DEFAULTS
from debugger.core.modes import ModeKeys
from debugger.rules import (
    TOTAL_GRADIENT_NORM,
    ExplodingTensor,
    LossNotDecreasing,
    PoorWeightInitialization,
    VanishingGradient,
    WeightUpdateRatio,
    builtin_rule_parameters,
)
from debugger.rules.loss_rule import STAGNANT_STEPS
from debugger.trial import LiveTrial


@pytest.mark.parametrize(
    ("value", "only_nan", "fires"),
    [
        (1e30, False, False),
        (np.finfo(np.float32).max, False, False),
        (math.inf, False, True),
        (-math.inf, False, True),
        (math.nan, False, True),
        (math.inf, True, False),
        (math.nan, True, True),
    ],
)
def test_exploding_tensor(tmp_path, value, only_nan, fires):
    gradient = np.ones((3, 3), dtype=np.float32)
    gradient[1, 2] = value
    trial = trial_with(
        tmp_path, {4: {"gradient/conv.weight": ("gradients", gradient), "conv.weight": ("weights", np.ones(3))}}
    )
    rule = make("ExplodingTensor", trial, only_nan=str(only_nan))
    assert rule.invoke_at_step(4) is fires
    if fires:
        assert rule.finding.tensor == "gradient/conv.weight"


def test_exploding_tensor_respects_collection_and_regex_selection(tmp_path):
    trial = trial_with(
        tmp_path,
        {
            0: {
                "gradient/a": ("gradients", np.array([1.0])),
                "w": ("weights", np.array([math.nan])),
                "b": ("biases", np.array([1.0])),
            }
        },
    )
    assert make("ExplodingTensor", trial, collection_names="gradients").invoke_at_step(0) is False
    assert make("ExplodingTensor", trial, collection_names="weights").invoke_at_step(0) is True
    assert make("ExplodingTensor", trial, tensor_regex="^w$").invoke_at_step(0) is True
    assert (
        make("ExplodingTensor", trial, collection_names="biases", tensor_regex="^gradient/").invoke_at_step(0) is False
    )
    # nothing is read at a step the tensors were not saved at
    assert make("ExplodingTensor", trial).invoke_at_step(1) is False


def test_exploding_tensor_on_every_step_scalar(tmp_path):
    trial = LiveTrial(tmp_path)
    trial.add_scalar(TOTAL_GRADIENT_NORM, "gradients", 3, 12.0)
    trial.add_scalar(TOTAL_GRADIENT_NORM, "gradients", 4, math.inf)
    rule = ExplodingTensor(trial)
    assert rule.invoke_at_step(3) is False
    assert rule.invoke_at_step(4) is True
    assert rule.finding.tensor == TOTAL_GRADIENT_NORM


THRESHOLD = 1e-7


@pytest.mark.parametrize(
    ("mean_abs", "fires"),
    [
        (THRESHOLD * 0.5, True),
        (THRESHOLD * 0.999, True),
        (THRESHOLD, False),
        (THRESHOLD * 1.001, False),
        (1.0, False),
        (0.0, True),
    ],
)
def test_vanishing_gradient_default_threshold(tmp_path, mean_abs, fires):
    gradient = np.array([mean_abs, -mean_abs, mean_abs, -mean_abs], dtype=np.float64)
    trial = trial_with(tmp_path, {2: {"gradient/x": ("gradients", gradient), "x": ("weights", np.zeros(4))}})
    rule = make("VanishingGradient", trial)
    assert rule.threshold == float(BUILTIN_RULE_DEFAULTS["VanishingGradient"]["threshold"])
    assert rule.invoke_at_step(2) is fires


def test_vanishing_gradient_custom_threshold_and_weights_ignored(tmp_path):
    trial = trial_with(tmp_path, {0: {"gradient/x": ("gradients", np.full(4, 0.01)), "x": ("weights", np.zeros(4))}})
    assert make("VanishingGradient", trial, threshold="0.02").invoke_at_step(0) is True
    assert make("VanishingGradient", trial, threshold="0.005").invoke_at_step(0) is False


def loss_trial(tmp_path: Path, losses: dict[int, float]) -> LiveTrial:
    trial = LiveTrial(tmp_path)
    for step, loss in losses.items():
        trial.add_scalar("CrossEntropyLoss_output_0", "losses", step, loss)
    return trial


def window_trial(tmp_path: Path, first: list[float], second: list[float]) -> LiveTrial:
    """Losses at steps 0..n-1 (``first``) then n..2n-1 (``second``)."""
    return loss_trial(tmp_path, dict(enumerate([*first, *second])))


@pytest.mark.parametrize(
    ("second", "fires", "kind", "why"),
    [
        ([0.99] * 10, False, None, "the window mean fell 1% > diff_percent 0"),
        ([1.0] * 10, True, "flat", "flat: the window means are equal"),
        ([1.04] * 10, False, None, "rose 4% <= increase_threshold_percent 5%"),
        ([1.08] * 10, True, "rising", "rose 8% > 5% plus the allowance the step itself adds to the measured noise"),
        ([1.08, 0.94] * 5, False, None, "single losses 8% up, 6% down: their mean rose 1%"),
    ],
)
def test_loss_not_decreasing_compares_window_means(tmp_path, second, fires, kind, why):
    trial = window_trial(tmp_path, [1.0] * 10, second)  # no noise in the first window: the allowance is the spread
    rule = make("LossNotDecreasing", trial)
    results = [rule.invoke_at_step(step) for step in range(20)]
    assert results[:19] == [False] * 19 and results[19] is fires, why
    if fires:
        assert rule.finding.kind == kind


def test_loss_not_decreasing_allows_the_runs_own_noise(tmp_path):
    rng = np.random.default_rng(0)
    noisy = list(1.0 + 0.3 * rng.standard_normal(40))  # single losses 30% apart, a level that does not move
    rule = make("LossNotDecreasing", loss_trial(tmp_path / "noise", dict(enumerate(noisy))))
    assert not any(rule.invoke_at_step(step) for step in range(40))
    risen = noisy[:20] + [loss + 0.5 for loss in noisy[20:]]  # the level rises by half: beyond the noise
    rule = make("LossNotDecreasing", loss_trial(tmp_path / "rise", dict(enumerate(risen))))
    assert any(rule.invoke_at_step(step) for step in range(40)) and rule.finding.kind == "rising"
    assert "noise" in rule.finding.message


def test_a_loss_that_never_leaves_its_first_windows_noise_is_reported_stagnant(tmp_path):
    # one window's mean below the one before half the time: the window-to-window test alone never fires on it
    rng = np.random.default_rng(0)
    level = list(1.0 + 0.3 * rng.standard_normal(200))
    rule = make("LossNotDecreasing", loss_trial(tmp_path / "level", dict(enumerate(level))))
    fired = [step for step in range(200) if rule.invoke_at_step(step)]
    assert fired and fired[0] >= STAGNANT_STEPS - 1 and rule.finding.kind == "stagnant"
    assert "has not fallen since its first judged window" in rule.finding.message
    # a loss that falls 0.1% a step (8% by step 80) under 5% noise is a slow descent, not a stagnant one
    falling = [1.0 + 0.05 * noise - 0.001 * step for step, noise in enumerate(rng.standard_normal(200))]
    rule = make("LossNotDecreasing", loss_trial(tmp_path / "falling", dict(enumerate(falling))))
    assert not any(rule.invoke_at_step(step) for step in range(200))


def test_loss_not_decreasing_rise_counts_from_the_lowest_window(tmp_path):
    # +4% a window is within the allowance window by window; from the lowest window it adds up past 5%
    losses = [1.0] * 10 + [1.04] * 10 + [1.08] * 10
    rule = make("LossNotDecreasing", loss_trial(tmp_path, dict(enumerate(losses))))
    assert [step for step in range(30) if rule.invoke_at_step(step)] == [29]
    assert "from its lowest mean 1" in rule.finding.message


def test_loss_not_decreasing_diff_percent(tmp_path):
    rule = make("LossNotDecreasing", window_trial(tmp_path, [1.0] * 10, [0.95] * 10), diff_percent="10")
    assert [step for step in range(20) if rule.invoke_at_step(step)] == [19]  # fell 5% < 10%
    assert rule.finding.kind == "flat"


def test_loss_not_decreasing_checks_every_num_steps_on_saved_steps(tmp_path):
    # saved every 3 steps, num_steps 10: the windows hold the saved losses of the last 10 and the 10 before
    losses = {step: 1.0 - 0.01 * step for step in range(0, 40, 3)}
    rule = LossNotDecreasing(loss_trial(tmp_path, losses), num_steps=10)
    checked = []
    for step in range(0, 40, 3):
        rule.invoke_at_step(step)
        if rule._series[("CrossEntropyLoss_output_0", ModeKeys.GLOBAL)].last_check == step:
            checked.append(step)
    assert checked == [21, 33]


def test_loss_not_decreasing_mode_picks_eval_steps_first(tmp_path):

    trial = LiveTrial(tmp_path)
    for step in range(48):
        mode = ModeKeys.EVAL if step % 2 else ModeKeys.TRAIN
        trial.begin_step(step, mode, step // 2)
        # training loss falls, evaluation loss does not
        trial.add_scalar("CrossEntropyLoss_output_0", "losses", step, 1.0 if mode is ModeKeys.EVAL else 1.0 - step / 100)
    default = LossNotDecreasing(trial)
    assert any(default.invoke_at_step(step) for step in range(48)) and default.finding.kind == "flat"
    train_only = LossNotDecreasing(trial, mode="TRAIN")
    assert not any(train_only.invoke_at_step(step) for step in range(48))


def test_loss_not_decreasing_without_selection_is_quiet(tmp_path):
    trial = loss_trial(tmp_path, {0: 1.0, 10: 1.0})
    rule = make("LossNotDecreasing", trial, use_losses_collection="False")
    assert not rule.invoke_at_step(0) and not rule.invoke_at_step(10)


@pytest.mark.parametrize(
    ("update_scale", "fires"),
    [(11.0, True), (9.0, False), (1e-3, False), (0.5e-8, True), (2e-8, False), (0.0, True)],
)
def test_weight_update_ratio(tmp_path, update_scale, fires):
    weights = np.zeros(100)
    weights[0] = 1.0  # ||w|| = 1
    update = np.zeros(100)
    update[1] = update_scale  # ||delta|| = update_scale
    trial = trial_with(tmp_path, {0: {"w": ("weights", weights)}, 500: {"w": ("weights", weights + update)}})
    rule = make("WeightUpdateRatio", trial)
    assert rule.invoke_at_step(0) is False
    assert rule.invoke_at_step(500) is fires


def test_weight_update_ratio_needs_a_previous_step_within_num_steps(tmp_path):
    weights = np.ones(4)
    trial = trial_with(tmp_path, {0: {"w": ("weights", weights)}, 20: {"w": ("weights", weights * 100)}})
    rule = WeightUpdateRatio(trial, num_steps=10)
    assert not rule.invoke_at_step(0) and not rule.invoke_at_step(20)
    rule = WeightUpdateRatio(trial)  # default: the previous saved step, however far back
    assert not rule.invoke_at_step(0) and rule.invoke_at_step(20)


def activation_step(variance_ratio: float, gradient_spread: float) -> dict[str, tuple[str, np.ndarray]]:
    rng = np.random.default_rng(0)
    base = rng.standard_normal(10_000)
    base = (base - base.mean()) / base.std()
    gradient = 0.05 + np.linspace(-gradient_spread / 0.9, gradient_spread / 0.9, 1001) / 2
    return {
        "block1.relu_input_0": ("activations", base),
        "block2.relu_input_0": ("activations", base * math.sqrt(variance_ratio)),
        "block2.relu_output_0": ("activations", base * 1000),  # outputs are not activation inputs (default .*relu_input)
        "gradient/block.conv.weight": ("gradients", gradient),
    }


@pytest.mark.parametrize(
    ("variance_ratio", "gradient_spread", "fires", "culprit"),
    [
        (9.5, 0.01, False, None),
        (10.5, 0.01, True, "block2.relu_input_0"),
        (1.0, 0.0011, False, None),
        # narrow and small: the gradient's entries agree (an offset of 0.05 with a spread of 0.0009)
        (1.0, 0.0009, True, "gradient/block.conv.weight"),
    ],
)
def test_poor_weight_initialization_variance_and_gradient_spread(
    tmp_path, variance_ratio, gradient_spread, fires, culprit
):
    trial = trial_with(tmp_path, {0: activation_step(variance_ratio, gradient_spread)})
    rule = make("PoorWeightInitialization", trial)
    assert rule.invoke_at_step(0) is fires
    if fires:
        assert rule.finding.tensor == culprit


def test_poor_weight_initialization_a_small_gradient_is_not_a_narrow_one(tmp_path):
    # a sigmoid network's first layer: 5th-95th percentile spread 7e-4 (< distribution_range 0.001), 4x its mean |g|
    small = np.linspace(-1.4e-4, 5.6e-4, 128) * np.where(np.arange(128) % 2, 1, -1)
    trial = trial_with(tmp_path, {0: {"gradient/0.bias": ("gradients", small)}})
    assert make("PoorWeightInitialization", trial).invoke_at_step(0) is False
    zero = trial_with(tmp_path / "zero", {0: {"gradient/0.bias": ("gradients", np.zeros(128))}})
    assert make("PoorWeightInitialization", zero).invoke_at_step(0) is True  # nothing to spread: narrow


def test_poor_weight_initialization_reads_a_gradient_by_its_typical_entry_over_the_rows_the_batch_used(tmp_path):
    # a position embedding's gradient: row 0 (the classifier's token) 1e-2, the other rows about 1e-5 (spread 4e-5,
    # 0.09 of the mean |g| that row 0 sets, 4x the median |g|): wide for its typical entry
    rng = np.random.default_rng(1)
    rows = rng.normal(0.0, 1.2e-5, (24, 32))
    rows[0] = rng.normal(0.0, 1.3e-2, 32)
    trial = trial_with(tmp_path, {0: {"gradient/pos.weight": ("gradients", rows)}})
    assert make("PoorWeightInitialization", trial).invoke_at_step(0) is False
    # an embedding whose used rows agree (0.05 each) among rows the batch did not use (zero by construction): narrow
    agreeing = np.zeros((64, 8))
    agreeing[:8] = 0.05
    trial = trial_with(tmp_path / "rows", {0: {"gradient/emb.weight": ("gradients", agreeing)}})
    rule = make("PoorWeightInitialization", trial)
    assert rule.invoke_at_step(0) is True
    assert rule.finding.message == ("5th-95th percentile spread of gradient/emb.weight is 0 < 0.001, 0 times its median "
                                    "|gradient| 0.05")


def test_poor_weight_initialization_loss_patience_and_window(tmp_path):
    # a loss frozen by the initialisation: no new minimum for 5 steps, and it does not move (within 0.5%); judged
    # once two windows of patience losses are in
    stalled = loss_trial(tmp_path, {step: 2.0 + (0.0 if step == 0 else 0.01) for step in range(12)})
    rule = PoorWeightInitialization(stalled, patience=5, steps=10)
    fired = [step for step in range(12) if rule.invoke_at_step(step)]
    assert fired[0] == 9 and "does not move" in rule.finding.message
    improving = loss_trial(tmp_path, {step: 2.0 - 0.1 * step for step in range(12)})
    rule = PoorWeightInitialization(improving)
    assert not any(rule.invoke_at_step(step) for step in range(12))
    late = loss_trial(tmp_path, {step: 2.0 for step in range(30)})
    rule = PoorWeightInitialization(late, patience=5, steps=3)
    assert not any(rule.invoke_at_step(step) for step in range(30))


def test_poor_weight_initialization_reads_a_still_loss_with_the_gradient_reaching_the_input_side_as_a_plateau(tmp_path):
    """A transformer at chance sits still for its first steps while its gradient reaches the embeddings (a plateau);
    a network whose initialisation blocks learning leaves its input side without gradient."""
    rng = np.random.default_rng(3)

    def frozen(directory: Path, input_scale: float) -> LiveTrial:
        steps = {
            step: {
                "gradient/embed.weight": ("gradients", rng.normal(0.0, input_scale, (16, 8))),
                "gradient/head.weight": ("gradients", rng.normal(0.0, 0.05, (4, 8))),
            }
            for step in range(12)
        }
        trial = trial_with(directory, steps)
        for step in range(12):
            trial.add_scalar("CrossEntropyLoss_output_0", "losses", step, 1.386 + (0.0 if step == 0 else 0.004))
        return trial

    plateau = PoorWeightInitialization(frozen(tmp_path / "plateau", 9e-4), patience=5, steps=10)
    assert not any(plateau.invoke_at_step(step) for step in range(10))
    assert plateau.latest_note == (
        "the loss has made no new minimum for 9 steps (within 0.29% of 1.3896) while the gradient reaching the input "
        "side (embed: 0.00069) carries the signal at step 9: a plateau, not an initialisation that blocks learning"
    )
    blocked = PoorWeightInitialization(frozen(tmp_path / "blocked", 1e-12), patience=5, steps=10)
    assert [step for step in range(10) if blocked.invoke_at_step(step)] == [9]
    assert "does not move" in blocked.finding.message


def test_builtin_defaults_match_the_contract():
    for name, defaults in BUILTIN_RULE_DEFAULTS.items():
        typed = builtin_rule_parameters(name, {}, f"rules[{name}]")
        assert set(typed) == set(defaults)
    assert builtin_rule_parameters("LossNotDecreasing", {}, "x")["num_steps"] == 10
    assert builtin_rule_parameters("WeightUpdateRatio", {}, "x")["num_steps"] is None
    assert builtin_rule_parameters("LossNotDecreasing", {}, "x")["diff_percent"] == 0.0
    assert builtin_rule_parameters("LossNotDecreasing", {}, "x")["collection_names"] == []
    assert builtin_rule_parameters("PoorWeightInitialization", {}, "x")["activation_inputs_regex"][0].pattern == ".*relu_input"
    assert builtin_rule_parameters("PoorWeightInitialization", {}, "x")["patience"] == 5


@pytest.mark.parametrize(
    ("rule", "parameter", "value", "allowed_hint"),
    [
        ("VanishingGradient", "threshold", "small", "number"),
        ("VanishingGradient", "threshold", "-1", ">= 0"),
        ("LossNotDecreasing", "num_steps", "0", ">= 1"),
        ("LossNotDecreasing", "num_steps", "2.5", "whole number"),
        ("LossNotDecreasing", "mode", "TRAINING", "TRAIN, EVAL, GLOBAL"),
        ("ExplodingTensor", "only_nan", "yes", '"True" or "False"'),
        ("ExplodingTensor", "collection_names", "gradients,my tensors", "not a collection name"),
        ("ExplodingTensor", "tensor_regex", "gradient/(", "regular expression"),
        ("WeightUpdateRatio", "num_steps", "soon", "whole number"),
        ("LossNotDecreasing", "num_steps", "None", "whole number"),
    ],
)
def test_bad_builtin_parameter_names_the_field(tmp_path, rule, parameter, value, allowed_hint):
    assert_refused(tmp_path, rule, parameter, value, allowed_hint)


def test_vanishing_gradient_every_step_scalar_implies_every_tensor(tmp_path):
    trial = LiveTrial(tmp_path)
    trial.add_scalar(TOTAL_GRADIENT_NORM, "gradients", 7, 5e-8)
    trial.add_scalar(TOTAL_GRADIENT_NORM, "gradients", 8, 5e-7)
    rule = VanishingGradient(trial)
    assert rule.invoke_at_step(7) is True
    assert VanishingGradient(trial).invoke_at_step(8) is False
