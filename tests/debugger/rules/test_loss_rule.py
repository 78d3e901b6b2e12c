"""LossNotDecreasing on real training (a small MLP on scikit-learn's digits and a GRU on the random zoo's generated
waves, trained here): a loss that jumps far above its first step and stays there is "rising" (diverged), never "flat"
or "stagnant"; a healthy run and a frozen one are not read as diverged (contracts.divergence,
docs/decisions/165-divergence-from-the-runs-own-course.md); a spike the run recovered from is not a rise, a rise after
a rate was raised is (docs/decisions/185-a-rise-is-judged-on-where-the-loss-stayed.md)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from rule_trials import make
from sklearn.datasets import load_digits

from debugger.core.modes import ModeKeys
from debugger.rules.loss_rule import sustained_level
from debugger.trial import LiveTrial

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
import zoo_data  # noqa: E402  (the random zoo's generated sequences)


def digits_losses(optimizer: str, rate: float, steps: int, seed: int, raised: tuple[int, float] | None = None) -> list[float]:
    """Every training step's loss of a 2x128 ELU MLP on the standardised digits, batches of 64; ``raised``: (the step
    from which, the rate) a rate set higher mid-run, as a remedy or a schedule does."""
    torch.manual_seed(seed)
    x, y = load_digits(return_X_y=True)
    x = torch.tensor((x - x.mean(0)) / (x.std(0) + 1e-6), dtype=torch.float32)
    y = torch.tensor(y)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 128), torch.nn.ELU(), torch.nn.Linear(128, 128), torch.nn.ELU(), torch.nn.Linear(128, 10)
    )
    opt = (torch.optim.Adam if optimizer == "adam" else torch.optim.SGD)(model.parameters(), lr=rate)
    return step_losses(lambda batch: model(x[batch]), opt, y, steps, torch.Generator().manual_seed(seed), True, raised)


def step_losses(scores, opt, y, steps: int, generator=None, drop_last: bool = False,
                raised: tuple[int, float] | None = None) -> list[float]:
    """Every step's cross-entropy over shuffled batches of 64 (``scores(batch)``: the model's scores for those
    indices); ``raised``: (the step from which, the rate) a rate set higher mid-run."""
    losses: list[float] = []
    while len(losses) < steps:
        order = torch.randperm(len(y), generator=generator)
        for start in range(0, len(y) - 63 if drop_last else len(y), 64):
            if raised is not None and len(losses) == raised[0]:
                for group in opt.param_groups:
                    group["lr"] = raised[1]
            batch = order[start : start + 64]
            loss = torch.nn.functional.cross_entropy(scores(batch), y[batch])
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


def waves_gru_losses(optimizer: str, rate: float, steps: int, seed: int, data_seed: int) -> list[float]:
    """Every training step's loss of bench/zoo_scripts/sequence_rnn.py's model (a GRU of 2 layers of 32 units, its
    last hidden state to a linear head) on the zoo's generated waves, batches of 64, as the script trains it."""
    torch.manual_seed(seed)
    x, y, _, _ = zoo_data.make_data("waves", data_seed)
    x, y = torch.from_numpy(np.asarray(x, dtype=np.float32)), torch.from_numpy(np.asarray(y, dtype=np.int64))
    rnn, head = torch.nn.GRU(x.shape[-1], 32, num_layers=2, batch_first=True), torch.nn.Linear(32, int(y.max()) + 1)
    parameters = [*rnn.parameters(), *head.parameters()]
    opt = torch.optim.RMSprop(parameters, lr=rate) if optimizer == "rmsprop" else torch.optim.SGD(parameters, lr=rate, momentum=0.9)
    return step_losses(lambda batch: head(rnn(x[batch])[0][:, -1]), opt, y, steps)


def test_a_spike_the_run_recovered_from_is_not_a_rise(tmp_path):
    """The random zoo's development seed 2002, configuration 19's healthy twin (RMSprop 0.005): its loss fell to 0.01,
    spiked to 2.0 at step 101 and was back near 0.04 within 15 steps; the run then met its objective (held-out
    accuracy 1.0). The window holding the spike has a mean 18 times the lowest: read from its mean, a rise, and the
    job was stopped (decision 165's false alarm)."""
    losses = waves_gru_losses("rmsprop", 0.005, 200, seed=248, data_seed=248)
    window = losses[100:120]
    lowest = min(float(np.mean(losses[end - 19 : end + 1])) for end in (39, 59, 79, 99))
    assert max(window) > 1.0 and float(np.mean(window)) > 10 * lowest  # the real run: a spike ...
    assert float(np.mean(losses[-20:])) < 2 * lowest  # ... it came back from
    step, rule = judge(tmp_path, losses)
    assert step is None
    assert sustained_level(window) < float(np.mean(window)) / 5
    assert rule.latest_note is None or "not a sustained rise" in rule.latest_note


def test_the_note_on_a_recovered_spike_keeps_its_words(tmp_path):
    losses = waves_gru_losses("rmsprop", 0.005, 120, seed=248, data_seed=248)
    step, rule = judge(tmp_path, losses)
    window = losses[100:120]
    low = min(float(np.mean(losses[end - 19 : end + 1])) for end in (39, 59, 79, 99))
    assert step is None
    assert rule.latest_note.endswith(
        f"; but the loss spiked to {max(window):.4g} and came back: the window's median {float(np.median(window)):.4g} "
        f"and its latest half's {float(np.median(window[10:])):.4g} stayed within the allowed rise from the lowest "
        f"mean {low:.4g}: an excursion the run recovered from, not a sustained rise"
    )
    assert rule.latest_note.startswith("loss rose ")


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("rate", [0.03, 0.3])
def test_a_loss_that_rose_after_its_rate_was_raised_is_still_rising(tmp_path, seed, rate):
    """Adam at 1e-3 for 60 steps, then 30 or 300 times that rate: the loss goes back up and stays there; the first
    window after the raise is read as a rise, the spike's own recovery test does not hide it."""
    losses = digits_losses("adam", 1e-3, 120, seed, raised=(60, rate))
    assert float(np.mean(losses[60:80])) > 2 * float(np.mean(losses[40:60]))
    step, rule = judge(tmp_path, losses)
    assert step == 79 and rule.finding.kind == "rising"
    assert sustained_level(losses[60:80]) > float(np.mean(losses[40:60]))
