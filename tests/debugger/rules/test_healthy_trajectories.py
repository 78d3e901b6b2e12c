"""The built-in rules' verdicts on real healthy training (tests/debugger/rules/trajectories/, made by make_trajectories.py
from jobs of the healthy corpus's scripts): a rule judges the tensors that can show its problem and the loss on
windows with the run's own noise, and a run that meets its objective is not stopped for its curves; the same rules
still fire where the problem is real."""

from __future__ import annotations

import json

import numpy as np
import pytest
from rule_trials import TRAJECTORIES, make, recorded_steps, replay

from contracts.rule_selection import product_rule_parameters
from contracts.rule_status import HELD_OUT_RISING, NO_ISSUES_FOUND, RuleStatusDocument
from debugger.core.modes import ModeKeys
from debugger.trial import create_trial
from debugger.trial.live_trial import LiveTrial


def objective(target: float) -> str:
    """The ``objective`` RuleParameter the workflow gives the progress rules (the run_spec's objective, as JSON)."""
    return json.dumps({"metric_name": "validation:accuracy", "type": "Maximize", "target_value": target})


# --------------------------------------------------------------------------- structural zeros


def test_a_bias_before_batch_norm_is_not_reported_as_a_vanishing_gradient():
    trial = create_trial(TRAJECTORIES / "bias_before_batchnorm")
    bias = "gradient/Sequential_0.bias"  # nn.Linear(20, 8) keeps PyTorch's default bias, then nn.BatchNorm1d(8)
    steps = trial.steps(mode="TRAIN")
    # the saved gradient is a rounding error, by construction: far below VanishingGradient's documented 1e-7
    assert all(np.abs(trial.tensor(bias).value(step)).mean() < 1e-8 for step in steps)
    rule = make("VanishingGradient", trial)
    assert not any(rule.invoke_at_step(step) for step in trial.steps())
    assert "BatchNorm1d" in rule.skipped_tensors()[bias]
    # the other gradients are judged: a threshold above them fires on one of them, never on the skipped bias
    strict = make("VanishingGradient", trial, threshold="1.0")
    assert strict.invoke_at_step(steps[0]) and strict.finding.tensor != bias
    # in the job, the rule said which tensor it skipped and why
    (status,) = RuleStatusDocument.from_json((TRAJECTORIES / "bias_before_batchnorm" / "rule-status.json").read_text()).rules
    assert status.RuleEvaluationStatus == NO_ISSUES_FOUND
    assert f"skipped 1 tensor(s) that cannot show this issue: {bias} (the bias of 0 (Linear) feeds 1 (BatchNorm1d)" in (
        status.StatusDetails
    )


@pytest.mark.parametrize("rule_name", ["UnchangedTensor", "AllZero", "PoorWeightInitialization"])
def test_the_other_rules_that_judge_gradients_skip_the_bias_too(rule_name):
    trial = create_trial(TRAJECTORIES / "bias_before_batchnorm")
    rule = make(rule_name, trial)
    assert not any(rule.invoke_at_step(step) for step in trial.steps())
    assert "gradient/Sequential_0.bias" in rule.skipped_tensors()


@pytest.mark.parametrize("recording", ["cnn_images_converged", "cnn_images_converged_seed6"])
@pytest.mark.parametrize("rule_name", ["VanishingGradient", "UnchangedTensor"])
def test_a_converged_models_small_gradients_are_not_reported_as_vanishing(tmp_path, rule_name, recording):
    # a CNN with batch norm on the built-in ResNet's pictures: accuracy 1.0 from epoch 1, its training loss down from
    # 2.4 to 1e-5, and with it every gradient: its first convolution's weights at 3e-8 by step 100, under the
    # documented threshold 1e-7; with seed 6 some batches are fit exactly (loss 0.0, total gradient norm 9e-11)
    steps = recorded_steps(recording)
    judged = [
        (step, tensor, magnitude)
        for step, _, _, _, _, *saved in steps if saved
        for tensor, magnitude in saved[0].items() if tensor not in saved[1]
    ]
    assert min(magnitude for _, _, magnitude in judged) < 1e-7
    assert steps[-1][4]["validation:accuracy"] == 1.0
    # (UnchangedTensor: every saved tensor; within its absolute atol 1e-8 such gradients "do not change")
    rule, fired = replay(tmp_path, recording, rule_name)
    assert fired is None, rule.finding


def test_a_gradient_that_dies_while_the_loss_has_not_fallen_is_still_reported(tmp_path):
    # the loss scale is only the loss's fall: at the first steps the documented threshold stands
    trial = LiveTrial(tmp_path)
    rule = make("VanishingGradient", trial)
    for step in range(3):
        trial.begin_step(step, ModeKeys.TRAIN, step)
        trial.add_signal("CrossEntropyLoss_output_0", ("losses",), step, 2.3)
        magnitude = 1e-2 if step < 2 else 5e-8
        trial.add_saved_step(step, {"gradient/fc.weight": np.full(4, magnitude)}, {"gradient/fc.weight": ["gradients"]})
        fired = rule.invoke_at_step(step)
    assert fired and rule.finding.tensor == "gradient/fc.weight"


