"""Whether a job can still reach its objective, judged on real jobs' held-out accuracy, one value per epoch (jobs of
the random zoo's development seeds, bench/zoo_random.py; the run and job are named with each course)."""

from __future__ import annotations

import pytest

from contracts.objective import Objective
from contracts.objective_reach import judge_reach


def first_out_of_reach(objective: Objective, values: list[float], planned: int) -> int | None:
    """The report after which the job would have been stopped (None: never), judged after each as the rule does."""
    for reports in range(1, len(values) + 1):
        reach = judge_reach(objective, values[:reports], planned)
        if reach is not None and reach.out_of_reach:
            return reports
    return None


ACCURACY_08 = Objective("validation:accuracy", "Maximize", 0.8)
ACCURACY_09 = Objective("validation:accuracy", "Maximize", 0.9)


def test_a_stalled_job_far_from_its_objective_is_out_of_reach_once_a_third_of_its_epochs_are_judged():
    # seed 40, configuration 1, job 1: the logline script on raw tabular inputs (recorded: logline-raw-inputs-out-of-reach)
    raw_inputs = [0.48, 0.565, 0.525, 0.5217, 0.5283, 0.53, 0.54]
    assert first_out_of_reach(ACCURACY_08, raw_inputs, 12) == 5
    reach = judge_reach(ACCURACY_08, raw_inputs[:5], 12)
    assert reach.best == 0.565 and reach.rate == 0 and reach.projected == pytest.approx(0.582, abs=5e-4)
    assert reach.describe(ACCURACY_08) == (
        "validation:accuracy was at best 0.565 after 5 of 12 epochs, no longer improving (noise 0.017); in the 7 "
        "epochs left it reaches at most 0.582, short of validation:accuracy >= 0.8"
    )


def test_jobs_that_met_their_objective_at_the_end_are_never_judged_out_of_reach():
    # seed 23, configuration 36, job 1: a slow creep, 0.9 reached at epoch 10 of 12
    creep = [0.847, 0.858, 0.875, 0.875, 0.867, 0.878, 0.872, 0.881, 0.886, 0.9, 0.914, 0.933]
    # seed 32, configuration 19, job 3: a noisy plateau that met 0.8 at its last epoch of 8
    plateau = [0.717, 0.752, 0.762, 0.768, 0.692, 0.76, 0.762, 0.8]
    # seed 25, configuration 32, job 1: 0.9 reached at epoch 10 of 12 by 0.003 an epoch
    slow = [0.839, 0.844, 0.861, 0.856, 0.858, 0.864, 0.889, 0.889, 0.892, 0.9, 0.903, 0.908]
    assert first_out_of_reach(ACCURACY_09, creep, 12) is None
    assert first_out_of_reach(ACCURACY_08, plateau, 8) is None
    assert first_out_of_reach(ACCURACY_09, slow, 12) is None


def test_a_near_miss_is_never_judged_so_a_late_climb_is_not_stopped():
    """A metric stalled a few points short can climb again, which no trend foresees: a rare class learned late."""
    # report seed 1030, configuration 7, job 1: 2% of one digit's training labels kept; flat at 0.86-0.87 for six
    # epochs, then 0.9333 at epoch 12. Without the near-miss allowance it was stopped after epoch 6.
    rare_class = [0.825, 0.8611, 0.8667, 0.8694, 0.8611, 0.8639, 0.8583, 0.8806, 0.8889, 0.9028, 0.9139, 0.9333]
    assert first_out_of_reach(ACCURACY_09, rare_class, 12) is None
    reach = judge_reach(ACCURACY_09, rare_class[:6], 12)
    assert reach.near_miss and not reach.out_of_reach
    assert reach.projected < 0.9  # the trend alone would have said out of reach
    # the same course against 0.95 is judged after epoch 5: its best, 0.8694, is more than 5% short
    assert first_out_of_reach(Objective("validation:accuracy", "Maximize", 0.95), rare_class, 12) == 5


def test_a_course_still_climbing_fast_enough_is_within_reach():
    # seed 40, configuration 2, job 2: 40% wrong labels on the robust loss, still rising at its last epoch (0.8056)
    rising = [0.2306, 0.3389, 0.4694, 0.5694, 0.6083, 0.6472, 0.6806, 0.7333]
    reach = judge_reach(ACCURACY_09, rising, 12)
    assert reach is not None and not reach.out_of_reach and reach.projected > 0.9


def test_what_is_not_judged():
    assert judge_reach(ACCURACY_09, [0.3, 0.3, 0.3], 12) is None  # fewer than four reports
    assert judge_reach(ACCURACY_09, [0.3, 0.3, 0.3, 0.3], 24) is None  # before a third of its epochs
    assert judge_reach(ACCURACY_09, [0.3] * 12, 12) is None  # at its last epoch it has ended
    assert judge_reach(ACCURACY_09, [0.3, 0.95, 0.3, 0.3, 0.3], 12) is None  # it met the objective once
    assert judge_reach(ACCURACY_09, [0.3, float("nan"), 0.3, 0.3, 0.3], 12) is None
    assert judge_reach(ACCURACY_09, [0.3] * 5, 0) is None


def test_a_loss_to_minimise_is_judged_the_same_way():
    loss = Objective("validation:loss", "Minimize", 0.1)
    stuck = [1.2, 1.0, 0.95, 0.96, 0.95, 0.94]
    reach = judge_reach(loss, stuck, 12)
    assert reach.out_of_reach and reach.best == 0.94 and 0.1 < reach.projected < reach.best  # the most it can fall
    assert "short of validation:loss <= 0.1" in reach.describe(loss)
    assert not judge_reach(loss, [1.2, 0.8, 0.5, 0.3, 0.2], 12).out_of_reach
