"""Divergence read from a run's own course (contracts.divergence): the windows the job folds its loss and gradient
norm into carry their spread and peak exactly, and a rise or spike far above the first step, beyond the window's
noise, is a divergence; a rise that came back below the start, or a healthy run's course, is not. The courses are
real: the loss windows of recorded jobs (tests/lambdas/remediation/recorded/)."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pytest

from contracts.divergence import (
    GRADIENT_NORM,
    GRADIENT_NORM_FACTOR,
    LOSS,
    LOSS_RISE_FACTOR,
    RISING,
    SPIKING,
    Divergence,
    divergence,
    typical_before_spike,
)
from contracts.loss_history import LossHistory, LossWindow

RECORDED = Path(__file__).resolve().parents[1] / "lambdas" / "remediation" / "recorded"


def recorded_job(name: str, job: int) -> dict:
    return json.loads((RECORDED / f"{name}.json").read_text())["jobs"][job]["rule_status"]["evidence"]


def windows_of(evidence: dict) -> list[LossWindow]:
    return [LossWindow.from_dict(window) for window in evidence["loss_windows"]]


@pytest.mark.parametrize("steps", [1, 7, 16, 33, 500])
def test_a_windows_spread_and_peak_are_those_of_its_own_steps_after_any_merge(steps):
    values = [math.sin(step * 0.7) * 3 + step * 0.01 for step in range(steps)]
    history = LossHistory()
    for step, value in enumerate(values):
        history.add(step, value)
    for window in history.windows():
        own = values[window.first_step : window.last_step + 1]
        assert window.spread == pytest.approx(statistics.pstdev(own), abs=1e-9)
        assert window.peak == max(own) and values[window.peak_step] == max(own)


def test_a_loss_that_rose_after_the_rate_was_raised_and_stayed_above_its_start_diverged():
    """Adam at 0.1 after 1e-5: the loss's windows went up to 10.78 from a first step of 2.284 and ended near 3.75. The
    first windows spread as widely as they rose (10.78, spread 5.1 over 4 steps: within 3.5 standard errors); the
    highest that clears its noise is 6.51 (spread 0.93), 2.85x the start. The job's debugger read the same."""
    evidence = recorded_job("mlp-adam-rate-raised-loss-rising", 1)
    found = divergence(windows_of(evidence), evidence["initial_loss"], LOSS)
    assert (found.series, found.kind) == (LOSS, RISING)
    assert max(window.mean for window in windows_of(evidence)) == pytest.approx(10.78, abs=0.01)
    assert found.level == pytest.approx(6.507, abs=0.001) and found.ratio > LOSS_RISE_FACTOR
    assert found.from_step == 25 and found.end > found.early
    assert found == Divergence.from_dict(evidence["loss_divergence"])


def test_a_loss_that_rose_and_came_back_below_its_start_recovered():
    """The same rate on another script: the loss rose to 4.4x its first step, then fell to half of it (0.91)."""
    evidence = recorded_job("logline-adam-rate-raised-recovers", 1)
    assert max(window.mean for window in windows_of(evidence)) > LOSS_RISE_FACTOR * evidence["initial_loss"]
    assert divergence(windows_of(evidence), evidence["initial_loss"], LOSS) is None


@pytest.mark.parametrize(
    ("name", "job"),
    [("mlp-adam-one-epoch-settled", 1), ("mlp-sgd-frozen-stagnant", 0), ("regression-sgd-2e-5-frozen", 0),
     ("mlp-one-epoch-at-chance", 3), ("text-noisy-labels-found-by-a-later-job", 2), ("mlp-noisy-labels", 3)],
)  # fmt: skip
def test_healthy_slow_or_frozen_courses_did_not_diverge(name, job):
    """Frozen rates drift up a little (1.12x, 1.23x): not a divergence; neither is a loss that fell."""
    evidence = recorded_job(name, job)
    assert divergence(windows_of(evidence), evidence["initial_loss"], LOSS) is None


