"""LossNotDecreasing on real training (a small MLP on scikit-learn's digits, trained here): a loss that jumps far above
its first step and stays there is "rising" (diverged), never "flat" or "stagnant"; a healthy run and a frozen one are
not read as diverged (contracts.divergence, docs/decisions/165-divergence-from-the-runs-own-course.md)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from rule_trials import make
from sklearn.datasets import load_digits

from debugger.core.modes import ModeKeys
from debugger.trial import LiveTrial


def digits_losses(optimizer: str, rate: float, steps: int, seed: int) -> list[float]:
    """Every training step's loss of a 2x128 ELU MLP on the standardised digits, batches of 64."""
    torch.manual_seed(seed)
    x, y = load_digits(return_X_y=True)
    x = torch.tensor((x - x.mean(0)) / (x.std(0) + 1e-6), dtype=torch.float32)
    y = torch.tensor(y)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 128), torch.nn.ELU(), torch.nn.Linear(128, 128), torch.nn.ELU(), torch.nn.Linear(128, 10)
    )
    opt = (torch.optim.Adam if optimizer == "adam" else torch.optim.SGD)(model.parameters(), lr=rate)
    losses, generator = [], torch.Generator().manual_seed(seed)
    while len(losses) < steps:
        order = torch.randperm(len(y), generator=generator)
        for start in range(0, len(y) - 63, 64):
            batch = order[start : start + 64]
            loss = torch.nn.functional.cross_entropy(model(x[batch]), y[batch])
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
            if len(losses) == steps:
                break
    return losses


def judge(tmp_path, losses: list[float]):
    """LossNotDecreasing at the product's num_steps (20) over these losses, as the hook feeds it; (step, rule)."""
    trial = LiveTrial(tmp_path)
    rule = make("LossNotDecreasing", trial, num_steps="20")
    for step, loss in enumerate(losses):
        trial.begin_step(step, ModeKeys.TRAIN, step)
        trial.add_signal("CrossEntropyLoss_output_0", ("losses",), step, loss)
        if rule.invoke_at_step(step):
            return step, rule
    return None, rule


@pytest.mark.parametrize("seed", [0, 1, 2, 5])
def test_a_loss_that_jumped_far_above_its_first_step_and_stayed_is_rising_not_flat(tmp_path, seed):
    """Adam at 1.0: window means of 2,500, then 46-89, then 17-33, from a first step of 2.3: each window below the one
    before (so never "rising" from its lowest), and the early blow-up's noise hides everything from the run's noise."""
    losses = digits_losses("adam", 1.0, 80, seed)
    assert sum(losses[20:40]) / 20 > 10 * losses[0]  # the real run: it jumped and did not come back
    step, rule = judge(tmp_path, losses)
    assert step == 39  # the first judgement: two windows of 20
    assert rule.finding.kind == "rising"
    window = losses[20:40]
    mean = sum(window) / 20
    noise = 3.5 * float(np.std(window)) / math.sqrt(20)
    assert rule.finding.message == (
        f"loss rose to a mean of {mean:.6g} over 20 (the 20 steps to step 39), {mean / losses[0]:.3g}x its first value "
        f"{losses[0]:.6g} (a rise from 2.5x beyond the noise, {noise:.3g}, is a divergence): the loss diverged, it did "
        "not stay flat"
    )


@pytest.mark.parametrize(("optimizer", "rate"), [("adam", 1e-3), ("sgd", 0.05)])
def test_healthy_runs_are_not_read_as_diverged(tmp_path, optimizer, rate):
    step, _ = judge(tmp_path, digits_losses(optimizer, rate, 120, 3))
    assert step is None


def test_a_frozen_run_is_not_read_as_diverged(tmp_path):
    """SGD at 1e-7: the loss does not move; whatever the rule says of it, it is not a divergence."""
    step, rule = judge(tmp_path, digits_losses("sgd", 1e-7, 120, 3))
    assert step is None or rule.finding.kind != "rising"
