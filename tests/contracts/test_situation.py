"""What the debugger's evidence says about a failure (contracts.situation): the run's history (a spike before the
rule fired) and whether the issue came early in the job."""

import pytest

from contracts.loss_history import LossWindow
from contracts.rule_status import Peak
from contracts.situation import EARLY_STEP_FALLBACK, Situation
from contracts.training_labels import LabelFinding


def test_a_spike_counts_only_above_the_factor_and_at_or_before_the_issue():
    """The first series to peak above factor x its initial value before the rule fired."""
    loss = Peak(value=40.0, step=4, learning_rate=0.8, phase="warmup")
    norm = Peak(value=70.0, step=3, learning_rate=0.8, phase="warmup")
    situation = Situation(issue_step=10, initial_loss=2.0, initial_gradient_norm=6.0, loss_peak=loss, gradient_norm_peak=norm)
    assert situation.spike(10).series == "gradient norm"  # 11.7x at step 3, before the loss's 20x at step 4
    assert situation.spike(15).series == "loss"
    assert situation.spike(25) is None
    assert Situation(issue_step=3, initial_loss=2.0, loss_peak=loss).spike(10) is None  # it peaked after the issue
    assert situation.spike(10).describe() == (
        "the gradient norm rose from 6 to 70 (11.7x) at step 3 (warmup phase, learning rate 0.8)"
    )


def test_a_spike_names_its_peaks_optimizer_step_with_the_saved_global_step_beside_it():
    """A report carrying the peak's optimizer step (decision 205): the sentence names it; an evaluation pass as such."""
    norm = Peak(value=70.0, step=13, learning_rate=0.8, phase="warmup", optimizer_step=3)
    situation = Situation(issue_step=40, issue_optimizer_step=10, initial_gradient_norm=6.0, gradient_norm_peak=norm)
    assert situation.spike(10).describe() == (
        "the gradient norm rose from 6 to 70 (11.7x) at step 3 (saved as global step 13) (warmup phase, learning rate 0.8)"
    )
    evaluated = Peak(value=40.0, step=9, optimizer_step=3, evaluation_pass=True)
    assert Situation(issue_step=40, initial_loss=2.0, loss_peak=evaluated).spike(10).describe() == (
        "the loss rose from 2 to 40 (20x) at the evaluation pass after step 2 (saved as global step 9)"
    )


def test_a_spike_needs_a_finite_positive_start_and_a_finite_peak():
    peak = Peak(value=float("inf"), step=2, learning_rate=0.1, phase="main")
    assert Situation(issue_step=5, initial_loss=2.0, loss_peak=peak).spike(10) is None
    finite = Peak(value=40.0, step=2, learning_rate=0.1, phase="main")
    assert Situation(issue_step=5, initial_loss=0.0, loss_peak=finite).spike(10) is None
    assert Situation(issue_step=5, initial_loss=float("nan"), loss_peak=finite).spike(10) is None


def test_an_issue_is_early_in_the_first_half_epoch_or_before_the_fallback_step():
    """With the job's steps per epoch, early is before half an epoch; without, before a fixed step."""
    assert Situation(issue_step=9, steps_per_epoch=20).early is True
    assert Situation(issue_step=10, steps_per_epoch=20).early is False
    assert Situation(issue_step=EARLY_STEP_FALLBACK - 1).early is True
    assert Situation(issue_step=EARLY_STEP_FALLBACK).early is False
    assert Situation().early is None  # no step: a remedy for early issues waits


def test_the_loss_trend_compares_the_last_finite_loss_with_the_first():
    assert Situation(initial_loss=2.3, last_finite_loss=0.4).loss_trend == "falling"
    assert Situation(initial_loss=2.3, last_finite_loss=2.3).loss_trend == "rising"
    assert Situation(initial_loss=2.3).loss_trend is None


def test_the_jobs_own_label_finding_comes_before_a_later_jobs():
    """A later job's finding (lambdas.remediation.planning.situation.situation_to_plan_from) is said only when the job the
    planner plans from has none of its own."""
    later = LabelFinding("memorised", "in job 2, the model learns its training labels by heart", "regularise")
    quiet = [LossWindow(step, step + 9, 10, 1.0, 0.6, 320) for step in range(0, 80, 10)]
    assert Situation(loss_windows=tuple(quiet), held_out_score=0.6, epochs=12, later_labels=later).labels == later
    noisy = Situation(loss_windows=tuple(quiet), held_out_score=0.9, epochs=12, later_labels=later)
    assert noisy.own_labels is not None and noisy.own_labels.kind == "noisy"
    assert noisy.labels == noisy.own_labels


def test_a_target_scale_divides_a_rate_only_under_a_squared_error():
    """A squared error's gradient is the error: it grows with the targets' scale, and so does an SGD step. A Huber or
    L1 loss's gradient is bounded: the same targets take no larger step, and dividing the rate would only slow it."""
    squared = Situation(target_rms=837.7, output_rms=0.12, target_loss="MSELoss")
    assert squared.target_scale == pytest.approx(837.7) and squared.step_target_scale == pytest.approx(837.7)
    huber = Situation(target_rms=837.7, output_rms=0.12, target_loss="HuberLoss")
    assert huber.target_scale == pytest.approx(837.7) and huber.step_target_scale is None
    assert Situation(target_rms=5.0, output_rms=2.5).target_scale == pytest.approx(2.0)  # outputs' own unit
    assert Situation().target_scale is None


def test_a_job_learned_nothing_when_its_loss_never_fell_and_its_score_is_what_guessing_the_common_class_scores():
    """Two jobs that learned nothing score by chance (contracts.situation.Situation.learned_nothing): a loss that never
    fell, and a held-out score within CHANCE_MARGIN of the most common class's share. An LSTM's job (windows as its
    debugger reported them): the loss from 1.383 to 1.391 over 4 classes counted 1945/1925/2095/2035 (guessing
    scores 0.262)."""
    flat = tuple(LossWindow(step, step + 7, 8, mean, 0.25, 8) for step, mean in zip(range(0, 128, 8), [1.67, 1.43] + [1.39] * 14, strict=True))
    counts = (1945, 1925, 2095, 2035)
    at_chance = Situation(loss_windows=flat, initial_loss=1.383, label_counts=counts, held_out_score=0.233)
    assert at_chance.loss_course.shape == "flat" and at_chance.learned_nothing
    # 0.262 + 0.05 is the edge: a score above it learned something even with a flat loss (wrong labels under dropout)
    assert Situation(loss_windows=flat, initial_loss=1.383, label_counts=counts, held_out_score=0.311).learned_nothing
    assert not Situation(loss_windows=flat, initial_loss=1.383, label_counts=counts, held_out_score=0.4175).learned_nothing
    # a loss that fell learned something, whatever it scores held out
    fell = tuple(LossWindow(w.first_step, w.last_step, w.count, w.mean / (1 + i), 0.25, 8) for i, w in enumerate(flat))
    assert not Situation(loss_windows=fell, initial_loss=1.383, label_counts=counts, held_out_score=0.233).learned_nothing
    # without counted labels (a regression, a loss the debugger does not read labels from) the flat loss says it
    assert Situation(loss_windows=flat, initial_loss=1.383, held_out_score=None).learned_nothing
    # too little reported to read the loss's course: not known to have learned nothing
    assert not Situation(loss_windows=flat[:3], initial_loss=1.383, label_counts=counts, held_out_score=0.233).learned_nothing