def test_a_rise_within_its_windows_noise_is_not_a_divergence():
    noisy = [LossWindow(0, 3, 4, 1.0, spread=0.1), LossWindow(4, 7, 4, 3.0, spread=2.0), LossWindow(8, 11, 4, 1.2)]
    assert divergence(noisy, 1.0, LOSS) is None  # 3.0 is 3x the start, but 2 above it is within 3.5 x 2 / sqrt(4)
    clear = [LossWindow(0, 3, 4, 1.0, spread=0.1), LossWindow(4, 7, 4, 3.0, spread=0.2), LossWindow(8, 11, 4, 1.2)]
    assert divergence(clear, 1.0, LOSS).kind == RISING


def test_a_gradient_norm_that_spiked_without_staying_up_is_spiking_and_healthy_growth_is_not():
    windows = [LossWindow(0, 3, 4, 0.3, peak=0.4, peak_step=1), LossWindow(4, 7, 4, 60.0, peak=230.0, peak_step=6),
               LossWindow(8, 11, 4, 0.5, peak=0.9, peak_step=9)]  # fmt: skip
    found = divergence(windows, 0.2, GRADIENT_NORM)
    assert (found.kind, found.level, found.peak_step) == (SPIKING, 230.0, 6)
    assert found.ratio == pytest.approx(1150)
    grown = [LossWindow(0, 3, 4, 0.3, peak=0.4), LossWindow(4, 7, 4, 2.0, peak=3.8)]  # 19x: a healthy run's most
    assert divergence(grown, 0.2, GRADIENT_NORM) is None
    stayed = [LossWindow(0, 3, 4, 30.0, peak=40.0), LossWindow(4, 7, 4, GRADIENT_NORM_FACTOR * 0.3, peak=50.0)]
    assert divergence(stayed, 0.2, GRADIENT_NORM).kind == RISING


def test_a_divergence_round_trips_and_says_what_rose_with_its_numbers():
    found = Divergence(LOSS, RISING, early=2.2836, level=10.7812, from_step=0, peak_step=7, end=3.541)
    assert Divergence.from_dict(json.loads(json.dumps(found.to_dict()))) == found
    assert found.describe() == (
        "the loss rose to 10.78, 4.72x its first step's 2.284, over steps 0-7, and ended at 3.541, still above where "
        "it started"
    )
    spike = Divergence(GRADIENT_NORM, SPIKING, early=0.2158, level=824.54, from_step=20, peak_step=33, end=80.0)
    assert spike.describe() == "the gradient norm spiked to 824.5, 3821x its first step's 0.2158, at step 33"
    stayed = Divergence(GRADIENT_NORM, RISING, early=0.5, level=90.0, from_step=12, peak_step=40, end=80.0)
    assert stayed.describe() == "the gradient norm rose to 90, 180x its first step's 0.5, by steps 12-40, and stayed there"


def test_a_divergence_names_the_optimizer_steps_and_the_saved_global_steps_once_beside_them():
    """A report that carries the optimizer steps (decision 205): the sentence names them, as every message does, and
    the global steps once beside them; an older report (the test above) names its global steps as before."""
    found = Divergence(LOSS, RISING, 2.2836, 10.7812, 0, 7, 3.541, from_optimizer_step=0, peak_optimizer_step=1)
    assert Divergence.from_dict(json.loads(json.dumps(found.to_dict()))) == found
    assert found.describe() == (
        "the loss rose to 10.78, 4.72x its first step's 2.284, over steps 0-1 (saved as global steps 0-7), and ended "
        "at 3.541, still above where it started"
    )
    spike = Divergence(GRADIENT_NORM, SPIKING, 0.2158, 824.54, 20, 33, 80.0, from_optimizer_step=5, peak_optimizer_step=8)
    assert spike.describe() == (
        "the gradient norm spiked to 824.5, 3821x its first step's 0.2158, at step 8 (saved as global step 33)"
    )
    same = Divergence(GRADIENT_NORM, SPIKING, 0.2158, 824.54, 20, 33, 80.0, from_optimizer_step=20, peak_optimizer_step=33)
    assert same.describe().endswith("at step 33")  # the numbers agree: said once


