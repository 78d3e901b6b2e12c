"""The loss's course in a few windows (contracts.loss_history): every step counted once, however long the job, and
the shape the planner reads when a job ended quietly short of its objective."""

from __future__ import annotations

import dataclasses
import math

import pytest

from contracts.loss_history import MAX_LOSS_WINDOWS, LossHistory, LossWindow, loss_shape


def history_of(losses, first_step=0):
    history = LossHistory()
    for offset, loss in enumerate(losses):
        history.add(first_step + offset, loss)
    return history


@pytest.mark.parametrize("steps", [1, 5, 16, 17, 100, 1000, 4097])
def test_every_step_is_counted_once_in_at_most_the_kept_windows_and_the_means_are_exact(steps):
    losses = [math.sin(step) + 2 for step in range(steps)]
    windows = history_of(losses).windows()
    assert len(windows) <= MAX_LOSS_WINDOWS
    assert sum(window.count for window in windows) == steps
    assert windows[0].first_step == 0 and windows[-1].last_step == steps - 1
    position = 0
    for window in windows:  # consecutive, no gap, each window's mean that of its own steps
        assert window.first_step == position
        assert window.mean == pytest.approx(sum(losses[position : position + window.count]) / window.count)
        position += window.count
        assert window.last_step == position - 1
    if steps >= MAX_LOSS_WINDOWS:
        assert len(windows) >= MAX_LOSS_WINDOWS // 2


def test_non_finite_losses_are_left_out():
    windows = history_of([1.0, float("nan"), 3.0, float("inf")]).windows()
    assert sum(window.count for window in windows) == 2
    assert [window.mean for window in windows] == [1.0, 3.0]


def test_a_resumed_history_goes_on_where_the_last_status_left_it():
    full = history_of([1.0 / (1 + step) for step in range(300)])
    first = history_of([1.0 / (1 + step) for step in range(200)])
    resumed = LossHistory.resumed(first.windows())
    for step in range(200, 300):
        resumed.add(step, 1.0 / (1 + step))
    assert sum(window.count for window in resumed.windows()) == 300
    assert len(resumed.windows()) <= MAX_LOSS_WINDOWS
    assert [(w.first_step, w.last_step) for w in resumed.windows()] == [
        (w.first_step, w.last_step) for w in full.windows()
    ]


def noisy(values, amplitude=0.3):
    # minibatch noise of +-30%, alternating, which window means average away
    return [value * (1 + amplitude * (-1) ** step) for step, value in enumerate(values)]


def test_a_loss_that_never_fell_is_flat_however_noisy():
    shape = loss_shape(history_of(noisy([2.3] * 552)).windows())
    assert shape.shape == "flat"
    assert shape.describe().startswith("the training loss fell 0% over steps 0-551")
    assert shape.describe().endswith("it never learned")


def test_a_loss_still_falling_at_the_end_and_one_that_settled():
    falling = loss_shape(history_of(noisy([2.3 * 0.995**step for step in range(300)])).windows())
    assert falling.shape == "still_falling"
    assert "and was still falling: its last quarter was" in falling.describe()
    losses = noisy([0.3 + 2.0 * 0.9**step for step in range(600)])
    settled = loss_shape(history_of(losses).windows(), initial_loss=losses[0])
    assert settled.shape == "settled" and settled.start == losses[0]
    assert settled.describe().endswith("and settled: its last quarter added 0% to that descent")
    assert settled.fell_by > 0.85 and abs(settled.last_quarter_drop) < 0.05


def test_a_fast_first_descent_inside_the_first_window_counts_from_the_first_steps_loss():
    """Learned within the first window, then level: without the first step's loss the first window's mean (1.55)
    hides the descent from 2.3 and the run reads as flat."""
    losses = [2.3 - 0.1 * step for step in range(8)] + [1.5] * 1000
    assert loss_shape(history_of(losses).windows()).shape == "flat"
    assert loss_shape(history_of(losses).windows(), initial_loss=2.3).shape == "settled"


