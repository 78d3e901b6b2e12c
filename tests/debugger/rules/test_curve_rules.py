"""Overfit and Overtraining fire on constructed loss curves (PyTorch's TRAIN/EVAL phases, XGBoost's per-round
training and validation metrics) and stay quiet on healthy ones."""

from __future__ import annotations

import math

import numpy as np
import pytest
from rule_trials import make

from contracts import ContractError
from contracts.debugger_config import BUILTIN_RULE_DEFAULTS
from debugger.core.modes import ModeKeys
from debugger.rules import builtin_rule_parameters
from debugger.rules.curve_rules import metric_pairs
from debugger.trial.live_trial import LiveTrial


def run_boosting(rule, trial: LiveTrial, curves: dict[str, list[float]]) -> int | None:
    """Feed per-round metrics as the XGBoost hook does (every-step scalars); the round at which the rule fires."""
    rounds = len(next(iter(curves.values())))
    for step in range(rounds):
        trial.begin_step(step)
        for name, values in curves.items():
            trial.add_signal(name, ("metrics", "losses"), step, values[step])
        if rule.invoke_at_step(step):
            return step
    return None


def run_epochs(rule, trial: LiveTrial, train_means: list[float], validation_means: list[float], batches: int = 4):
    """Feed PyTorch-style steps: per epoch, ``batches`` TRAIN steps then ``batches`` EVAL steps, around the means
    (+-10% noise per batch, the mean kept); the global step at which the rule fires."""
    step, mode_steps = 0, {ModeKeys.TRAIN: 0, ModeKeys.EVAL: 0}
    noise = np.linspace(-0.1, 0.1, batches)
    for train, validation in zip(train_means, validation_means, strict=True):
        for mode, mean in ((ModeKeys.TRAIN, train), (ModeKeys.EVAL, validation)):
            for offset in noise:
                trial.begin_step(step, mode, mode_steps[mode])
                trial.add_signal("CrossEntropyLoss_output_0", ("losses",), step, mean * (1 + offset))
                mode_steps[mode] += 1
                if rule.invoke_at_step(step):
                    return step
                step += 1
    # the last validation phase ends when the next training step begins
    trial.begin_step(step, ModeKeys.TRAIN, mode_steps[ModeKeys.TRAIN])
    trial.add_signal("CrossEntropyLoss_output_0", ("losses",), step, train_means[-1])
    return step if rule.invoke_at_step(step) else None


HEALTHY_TRAIN = [0.6, 0.3, 0.15, 0.1, 0.08, 0.07]
HEALTHY_VALIDATION = [0.62, 0.31, 0.16, 0.105, 0.085, 0.075]


def test_defaults_are_the_documented_ones():
    assert BUILTIN_RULE_DEFAULTS["Overfit"] == {
        "tensor_regex": "", "start_step": "0", "patience": "1", "ratio_threshold": "0.1",
    }  # fmt: skip
    assert BUILTIN_RULE_DEFAULTS["Overtraining"] == {"patience_train": "5", "patience_validation": "10", "delta": "0.01"}
    typed = builtin_rule_parameters("Overtraining", {}, "rule")
    assert typed == {"patience_train": 5, "patience_validation": 10, "delta": 0.01}


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ({"ratio_threshold": "-1"}, "rule.ratio_threshold: must be >= 0.0"),
        ({"patience": "0"}, "rule.patience: must be >= 1"),
        ({"start_step": "x"}, "rule.start_step: must be a whole number"),
        ({"ratio": "1"}, "rule.ratio: is not a parameter of Overfit"),
    ],
)
def test_bad_overfit_parameters_name_the_field(parameters, message):
    with pytest.raises(ContractError) as error:
        builtin_rule_parameters("Overfit", parameters, "rule")
    assert message in str(error.value)


def test_metric_pairs_match_the_training_set_with_each_other_set_and_skip_increasing_metrics():
    names = ["train-logloss", "validation-logloss", "eval-logloss", "train-auc", "validation-auc", "validation-error"]
    assert metric_pairs(names) == [("train-logloss", "eval-logloss"), ("train-logloss", "validation-logloss")]


# --------------------------------------------------------------------------- XGBoost curves


def test_overfit_fires_on_boosting_rounds_where_validation_drifts_from_training(tmp_path):
    trial = LiveTrial(tmp_path)
    rule = make("Overfit", trial, ratio_threshold="1.0", patience="3")
    train = [0.5, 0.3, 0.2, 0.1, 0.05, 0.03, 0.02]
    validation = [0.52, 0.35, 0.3, 0.25, 0.26, 0.28, 0.3]
    # ratios: 0.04 0.17 0.5 1.5 4.2 8.3 14: above 1.0 from round 3, with the validation loss above its best (0.25)
    # from round 4: three in a row at round 6
    assert run_boosting(rule, trial, {"train-logloss": train, "validation-logloss": validation}) == 6
    assert rule.finding.tensor == "validation-logloss"
    assert rule.finding.value == pytest.approx((0.3 - 0.02) / 0.02)
    assert rule.finding.kind == "validation_above_training"
    assert "ratio_threshold 1" in rule.finding.message and "3 comparison(s) in a row" in rule.finding.message