def test_the_windows_optimizer_steps_are_carried_into_what_diverged():
    windows = [
        LossWindow(0, 3, 4, 2.0, spread=0.1, first_optimizer_step=0, last_optimizer_step=0),
        LossWindow(4, 9, 4, 9.0, spread=0.2, peak=12.0, peak_step=6, first_optimizer_step=1, last_optimizer_step=1,
                   peak_optimizer_step=1),
        LossWindow(10, 15, 4, 8.0, spread=0.2, first_optimizer_step=2, last_optimizer_step=3),
    ]  # fmt: skip
    rose = divergence(windows, 2.0, LOSS)
    assert (rose.kind, rose.from_step, rose.peak_step, rose.from_optimizer_step, rose.peak_optimizer_step) == (
        RISING, 4, 9, 1, 1,
    )  # fmt: skip
    assert "over step 1 (saved as global steps 4-9)" in rose.describe()
    spiked = divergence(
        [LossWindow(0, 3, 4, 0.3, peak=0.4, peak_step=1, first_optimizer_step=0, last_optimizer_step=0,
                    peak_optimizer_step=0),
         LossWindow(4, 7, 4, 60.0, peak=230.0, peak_step=6, first_optimizer_step=1, last_optimizer_step=1,
                    peak_optimizer_step=1),
         LossWindow(8, 11, 4, 0.5, peak=0.9, peak_step=9)],
        0.2, GRADIENT_NORM,
    )  # fmt: skip
    assert (spiked.kind, spiked.peak_step, spiked.peak_optimizer_step) == (SPIKING, 6, 1)


def test_the_gradient_norms_typical_size_is_read_before_its_first_spike():
    """The recorded regression on targets x1000 at SGD 1.2e-5 (job 2): the gradient norm started at 1065 and kept a
    few thousand until it spiked to 3.8e5 at step 255; its typical size is the median of its window means before the
    first window whose peak reached 100 times the first step's value, not the spike's level."""
    evidence = recorded_job("regression-targets-x1000", 1)
    windows = [LossWindow.from_dict(window) for window in evidence["gradient_norm_windows"]]
    early = evidence["initial_gradient_norm"]
    first_spike = next(index for index, window in enumerate(windows) if window.peak >= GRADIENT_NORM_FACTOR * early)
    before = sorted(window.mean for window in windows[:first_spike])
    assert typical_before_spike(windows, early) == pytest.approx(statistics.median(before))
    assert 1000 < typical_before_spike(windows, early) < 10_000 < max(window.peak for window in windows)


def test_without_a_spike_the_typical_size_is_the_median_of_every_window():
    windows = [LossWindow(step, step + 3, 4, mean, None, 0, 0.1, mean * 1.5, step) for step, mean in
               zip(range(0, 20, 4), [0.5, 0.9, 1.1, 1.2, 40.0], strict=True)]  # fmt: skip
    assert typical_before_spike(windows, 1.0) == 1.1  # a peak of 60 is below 100 times 1.0: no spike
    assert typical_before_spike(windows, 0.5) == 1.0  # ... but 60 is above 100 times 0.5: the last window spiked
    assert typical_before_spike([], 0.5) is None
    assert typical_before_spike(windows[4:], 0.1) is None  # its first window already spiked: nothing before it


def test_a_huge_ratio_is_written_as_a_person_writes_it():
    """A loss that went from 1.05e6 to 1.2e16 rose 1.17e10 times: not every digit of the quotient."""
    assert Divergence(LOSS, RISING, 1.048e6, 1.222e16, 33, 34, 2.4e15).times == "1.17e+10x"
    assert Divergence(LOSS, RISING, 0.2158, 824.5, 33, 33, 1.0).times == "3821x"
    assert Divergence(LOSS, RISING, 2.284, 10.78, 4, 7, 3.5).times == "4.72x"