# --------------------------------------------------------------------------- minibatch noise


def training_losses(recording: str) -> np.ndarray:
    return np.array([loss for _, mode, _, loss, _ in recorded_steps(recording) if mode == "TRAIN"])


@pytest.mark.parametrize("recording", ["mlp_batch16_tabular", "cnn_digits_global_mode"])
@pytest.mark.parametrize("parameters", [{}, product_rule_parameters("LossNotDecreasing")], ids=["documented", "product"])
def test_a_noisy_healthy_loss_is_not_reported(tmp_path, recording, parameters):
    # batches of 16: consecutive saved losses differ by up to 10x (the single-step rule fired at step 130 or 140);
    # a script without set_mode: its evaluation losses sit among the training losses (fired at step 170)
    losses = np.array([loss for _, _, _, loss, _ in recorded_steps(recording)])
    assert losses[:20].mean() > 2 * losses[-20:].mean()  # it learns
    rule, fired = replay(tmp_path, recording, "LossNotDecreasing", **parameters)
    assert fired is None, rule.finding


@pytest.mark.parametrize("parameters", [{}, product_rule_parameters("LossNotDecreasing")], ids=["documented", "product"])
def test_hard_minibatches_at_the_bottom_of_a_long_descent_are_not_reported_as_a_rising_loss(tmp_path, parameters):
    # the random zoo's plain script, healthy (held-out 0.92): its loss falls from 0.77 to 0.03 and a window of hard
    # minibatches takes the mean back to 0.07 (124% up, past 5% and the noise allowance) but 5% of the descent: the
    # rule stopped it at step 430 (the zoo's only false alarm on seeds 1004 and 1005)
    losses = training_losses("logline_tabular_sgd")
    assert losses[:20].mean() > 10 * losses[380:400].mean() and losses[400:420].mean() > 2 * losses[380:400].mean()
    rule, fired = replay(tmp_path, "logline_tabular_sgd", "LossNotDecreasing", **parameters)
    assert fired is None, rule.finding


@pytest.mark.parametrize("parameters", [{}, product_rule_parameters("LossNotDecreasing")], ids=["documented", "product"])
def test_a_slow_start_that_meets_its_objective_is_not_reported_stagnant(tmp_path, parameters):
    # a 3x64 sigmoid stack (SGD 0.05): its loss fell 4.5% in its first 80 steps, within the noise of windows of 10,
    # then fell to 0.2; held-out accuracy 0.925 against the zoo's 0.9 (its log lines: the recorder does not read them)
    losses = training_losses("logline_digits_sigmoid")
    assert 0.02 < 1 - losses[60:80].mean() / losses[:20].mean() < 0.06 and losses[-20:].mean() < 0.3
    rule, fired = replay(tmp_path, "logline_digits_sigmoid", "LossNotDecreasing", **parameters)
    assert fired is None, rule.finding


@pytest.mark.parametrize("parameters", [{}, product_rule_parameters("LossNotDecreasing")], ids=["documented", "product"])
def test_a_loss_that_never_moves_is_reported_stagnant(tmp_path, parameters):
    # frozen updates (SGD at 5e-7): the loss sits at 2.33 from its first step to its last; the window-to-window test
    # alone let it train all 12 epochs (276 steps) unreported
    losses = training_losses("smd_digits_frozen")
    assert abs(losses[:20].mean() - losses[-20:].mean()) < 0.02 * losses[:20].mean() and len(losses) == 276
    rule, fired = replay(tmp_path, "smd_digits_frozen", "LossNotDecreasing", **parameters)
    assert fired is not None and rule.finding.kind == "stagnant", rule.finding
    assert fired < 100  # a third of the job
    assert "loss has not fallen since its first judged window" in rule.finding.message


def test_a_rising_loss_is_still_reported(tmp_path):
    # the same noisy run with a divergence added after step 150 (+0.01 a step): the windowed rule sees the rise
    # through the noise
    recording = recorded_steps("mlp_batch16_tabular")
    trial = LiveTrial(tmp_path)
    rule = make("LossNotDecreasing", trial, mode="TRAIN")
    low = min(loss for *_, loss, _ in recording)
    fired = None
    for step, mode, mode_step, loss, _ in recording:
        trial.begin_step(step, ModeKeys[mode], mode_step)
        rising = loss if step < 150 else loss + 0.01 * (step - 150)
        trial.add_signal("CrossEntropyLoss_output_0", ("losses",), step, max(rising, low))
        if rule.invoke_at_step(step):
            fired = step
            break
    assert fired is not None and 150 < fired < 250 and rule.finding.kind == "rising"