def test_overfit_stays_quiet_while_validation_tracks_training(tmp_path):
    trial = LiveTrial(tmp_path)
    rule = make("Overfit", trial)
    curves = {"train-logloss": HEALTHY_TRAIN, "validation-logloss": HEALTHY_VALIDATION, "validation-auc": [0.9] * 6}
    assert run_boosting(rule, trial, curves) is None


def test_overtraining_fires_when_the_validation_metric_stops_improving(tmp_path):
    trial = LiveTrial(tmp_path)
    rule = make("Overtraining", trial, patience_validation="4")
    train = [0.5 * 0.7**step for step in range(12)]  # keeps improving
    validation = [0.5, 0.4, 0.35, 0.34, 0.36, 0.4, 0.45, 0.5, 0.55, 0.6, 0.6, 0.6]
    # best 0.35 at round 2 (0.34 is not 1% better... it is: 0.34 < 0.3465) -> best at round 3; 4 rounds later: 7
    assert run_boosting(rule, trial, {"train-logloss": train, "validation-logloss": validation}) == 7
    assert rule.finding.tensor == "validation-logloss" and rule.finding.value == 4
    assert rule.finding.kind == "validation_not_improving"
    assert "best 0.34" in rule.finding.message


def test_overtraining_fires_when_the_training_metric_stops_improving(tmp_path):
    trial = LiveTrial(tmp_path)
    rule = make("Overtraining", trial)
    train = [0.5, 0.4, 0.3] + [0.299] * 6
    validation = [0.5 - 0.05 * step for step in range(9)]
    assert run_boosting(rule, trial, {"train-rmse": train, "eval-rmse": validation}) == 7
    assert rule.finding.tensor == "train-rmse" and rule.finding.kind == "training_not_improving"


def test_overtraining_stays_quiet_on_improving_curves(tmp_path):
    trial = LiveTrial(tmp_path)
    rule = make("Overtraining", trial)
    steps = 30
    curves = {"train-logloss": [0.7 * 0.9**s for s in range(steps)], "validation-logloss": [0.7 * 0.95**s for s in range(steps)]}
    assert run_boosting(rule, trial, curves) is None


# --------------------------------------------------------------------------- PyTorch TRAIN / EVAL phases


def test_overfit_compares_each_validation_phase_with_the_training_phase_before_it(tmp_path):
    trial = LiveTrial(tmp_path, expose_signals=False)  # the smdebug profile: losses are signals, not tensors
    rule = make("Overfit", trial)
    train = [0.6, 0.3, 0.15, 0.08]
    # ratios 0.033, 0.033, 0.33 (> 0.1) with the validation loss still falling: not yet; 2.75 at epoch 3, whose
    # validation loss (0.3) is above its best (0.2)
    validation = [0.62, 0.31, 0.2, 0.3]
    fired = run_epochs(rule, trial, train, validation)
    assert fired == 4 * 8  # epoch 3's validation phase ends when the next training step begins
    assert trial.mode(fired) is ModeKeys.TRAIN
    assert rule.finding.value == pytest.approx((0.3 - 0.08) / 0.08)
    assert "mean CrossEntropyLoss_output_0 of the last TRAIN and EVAL phases" in rule.finding.message


def test_overfit_and_overtraining_stay_quiet_on_a_healthy_pytorch_run(tmp_path):
    for name in ("Overfit", "Overtraining"):
        trial = LiveTrial(tmp_path / name, expose_signals=False)
        assert run_epochs(make(name, trial), trial, HEALTHY_TRAIN, HEALTHY_VALIDATION) is None


def test_overtraining_counts_validation_phases(tmp_path):
    trial = LiveTrial(tmp_path, expose_signals=False)
    rule = make("Overtraining", trial, patience_validation="3")
    train = [0.6 * 0.8**epoch for epoch in range(7)]
    validation = [0.6, 0.4, 0.3, 0.31, 0.33, 0.35, 0.4]
    assert run_epochs(rule, trial, train, validation) is not None
    assert rule.finding.kind == "validation_not_improving" and rule.finding.value == 3


def test_curve_rules_ignore_non_finite_values(tmp_path):
    trial = LiveTrial(tmp_path)
    rule = make("Overfit", trial)
    curves = {"train-logloss": [0.5, math.nan, 0.4], "validation-logloss": [0.5, 0.5, math.inf]}
    assert run_boosting(rule, trial, curves) is None


def test_overtraining_does_not_call_a_training_loss_at_zero_stalled(tmp_path):
    trial = LiveTrial(tmp_path)
    rule = make("Overtraining", trial)
    curves = {"train-error": [0.1, 0.02, 0.0] + [0.0] * 10, "validation-logloss": [0.5 * 0.9**s for s in range(13)]}
    assert run_boosting(rule, trial, curves) is None
