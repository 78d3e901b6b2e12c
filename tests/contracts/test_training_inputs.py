"""Whether a job's training inputs came back unchanged between epochs (contracts.training_inputs): the tally of row
fingerprints the debugger keeps, and how the planner reads its share."""

from __future__ import annotations

import random

import pytest

from contracts.training_inputs import MAX_KEPT, MIN_CHECKED, InputRepeats, inputs_changed


def fingerprints(count: int, seed: int) -> list[int]:
    """Distinct 64-bit signed integers, as Python's hash of a row's bytes gives them."""
    generator = random.Random(seed)
    return [generator.getrandbits(64) - 2**63 for _ in range(count)]


def test_epochs_over_the_same_rows_repeat_all_but_the_first_and_fresh_rows_repeat_none():
    rows = fingerprints(500, seed=1)
    same = InputRepeats()
    for epoch in range(4):
        same.add(random.Random(epoch).sample(rows, len(rows)))  # shuffled each epoch
    assert same.share() == 0.75
    fresh = InputRepeats()
    for epoch in range(4):
        fresh.add(fingerprints(500, seed=10 + epoch))
    assert fresh.share() == 0.0


def test_a_data_set_larger_than_the_kept_fingerprints_is_sampled_and_the_share_still_holds():
    """Four times MAX_KEPT rows, three epochs: the tally keeps at most MAX_KEPT fingerprints (a fixed share of all
    of them, halved as it fills) and still finds two thirds of the rows it checked seen before."""
    rows = fingerprints(4 * MAX_KEPT, seed=2)
    tally = InputRepeats()
    for _ in range(3):
        tally.add(rows)
    assert tally.kept <= MAX_KEPT
    assert tally.share() == pytest.approx(2 / 3, abs=0.02)


def test_too_few_rows_checked_say_nothing():
    tally = InputRepeats()
    tally.add(fingerprints(MIN_CHECKED - 1, seed=3))
    assert tally.share() is None


@pytest.mark.parametrize(
    ("share", "epochs", "changed"),
    [
        (0.0, 12, True),  # augmented: nothing came back in 12 epochs
        (0.1, 3, True),
        (0.67, 3, False),  # three epochs over the same rows
        (0.5, 2, False),
        (0.0, 2, False),  # a short job repeats too little to tell
        (0.0, None, True),  # epochs unknown: not read as clean
        (None, 12, False),  # the debugger saw no inputs
    ],
)
def test_inputs_are_read_as_changed_only_when_few_came_back_over_enough_epochs(share, epochs, changed):
    assert inputs_changed(share, epochs) is changed
