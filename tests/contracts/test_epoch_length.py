"""Steps per epoch read in the unit the job's counts show (contracts.epoch_length, decision 206): a completed epoch's
batches and optimizer steps decide; before one completes, a steady accumulation ratio and a stated number that is a
multiple of it; otherwise the number as stated."""

from __future__ import annotations

import pytest

from contracts.epoch_length import BATCHES, OPTIMIZER_STEPS, EpochCounts, EpochLength, read_epoch_length

NOTHING_YET = EpochCounts(0, 0)


def test_a_completed_epoch_whose_batches_match_the_number_reads_it_as_batches():
    completed = EpochCounts(optimizer_steps=25, batches=100, fewest_batches=4, most_batches=4)
    assert read_epoch_length(100, completed, NOTHING_YET) == EpochLength(
        25, BATCHES, "a completed epoch trained 100 batches in 25 optimizer steps", 4
    )
    # the number in optimizer steps: confirmed by the same counts
    assert read_epoch_length(25, completed, NOTHING_YET) == EpochLength(
        25, OPTIMIZER_STEPS, "a completed epoch trained 100 batches in 25 optimizer steps"
    )
    # a last partial accumulation: 101 batches, 26 updates (the last of one batch)
    uneven = EpochCounts(optimizer_steps=26, batches=101, fewest_batches=1, most_batches=4)
    assert read_epoch_length(101, uneven, NOTHING_YET).steps == 26
    # neither count: the script means something else; as stated
    assert read_epoch_length(60, completed, NOTHING_YET) == EpochLength(60, OPTIMIZER_STEPS)


@pytest.mark.parametrize("completed", [EpochCounts(100, 100, 1, 1), EpochCounts(0, 0)])
def test_an_epoch_without_accumulation_says_nothing_of_the_unit(completed):
    assert read_epoch_length(100, completed, NOTHING_YET) == EpochLength(100, OPTIMIZER_STEPS)


def test_before_an_epoch_completes_a_steady_ratio_reads_a_multiple_of_it_as_batches():
    so_far = EpochCounts(optimizer_steps=15, batches=60, fewest_batches=4, most_batches=4)
    assert read_epoch_length(100, None, so_far) == EpochLength(
        25, BATCHES, "every one of the job's 15 optimizer steps so far took 4 batches", 4
    )
    assert read_epoch_length(25, None, so_far) == EpochLength(25, OPTIMIZER_STEPS)  # not a multiple of 4
    # a multiple the first epoch has already outrun: 15 optimizer steps are no epoch of 96 / 4 = 24... yet
    assert read_epoch_length(96, None, so_far).unit == BATCHES
    assert read_epoch_length(48, None, so_far) == EpochLength(48, OPTIMIZER_STEPS)  # 15 updates past 48 / 4 = 12


@pytest.mark.parametrize(
    "so_far",
    [
        EpochCounts(15, 15, 1, 1),  # no accumulation (or LBFGS: a closure's evaluations are one batch)
        EpochCounts(15, 50, 2, 4),  # uneven: no ratio to trust
        EpochCounts(1, 4, 4, 4),  # a single optimizer step
        EpochCounts(0, 3),  # none yet
    ],
)
def test_no_steady_ratio_keeps_the_number_as_stated(so_far):
    assert read_epoch_length(100, None, so_far) == EpochLength(100, OPTIMIZER_STEPS)
