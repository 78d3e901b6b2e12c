"""Whether a job can still reach its objective, judged on real jobs' held-out metric, one value per epoch (jobs of
the random zoo's development seeds, bench/zoo_random.py, named with each course; and whole courses recorded by
reach_courses/make_reach_courses.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contracts.objective import Objective, recent_reports
from contracts.objective_reach import RATE_FACTOR, first_judged_report, judge_reach, robust_line

COURSES = Path(__file__).resolve().parent / "reach_courses"


def course(name: str) -> tuple[Objective, list[float], int]:
    recorded = json.loads((COURSES / f"{name}.json").read_text())
    return Objective.from_json(recorded["objective"]), recorded["values"], recorded["planned_epochs"]


def first_out_of_reach(objective: Objective, values: list[float], planned: int) -> int | None:
    """The report after which the job would have been stopped (None: never), judged after each as the rule does."""
    for reports in range(1, len(values) + 1):
        reach = judge_reach(objective, values[:reports], planned)
        if reach is not None and reach.out_of_reach:
            return reports
    return None


ACCURACY_08 = Objective("validation:accuracy", "Maximize", 0.8)
ACCURACY_09 = Objective("validation:accuracy", "Maximize", 0.9)


def test_a_stalled_job_far_from_its_objective_is_out_of_reach_once_it_is_judged():
    # seed 40, configuration 1, job 1: the logline script on raw tabular inputs (recorded: logline-raw-inputs-out-of-reach)
    raw_inputs = [0.48, 0.565, 0.525, 0.5217, 0.5283, 0.53, 0.54, 0.535]
    first = first_judged_report(12)
    assert first_out_of_reach(ACCURACY_08, raw_inputs, 12) == first
    reach = judge_reach(ACCURACY_08, raw_inputs[:first], 12)
    assert reach.best == 0.565 and reach.out_of_reach and not reach.capped
    assert reach.describe(ACCURACY_08) == (
        "validation:accuracy was at best 0.565 after 6 of 12 epochs, improving 0.017 an epoch on average since its "
        "first report (noise 4.94e-05); at 2 times that rate for the 6 epochs left it reaches at most 0.769, short of "
        "validation:accuracy >= 0.8"
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
    # the same course against 0.95 is judged out of reach after epoch 7: its best, 0.8694, is more than 5% short
    assert first_out_of_reach(Objective("validation:accuracy", "Maximize", 0.95), rare_class, 12) == 7


def test_a_course_still_climbing_fast_enough_is_within_reach():
    # seed 40, configuration 2, job 2: 40% wrong labels on the robust loss, still rising at its last epoch (0.8056)
    rising = [0.2306, 0.3389, 0.4694, 0.5694, 0.6083, 0.6472, 0.6806, 0.7333]
    reach = judge_reach(ACCURACY_09, rising, 12)
    assert reach is not None and not reach.out_of_reach and reach.projected > 0.9


def test_what_is_not_judged():
    assert judge_reach(ACCURACY_09, [0.3, 0.3, 0.3], 6) is None  # fewer than four reports
    assert judge_reach(ACCURACY_09, [0.3] * 5, 12) is None  # before half its epochs
    assert judge_reach(ACCURACY_09, [0.3] * 6, 12).out_of_reach  # from half its epochs on
    assert judge_reach(ACCURACY_09, [0.3] * 12, 12) is None  # at its last epoch it has ended
    assert judge_reach(ACCURACY_09, [0.3, 0.95, 0.3, 0.3, 0.3, 0.3], 12) is None  # it met the objective once
    assert judge_reach(ACCURACY_09, [0.3, float("nan"), 0.3, 0.3, 0.3, 0.3], 12) is None
    assert judge_reach(ACCURACY_09, [0.3] * 6, 0) is None


def test_a_loss_to_minimise_is_judged_the_same_way():
    loss = Objective("validation:loss", "Minimize", 0.1)
    stuck = [1.2, 1.0, 0.95, 0.96, 0.95, 0.94]
    reach = judge_reach(loss, stuck, 12)
    assert reach.out_of_reach and reach.best == 0.94 and 0.1 < reach.projected < reach.best  # the most it can fall
    assert reach.describe(loss) == (
        "validation:loss was at best 0.94 after 6 of 12 epochs, improving 0.052 an epoch on average since its first "
        "report (noise 0.00494); at 2 times that rate for the 6 epochs left it falls to no less than 0.3111, short of "
        "validation:loss <= 0.1"
    )
    falling = judge_reach(loss, [1.2, 0.8, 0.5, 0.3, 0.2, 0.15], 12)
    assert not falling.out_of_reach and falling.projected == 0.0 and falling.capped  # a loss cannot fall below 0


def test_a_flat_spiky_rmse_is_out_of_reach_and_never_projected_below_zero():
    """A real regression whose held-out RMSE stays near 0.96 with spikes to 1.26 against RMSE <= 0.40: the spikes
    widen neither its noise nor its rate, so it is stopped at its first judged epoch; no projection passes 0."""
    objective, values, planned = course("regression-rmse-spiky-flat")
    assert (objective.type, objective.target_value, planned, max(values) > 1.25) == ("Minimize", 0.4, 40, True)
    first = first_judged_report(planned)
    assert first_out_of_reach(objective, values, planned) == first == 20
    for reports in range(first, planned):
        reach = judge_reach(objective, values[:reports], planned)
        assert reach.out_of_reach and 0.0 <= reach.projected < reach.best
    assert judge_reach(objective, values[:first], planned).describe(objective) == (
        "validation:rmse was at best 0.9673 after 20 of 40 epochs, improving 0.00548 an epoch on average since its "
        "first report (noise 0.0526); at 2 times that rate for the 20 epochs left it falls to no less than 0.6956, "
        "short of validation:rmse <= 0.4"
    )


@pytest.mark.parametrize("name", ["tanh-adam-plateau-then-climb", "tanh-adam-slow-climb"])
def test_a_healthy_course_that_stalls_or_slows_before_it_meets_the_objective_is_never_stopped(name):
    """Two real tanh MLPs under Adam at 0.002 that meet accuracy >= 0.8 late: one stalls at 0.74 from epoch 3 to 7
    before it climbs, one climbs ever slower. The pace its best kept on average keeps both far from being judged."""
    objective, values, planned = course(name)
    assert objective.met(values[-1]) and not objective.met(values[planned // 2 - 1])
    assert first_out_of_reach(objective, values, planned) is None
    for reports in range(first_judged_report(planned), planned):
        reach = judge_reach(objective, values[:reports], planned)
        assert reach is None or reach.near_miss or reach.projected >= 1.0  # None: met; 1: an accuracy's bound


def test_on_a_plateau_its_recent_rate_alone_would_have_come_close_to_stopping_it():
    """What the average pace adds: after epoch 7 of the plateau, the recent rate projects 0.81 against 0.8."""
    objective, values, planned = course("tanh-adam-plateau-then-climb")
    reach = judge_reach(objective, values[:7], planned)
    assert reach.pace == "average" and reach.rate == pytest.approx((0.745 - 0.5317) / 6)
    slope, noise, error = robust_line(recent_reports(values[:7]))
    recent_only = reach.best + RATE_FACTOR * (slope + error) * (planned - 7) + noise
    assert 0.8 < recent_only < 0.82
