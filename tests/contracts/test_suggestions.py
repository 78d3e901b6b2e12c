"""A mistyped name gets the nearest allowed one suggested, and only a near one."""

from __future__ import annotations

import pytest

from contracts.suggestions import did_you_mean, nearest

KEYS = ("hyperparameters", "hyperparameter_names", "learning_rate", "init_warmup_learning_rate", "num_epochs")


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("hyperparamters", "hyperparameters"),  # a letter left out
        ("hyperparameter", "hyperparameters"),
        ("Learning-Rate", "learning_rate"),  # case and '-' for '_' aside
        ("num_epoch", "num_epochs"),
        ("topic_arn", None),  # nothing near: no guess
        ("", None),
        (3, None),
    ],
)
def test_the_nearest_allowed_name(given, expected):
    assert nearest(given, KEYS) == expected


def test_the_suggestion_reads_as_a_question_and_is_left_out_when_nothing_is_near():
    assert did_you_mean("hyperparamters", KEYS) == " (did you mean 'hyperparameters'?)"
    assert did_you_mean("topic_arn", KEYS) == ""
