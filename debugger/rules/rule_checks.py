"""The arithmetic of SageMaker Debugger's built-in rules, on plain arrays: each function returns what its rule
compares with its threshold, so the rule classes only select tensors, keep state across steps and report.

The semantics follow the SageMaker developer guide's "List of Debugger built-in rules" (parameters, defaults,
percentages in percent). Where the guide leaves a detail open, the choice is stated here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def unit_axes(array: np.ndarray) -> tuple[int, ...]:
    """The axes a unit's activity is counted over: every axis but the channel/feature axis 1 (the batch and, for
    convolutions, the spatial positions). A 1-D tensor is one unit per element: no axes to count over."""
    return tuple(axis for axis in range(array.ndim) if axis != 1) if array.ndim >= 2 else ()


def inactive_unit_percent(outputs: np.ndarray, threshold_inactivity: float) -> tuple[float, int]:
    """DeadRelu: (percent of units active in less than ``threshold_inactivity`` percent of their outputs, units).

    A ReLU unit is active on an output when it is > 0. A unit is a channel of a convolution's output (counted
    over the batch and the spatial positions) or a feature of a linear layer's output (over the batch)."""
    values = np.asarray(outputs)
    if values.ndim == 0 or values.size == 0:
        return 0.0, 0
    active = values > 0
    axes = unit_axes(values)
    activity = active.mean(axis=axes) * 100.0 if axes else active.astype(np.float64) * 100.0
    activity = np.atleast_1d(activity)
    return float((activity < threshold_inactivity).mean() * 100.0), int(activity.size)


def saturated_unit_percent(inputs: np.ndarray, low: float, high: float, threshold_inactivity: float) -> tuple[float, int]:
    """SaturatedActivation: (percent of units whose inputs lie inside (low, high) in less than
    ``threshold_inactivity`` percent of cases, units). Outside those bounds tanh or sigmoid is flat: the unit
    passes (almost) no gradient, it is inactive."""
    values = np.asarray(inputs, dtype=np.float64)
    if values.ndim == 0 or values.size == 0:
        return 0.0, 0
    active = (values > low) & (values < high)
    axes = unit_axes(values)
    activity = active.mean(axis=axes) * 100.0 if axes else active.astype(np.float64) * 100.0
    activity = np.atleast_1d(activity)
    return float((activity < threshold_inactivity).mean() * 100.0), int(activity.size)


def zero_percent(values: np.ndarray) -> float:
    """AllZero: percent of the tensor's values that are exactly zero."""
    array = np.asarray(values)
    return float((array == 0).mean() * 100.0) if array.size else 0.0


def unchanged(history: Sequence[np.ndarray], rtol: float, atol: float, equal_nan: bool) -> bool:
    """UnchangedTensor: every value of the last ``len(history)`` available steps is allclose to the first
    (numpy.allclose with the rule's rtol, atol and equal_nan)."""
    if len(history) < 2:
        return False
    first = np.asarray(history[0])
    return all(
        np.shape(step) == first.shape and np.allclose(first, step, rtol=rtol, atol=atol, equal_nan=equal_nan)
        for step in history[1:]
    )


def variance(values: np.ndarray) -> float:
    """TensorVariance: the variance of the tensor's values (NaN for an empty tensor)."""
    array = np.asarray(values, dtype=np.float64)
    return float(array.var()) if array.size else math.nan


def class_counts(labels: np.ndarray, argmax: bool = False) -> np.ndarray:
    """Label occurrences per class index (one-hot or probability vectors with ``argmax``)."""
    array = np.asarray(labels)
    if argmax and array.ndim > 1:
        array = array.argmax(axis=-1)
    array = array.reshape(-1).astype(np.int64)
    return np.bincount(array[array >= 0])


def imbalance_ratio(counts: np.ndarray) -> float:
    """ClassImbalance: samples in the largest class over samples in the smallest class that occurs at all
    (a class with no sample cannot be told from one the data set does not have)."""
    present = np.asarray(counts)[np.asarray(counts) > 0]
    if present.size < 2:
        return 1.0
    return float(present.max() / present.min())


def misprediction_fractions(labels: np.ndarray, predictions: np.ndarray, argmax: bool = False) -> dict[int, float]:
    """ClassImbalance: per class that occurs, the fraction of its samples predicted as another class."""
    truth = np.asarray(labels)
    guess = np.asarray(predictions)
    if argmax:
        if truth.ndim > 1:
            truth = truth.argmax(axis=-1)
        if guess.ndim > 1:
            guess = guess.argmax(axis=-1)
    truth = truth.reshape(-1).astype(np.int64)
    guess = guess.reshape(-1).astype(np.int64)
    fractions = {}
    for label in np.unique(truth):
        mask = truth == label
        fractions[int(label)] = float((guess[mask] != label).mean())
    return fractions


def overfit_ratio(train_losses: Sequence[float], validation_losses: Sequence[float]) -> float:
    """Overfit: (mean validation loss - mean training loss) / mean training loss."""
    train = float(np.mean(train_losses))
    validation = float(np.mean(validation_losses))
    if train == 0:
        return math.inf if validation > 0 else 0.0
    return (validation - train) / abs(train)


def steps_without_improvement(losses: Sequence[float], delta: float) -> int:
    """Overtraining: how many of the latest values came after the best one without improving on it by more than
    ``delta`` (relative to the best value's magnitude, so the test works at any loss scale)."""
    best = math.inf
    since_best = 0
    for loss in losses:
        if not math.isfinite(loss):
            since_best += 1
            continue
        if loss < best - delta * (abs(best) if math.isfinite(best) else 0.0):
            best = loss
            since_best = 0
        else:
            since_best += 1
    return since_best


def channel_means(images: np.ndarray, channel: int) -> np.ndarray:
    """CheckInputImages: the mean of each colour channel over a batch of images."""
    array = np.asarray(images, dtype=np.float64)
    axis = channel if channel >= 0 else array.ndim + channel
    axes = tuple(index for index in range(array.ndim) if index != axis)
    return array.mean(axis=axes)


#: How many standard errors a change of the windowed loss must exceed before it counts (LossNotDecreasing): about 1
#: in 4,000 checks of a loss that only wanders with its noise. Why 3.5: docs/decisions/017-loss-judged-on-windows-with-its-noise.md
NOISE_STANDARD_ERRORS = 3.5


def noise_sigma(values: Sequence[float]) -> float:
    """The noise of single values of a series (minibatch losses), measured on the series itself: the standard
    deviation of its first differences (which leave out the slow trend of training) over sqrt(2) (a difference
    holds two values' noise). Not a robust spread: the windows are judged by their means, which the odd hard
    batch moves as much as it moves this. 0 with fewer than three values."""
    array = np.asarray([value for value in values if math.isfinite(value)], dtype=np.float64)
    if array.size < 3:
        return 0.0
    return float(np.std(np.diff(array), ddof=1)) / math.sqrt(2.0)


def mean_difference_error(sigma: float, first: int, second: int) -> float:
    """The standard error of the difference of two means of ``first`` and ``second`` values of noise ``sigma``."""
    return sigma * math.sqrt(1.0 / first + 1.0 / second)
