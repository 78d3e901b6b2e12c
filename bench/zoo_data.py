"""The random repair zoo's data: each data set split 80/20 by the configuration's seed, the faults applied as drawn.
Generated or bundled with scikit-learn: nothing is downloaded.

* ``digits``, ``tabular``: classification (``bench/zoo_random.py`` describes them).
* ``diabetes`` (scikit-learn's bundled 442 x 10) and ``friedman1`` (``make_friedman1``: 2,000 x 10, noise 1):
  regression; the targets come standardised with the training part's mean and deviation (as a pipeline that
  delivers z-scores gives them), so a model's error reads in deviations of the target.
* ``waves``: a generated sequence task for recurrent networks: 2,000 sequences of 24 steps x 3 channels, each a noisy
  sine at one of 4 frequencies (the class) with a random phase and amplitude on each channel.
* ``tokens``: a generated text-like task for a transformer encoder: 2,000 sequences of 24 token ids from a
  vocabulary of 64 (id 0 is padding); each holds 3 keyword tokens of its class (4 classes, 3 keywords each) among
  random filler words, and its length varies from 12 to 24.

Faults in the data: ``label_noise`` (a share of the training labels drawn at random), ``rare_class`` (class 0 kept
at a share of its training samples), ``target_scale`` (the regression targets of both channels multiplied: a unit
a thousand times smaller), ``target_nan`` (a share of the training targets NaN).
"""

from __future__ import annotations

import numpy as np

CLASSIFICATION = ("digits", "tabular", "waves", "tokens")
REGRESSION = ("diabetes", "friedman1")
TOKENS_VOCABULARY = 64
TOKENS_LENGTH = 24


def _digits(rng):
    from sklearn.datasets import load_digits

    digits = load_digits()
    return digits.images[:, None].astype(np.float32), digits.target.astype(np.int64)


def _tabular(rng, seed):
    from sklearn.datasets import make_classification

    x, y = make_classification(n_samples=3000, n_features=20, n_informative=10, n_redundant=4, n_classes=4,
                               n_clusters_per_class=2, class_sep=1.5, random_state=seed)
    units = 10.0 ** rng.uniform(-1, 2, x.shape[1])  # each feature in its own unit and offset
    return (x * units + rng.normal(0, 3, x.shape[1]) * units).astype(np.float32), y.astype(np.int64)


def _waves(rng, n=2000, steps=24, channels=3, classes=4):
    y = rng.integers(0, classes, n)
    frequency = (0.2 + 0.2 * y)[:, None, None]
    t = np.arange(steps)[None, :, None]
    phase = rng.uniform(0, 2 * np.pi, (n, 1, channels))
    amplitude = rng.uniform(0.5, 1.5, (n, 1, channels))
    x = amplitude * np.sin(frequency * t + phase) + rng.normal(0, 0.3, (n, steps, channels))
    return x.astype(np.float32), y.astype(np.int64)


def _tokens(rng, n=2000, classes=4, keywords=3):
    y = rng.integers(0, classes, n)
    first_filler = 1 + classes * keywords
    x = rng.integers(first_filler, TOKENS_VOCABULARY, (n, TOKENS_LENGTH))
    lengths = rng.integers(12, TOKENS_LENGTH + 1, n)
    for row in range(n):
        positions = rng.choice(lengths[row], keywords, replace=False)
        x[row, positions] = 1 + y[row] * keywords + rng.integers(0, keywords, keywords)
        x[row, lengths[row]:] = 0
    return x.astype(np.int64), y.astype(np.int64)


def _regression(dataset, seed):
    if dataset == "diabetes":
        from sklearn.datasets import load_diabetes

        x, y = load_diabetes(return_X_y=True, scaled=False)
    else:
        from sklearn.datasets import make_friedman1

        x, y = make_friedman1(n_samples=2000, n_features=10, noise=1.0, random_state=seed)
    return x.astype(np.float32), y.astype(np.float32)


def make_data(dataset: str, seed: int, label_noise: float = 0.0, rare_class: float | None = None,
              target_scale: float | None = None, target_nan: float | None = None):
    """(x_train, y_train, x_held_out, y_held_out): the data set split 80/20 by ``seed``, the faults applied (to the
    training part, but a target scale to both: it is the data's unit)."""
    rng = np.random.default_rng(seed)
    if dataset == "digits":
        x, y = _digits(rng)
    elif dataset == "tabular":
        x, y = _tabular(rng, seed)
    elif dataset == "waves":
        x, y = _waves(rng)
    elif dataset == "tokens":
        x, y = _tokens(rng)
    elif dataset in REGRESSION:
        x, y = _regression(dataset, seed)
    else:
        raise ValueError(f"dataset must be one of {', '.join(CLASSIFICATION + REGRESSION)}; got {dataset!r}")
    order = rng.permutation(len(y))
    cut = int(len(y) * 0.8)
    x_train, y_train, x_held, y_held = x[order[:cut]], y[order[:cut]], x[order[cut:]], y[order[cut:]]
    if dataset in REGRESSION:
        mean, deviation = y_train.mean(), y_train.std()
        y_train, y_held = (y_train - mean) / deviation, (y_held - mean) / deviation
        if target_scale:
            y_train, y_held = y_train * target_scale, y_held * target_scale
        if target_nan:
            y_train = y_train.copy()
            y_train[rng.choice(len(y_train), max(1, int(len(y_train) * target_nan)), replace=False)] = np.nan
        return x_train, y_train.astype(np.float32), x_held, y_held.astype(np.float32)
    x_train, y_train = training_faults(x_train, y_train, rng, int(y.max()) + 1, label_noise, rare_class)
    return x_train, y_train, x_held, y_held


def training_faults(x, y, rng: np.random.Generator, classes: int, label_noise: float = 0.0,
                    rare_class: float | None = None):
    """(x, y) with class 0 kept at ``rare_class`` of its samples (at least one) and ``label_noise`` of the labels
    replaced by labels drawn at random from the ``classes``."""
    if rare_class:
        rare = np.flatnonzero(y == 0)
        keep = np.ones(len(y), bool)
        keep[rare[max(1, int(len(rare) * rare_class)):]] = False
        x, y = x[keep], y[keep]
    if label_noise:
        y = y.copy()
        rows = rng.choice(len(y), int(len(y) * label_noise), replace=False)
        y[rows] = rng.integers(0, classes, len(rows))
    return x, y