def test_a_converged_loss_near_zero_is_memorised_not_falling_though_it_still_shrinks_by_a_tenth():
    """0.0023 -> 0.002 between the last quarters is 14% of almost nothing: judged as a share of the descent."""
    losses = [2.8 * 0.7**step + 0.002 for step in range(64)] + [0.0025] * 64 + [0.002] * 64
    shape = loss_shape(history_of(losses).windows(), initial_loss=2.8)
    assert shape.shape == "memorised" and shape.last_quarter_drop > 0.1  # more than STILL_FALLING_DROP
    assert shape.describe().endswith(
        "and stopped there (its last quarter added 0% to that descent): the model fits its training set"
    )


def test_a_rising_loss_is_flat_and_says_it_rose():
    shape = loss_shape(history_of([2.8 + 0.001 * step for step in range(200)]).windows(), initial_loss=2.8)
    assert shape.shape == "flat" and " rose " in shape.describe()


def test_too_few_windows_or_no_positive_start_say_nothing():
    assert loss_shape(history_of([2.0, 1.0, 0.5]).windows()) is None
    assert loss_shape([LossWindow(0, 0, 1, 0.0)] * 4) is None


def test_the_windows_carry_the_optimizer_steps_of_their_steps_through_merges_a_resume_and_a_report():
    """Four global steps an optimizer step (accumulation): after every step is named (name_steps, at each report),
    each window's first, last and peak steps carry their optimizer steps, merged windows keep their ends', a report
    read back keeps them, and one without them (an older report) reads as before (decision 205)."""
    history = LossHistory()
    losses = [1.0 + math.sin(step) for step in range(200)]
    for step, loss in enumerate(losses):
        history.add(step, loss)
        if step % 37 == 0:  # a report now and then, as the hook writes them
            history.name_steps(lambda global_step: global_step // 4)
    history.name_steps(lambda global_step: global_step // 4)
    windows = history.windows()
    assert len(windows) > 4
    for window in windows:
        named = (window.first_optimizer_step, window.last_optimizer_step, window.peak_optimizer_step)
        assert named == (window.first_step // 4, window.last_step // 4, window.peak_step // 4)
    read = [LossWindow.from_dict(dataclasses.asdict(window)) for window in windows]
    assert read == windows
    older = {key: value for key, value in dataclasses.asdict(windows[0]).items() if "optimizer" not in key}
    assert LossWindow.from_dict(older).first_optimizer_step is None
    # a resumed job's numbering no longer knows the steps before its restart: the windows keep what they carried
    resumed = LossHistory.resumed(windows)
    resumed.name_steps(lambda global_step: None)
    assert resumed.windows() == windows


def test_a_step_added_to_a_window_is_unnamed_until_the_next_report():
    history = history_of([2.0] * 33)  # 8 windows of 4 steps and a ninth of step 32
    history.name_steps(lambda global_step: global_step // 4)
    for step in (33, 34):
        history.add(step, 3.0)
    window = history.windows()[-1]
    assert (window.first_optimizer_step, window.last_optimizer_step, window.peak_optimizer_step) == (8, None, None)
    assert window.span(with_global=True) == "steps 32-34"  # one end unknown: the global span, not a mix of units


def test_the_loss_shape_names_its_optimizer_steps_and_the_saved_global_steps_once():
    history = history_of(noisy([2.0] * 64, amplitude=0.05))
    history.name_steps(lambda global_step: global_step // 4)
    shape = loss_shape(history.windows())
    assert shape.describe().startswith("the training loss fell 0% over steps 0-15 (saved as global steps 0-63) (")
    assert loss_shape(history_of(noisy([2.0] * 64, amplitude=0.05)).windows()).describe().startswith(
        "the training loss fell 0% over steps 0-63 ("
    )  # an older report: its global steps, as before
