"""The arithmetic of the built-in rules on constructed arrays, at and around their documented thresholds."""

import math

import numpy as np
import pytest

from debugger.rules import rule_checks


def test_dead_relu_counts_units_over_batch_and_positions():
    outputs = np.zeros((8, 4, 3, 3))
    outputs[:, 0] = 1.0  # unit 0 always active
    outputs[0, 1, 0, 0] = 1.0  # unit 1 active in 1 of 72 outputs: 1.4% >= 1%
    dead, units = rule_checks.inactive_unit_percent(outputs, threshold_inactivity=1.0)
    assert units == 4 and dead == 50.0  # units 2 and 3 never active
    dead_strict, _ = rule_checks.inactive_unit_percent(outputs, threshold_inactivity=2.0)
    assert dead_strict == 75.0
    linear = np.array([[0.5, 0.0], [0.1, 0.0]])
    assert rule_checks.inactive_unit_percent(linear, 1.0) == (50.0, 2)


def test_saturated_activation_uses_the_flat_regions_of_tanh():
    inputs = np.array([[12.0, 0.1], [-15.0, 0.2], [10.0, -0.3]])
    saturated, units = rule_checks.saturated_unit_percent(inputs, -9.4999, 9.4999, threshold_inactivity=1.0)
    assert (saturated, units) == (50.0, 2)
    healthy, _ = rule_checks.saturated_unit_percent(np.array([[0.1, 0.2]]), -9.4999, 9.4999, 1.0)
    assert healthy == 0.0


def test_all_zero_unchanged_and_variance():
    assert rule_checks.zero_percent(np.zeros(10)) == 100.0
    assert rule_checks.zero_percent(np.array([0.0, 1.0, 0.0, 2.0])) == 50.0
    same = [np.ones(3), np.ones(3) + 1e-9, np.ones(3)]
    assert rule_checks.unchanged(same, rtol=1e-5, atol=1e-8, equal_nan=False)
    assert not rule_checks.unchanged([np.ones(3), np.ones(3) * 1.1], rtol=1e-5, atol=1e-8, equal_nan=False)
    nan = [np.array([math.nan]), np.array([math.nan])]
    assert not rule_checks.unchanged(nan, 1e-5, 1e-8, equal_nan=False)
    assert rule_checks.unchanged(nan, 1e-5, 1e-8, equal_nan=True)
    assert not rule_checks.unchanged([np.ones(3)], 1e-5, 1e-8, False)  # one step proves nothing
    assert rule_checks.variance(np.array([1.0, 3.0])) == 1.0


def test_class_imbalance_ratio_and_mispredictions():
    labels = np.array([0] * 90 + [1] * 9 + [2] * 1)
    counts = rule_checks.class_counts(labels)
    assert counts.tolist() == [90, 9, 1]
    assert rule_checks.imbalance_ratio(counts) == 90.0
    assert rule_checks.imbalance_ratio(rule_checks.class_counts(np.array([0, 1, 0, 1]))) == 1.0
    predictions = np.array([0] * 90 + [0] * 9 + [0])
    fractions = rule_checks.misprediction_fractions(labels, predictions)
    assert fractions == {0: 0.0, 1: 1.0, 2: 1.0}
    one_hot = np.eye(3)[labels]
    assert rule_checks.class_counts(one_hot, argmax=True).tolist() == [90, 9, 1]


def test_overfit_ratio_and_steps_without_improvement():
    assert rule_checks.overfit_ratio([1.0, 1.0], [1.3, 1.3]) == pytest.approx(0.3)
    assert rule_checks.overfit_ratio([1.0], [0.9]) == pytest.approx(-0.1)
    assert rule_checks.steps_without_improvement([3.0, 2.0, 1.0, 1.0, 0.999, 1.2], delta=0.01) == 3
    assert rule_checks.steps_without_improvement([3.0, 2.0, 1.0], delta=0.01) == 0


def test_channel_means_of_images():
    images = np.zeros((4, 3, 2, 2))
    images[:, 0] = 0.5
    assert rule_checks.channel_means(images, channel=1).tolist() == [0.5, 0.0, 0.0]
    nhwc = np.moveaxis(images, 1, -1)
    assert rule_checks.channel_means(nhwc, channel=-1).tolist() == [0.5, 0.0, 0.0]