def test_a_noisy_slow_start_is_not_reported_as_a_poor_initialisation(tmp_path):
    # SGD on batches of 16, seed 2: the loss makes no new minimum from step 2 to step 7 (SageMaker's test fires at
    # step 7), while it wanders 6% around 1.38; the run ends at 0.93
    losses = [loss for _, _, _, loss, _ in recorded_steps("mlp_batch16_tabular_seed2")[:10]]
    assert min(losses[3:8]) > losses[2] and (max(losses) - min(losses)) / np.mean(losses) > 0.05
    rule, fired = replay(tmp_path, "mlp_batch16_tabular_seed2", "PoorWeightInitialization",
                         **product_rule_parameters("PoorWeightInitialization"))
    assert fired is None, rule.finding


# --------------------------------------------------------------------------- a run that meets its objective


def test_a_converged_run_that_meets_its_objective_is_not_stopped(tmp_path):
    # Adam on batches of 512 for 60 epochs: held-out accuracy 0.91 from epoch 8 while the held-out loss creeps up
    # from 0.24 to 0.38; LossNotDecreasing at its documented num_steps judges the evaluation passes (one a epoch)
    rule, fired = replay(tmp_path / "alone", "mlp_batch512_tabular", "LossNotDecreasing")
    assert fired is not None and rule.finding.kind == HELD_OUT_RISING  # what a run without an objective is told
    rule, fired = replay(tmp_path / "objective", "mlp_batch512_tabular", "LossNotDecreasing", objective=objective(0.85))
    assert fired is None
    assert "but the run meets its objective (validation:accuracy >= 0.85: 0.9" in rule.latest_note
    # the objective's metric falling below the target makes the rule judge again
    rule, fired = replay(tmp_path / "higher", "mlp_batch512_tabular", "LossNotDecreasing", objective=objective(0.95))
    assert fired is not None


def test_a_held_out_loss_rising_while_the_training_loss_falls_is_reported_as_overfitting(tmp_path):
    # the same run: its training loss falls from 0.15 to 0.02 while its held-out loss rises from its lowest mean 0.25
    # to 0.33, what a model that fits what does not carry over shows (the planner answers it as it answers Overfit),
    # not a rate that overshoots
    rule, fired = replay(tmp_path, "mlp_batch512_tabular", "LossNotDecreasing")
    message = rule.finding.message
    assert rule.finding.kind == HELD_OUT_RISING and message.startswith("held-out loss rose 30.1% from its lowest mean")
    assert "while the training loss fell from 0.1529 to 0.02182" in message


def test_a_held_out_loss_rising_with_the_training_loss_is_still_a_rising_loss(tmp_path):
    # the same run diverging from its 21st evaluation pass (each later loss, training and held-out, up by 0.002 a step): the training
    # loss rises with the held-out one, as a rate that overshoots takes both up
    recording = recorded_steps("mlp_batch512_tabular")
    trial = LiveTrial(tmp_path)
    rule = make("LossNotDecreasing", trial)
    early = [step for step, mode, *_ in recording if mode == "EVAL"][20]  # once the held-out curve can be judged
    fired = None
    for step, mode, mode_step, loss, metrics in recording:
        trial.begin_step(step, ModeKeys[mode], mode_step)
        trial.latest_metrics.update(metrics)
        diverging = loss + 0.002 * max(0, step - early)
        trial.add_signal("CrossEntropyLoss_output_0", ("losses",), step, diverging)
        if rule.invoke_at_step(step):
            fired = step
            break
    assert fired is not None and early < fired < 300 and rule.finding.kind == "rising", rule.finding


# --------------------------------------------------------------------------- Overfit, Overtraining at their defaults


@pytest.mark.parametrize("rule_name", ["Overfit", "Overtraining"])
@pytest.mark.parametrize(("recording", "target"), [("mlp_tanh_digits", 0.9), ("mlp_batch512_tabular", 0.85)])
def test_overfit_and_overtraining_at_their_defaults_do_not_stop_healthy_training(tmp_path, rule_name, recording, target):
    # the issue's healthy tanh MLP (digits, 20 epochs, 0.99): SageMaker's Overfit fired at epoch 6 of 20
    rule, fired = replay(tmp_path, recording, rule_name, objective=objective(target))
    assert fired is None, rule.finding


def test_overfit_waits_for_the_validation_loss_to_get_worse(tmp_path):
    # without an objective to go by: the gap alone (ratio 0.13 at epoch 5, validation loss still falling) is not
    # overfitting; the validation loss rising above its best while the gap stays is (epoch 14)
    rule, fired = replay(tmp_path, "mlp_batch512_tabular", "Overfit")
    steps = recorded_steps("mlp_batch512_tabular")
    epoch = sum(1 for step, mode, *_ in steps if mode == "EVAL" and step < fired)
    assert epoch >= 10 and "with the validation loss above its best" in rule.finding.message
