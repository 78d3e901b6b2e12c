import math

import pytest

from contracts import ContractError
from contracts.objective import Objective


def test_maximize_and_minimize_objectives_judge_a_value_and_the_shortfall():
    accuracy = Objective.from_json({"metric_name": "test:accuracy", "type": "Maximize", "target_value": 0.9})
    assert accuracy.describe() == "test:accuracy >= 0.9"
    assert accuracy.met(0.9) and not accuracy.met(0.48)
    assert accuracy.shortfall(0.48) == pytest.approx(0.42) and accuracy.shortfall(0.95) == 0
    loss = Objective.from_json({"metric_name": "val_loss", "type": "Minimize", "target_value": 0.2})
    assert loss.describe() == "val_loss <= 0.2"
    assert loss.met(0.1) and not loss.met(0.3) and loss.shortfall(0.3) == pytest.approx(0.1)
    assert not loss.met(math.nan) and not loss.met(None) and loss.shortfall(math.inf) == math.inf
    assert Objective.from_json(accuracy.to_json()) == accuracy


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ("acc>=0.9", "objective"),
        ({"metric_name": "", "type": "Maximize", "target_value": 1}, "objective.metric_name"),
        ({"metric_name": "a", "type": "maximize", "target_value": 1}, "objective.type"),
        ({"metric_name": "a", "type": "Maximize", "target_value": True}, "objective.target_value"),
        ({"metric_name": "a", "type": "Maximize", "target_value": float("inf")}, "objective.target_value"),
        ({"metric_name": "a", "type": "Maximize"}, "objective.target_value"),
        ({"metric_name": "a", "type": "Maximize", "target_value": 1, "goal": 2}, "objective.goal"),
        ({"metric_name": "a", "type": "Maximize", "target_value": 1, "bound": "1"}, "objective.bound"),
    ],
)
def test_a_bad_objective_names_the_field(value, field):
    with pytest.raises(ContractError) as caught:
        Objective.from_json(value)
    assert caught.value.field == field


@pytest.mark.parametrize(
    ("name", "kind", "target", "values", "bound"),
    [
        ("validation:rmse", "Minimize", 0.4, (), 0.0),  # an error cannot fall below 0
        ("val_mae", "Minimize", 2.5, (), 0.0),
        ("test:loss", "Minimize", 0.1, (), 0.0),
        ("validation:accuracy", "Maximize", 0.9, (0.5, 0.7), 1.0),  # a share cannot rise above 1 ...
        ("valAcc", "Maximize", 90, (55.0,), 100.0),  # ... or above 100 when written in percent
        ("eval_f1", "Maximize", 0.8, (), 1.0),
        ("validation:accuracy", "Maximize", 0.9, (1.7,), 100.0),
        ("reward", "Maximize", 200, (), None),  # a name that says nothing: no bound
        ("validation:r2", "Maximize", 0.8, (), None),
        ("validation:accuracy", "Minimize", 0.1, (), None),  # an accuracy minimised is no share we know
        ("log_likelihood", "Maximize", -1.0, (), None),
        ("validation:loss", "Minimize", -2.0, (), None),  # a loss below 0 (a negative log-likelihood bonus): unsure
    ],
)
def test_a_metric_name_gives_its_bound_conservatively(name, kind, target, values, bound):
    assert Objective(name, kind, target).bound_for(values) == bound


def test_the_run_spec_states_a_bound_where_the_name_says_nothing():
    declared = Objective.from_json({"metric_name": "validation:r2", "type": "Maximize", "target_value": 0.8, "bound": 1})
    assert declared.bound_for() == 1.0 and declared.to_json()["bound"] == 1.0
    with pytest.raises(ContractError) as caught:
        Objective.from_json({"metric_name": "validation:rmse", "type": "Minimize", "target_value": 0.4, "bound": 0.5})
    assert (caught.value.field, caught.value.problem) == (
        "objective.bound",
        "is the value validation:rmse cannot go below; the target 0.4 is beyond it (got bound 0.5)",
    )
    assert "bound" not in Objective("validation:rmse", "Minimize", 0.4).to_json()


def test_the_objectives_course_finds_its_best_report_and_whether_it_was_met_before_the_end():
    from contracts.objective import ObjectiveCourse

    accuracy = Objective("validation:accuracy", "Maximize", 0.9)
    course = ObjectiveCourse.of(accuracy, [0.62, 0.76, 0.95, 0.95, 0.86, 0.81])
    assert (course.reports, course.best_report, course.best_value, course.last_value) == (6, 3, 0.95, 0.81)  # earliest
    assert course.met_before_end(accuracy)
    assert not ObjectiveCourse.of(accuracy, [0.5, 0.89, 0.8]).met_before_end(accuracy)  # never met
    assert not ObjectiveCourse.of(accuracy, [0.5, 0.95, 0.92]).met_before_end(accuracy)  # met at the end too
    assert not ObjectiveCourse.of(accuracy, [0.5, 0.95]).met_before_end(accuracy)  # best at the end
    loss = Objective("val_loss", "Minimize", 0.2)
    assert ObjectiveCourse.of(loss, [0.9, 0.15, 0.3]).best_report == 2 and ObjectiveCourse.of(loss, [0.9, 0.15, 0.3]).met_before_end(loss)
    assert ObjectiveCourse.of(accuracy, []) is None and ObjectiveCourse.of(accuracy, None) is None
    assert ObjectiveCourse.of(accuracy, [0.5, math.nan]) is None and ObjectiveCourse.of(accuracy, [0.5, None]) is None


def test_a_course_is_past_its_peak_when_its_last_third_gave_back_a_quarter_of_its_gain():
    from contracts.objective import ObjectiveCourse

    accuracy = Objective("validation:accuracy", "Maximize", 0.9)
    # the recorded noisy-labels run (tests/lambdas/remediation/recorded/logline-noisy-labels-falling-held-out.json)
    noisy = [0.7639, 0.8528, 0.8889, 0.8833, 0.8778, 0.8944, 0.8389, 0.8722, 0.8417, 0.7972, 0.7222, 0.8222]
    course = ObjectiveCourse.of(accuracy, noisy)
    assert course.first_value == 0.7639 and course.late_mean == pytest.approx(0.795825)
    assert course.past_peak(accuracy)
    assert not ObjectiveCourse.of(accuracy, [0.5, 0.9, 0.94, 0.95, 0.94, 0.945]).past_peak(accuracy)  # a plateau
    assert not ObjectiveCourse.of(accuracy, [0.5, 0.6, 0.7, 0.75, 0.85, 0.5]).past_peak(accuracy)  # best in the last third
    assert not ObjectiveCourse.of(accuracy, [0.9, 0.5, 0.4]).past_peak(accuracy)  # too short to have a peak
    assert not ObjectiveCourse.of(accuracy, [0.9, 0.8, 0.7, 0.6, 0.5, 0.4]).past_peak(accuracy)  # never gained
    loss = Objective("val_loss", "Minimize", 0.1)
    assert ObjectiveCourse.of(loss, [1.0, 0.4, 0.3, 0.5, 0.6, 0.7]).past_peak(loss)
    recorded_before = ObjectiveCourse(reports=12, best_report=6, best_value=0.8944, last_value=0.8222)
    assert not recorded_before.past_peak(accuracy)  # a payload from before the course kept these numbers


def test_a_course_still_rising_improved_by_more_than_its_noise_at_its_end():
    from contracts.objective import ObjectiveCourse

    accuracy = Objective("validation:accuracy", "Maximize", 0.9)
    # a real job: the logline script on tabular data with 40% wrong labels, on the debugger's robust loss (random zoo,
    # development seed 40, configuration 2, job 2)
    rising = [0.2306, 0.3389, 0.4694, 0.5694, 0.6083, 0.6472, 0.6806, 0.7333, 0.7667, 0.7833, 0.8, 0.8056]
    assert ObjectiveCourse.of(accuracy, rising).still_rising(accuracy)
    noisy = [0.7639, 0.8528, 0.8889, 0.8833, 0.8778, 0.8944, 0.8389, 0.8722, 0.8417, 0.7972, 0.7222, 0.8222]
    assert not ObjectiveCourse.of(accuracy, noisy).still_rising(accuracy)  # best after epoch 6
    # a real job stopped one epoch after its best while it still rose (development seed 23, configuration 35, job 2:
    # a rare class weighted in the loss; ObjectiveOutOfReach: "improving 0.0111 an epoch lately (noise 0.0127)")
    stopped = [0.3517, 0.4917, 0.605, 0.65, 0.695, 0.7083, 0.7333, 0.755, 0.7417, 0.76, 0.7517]
    course = ObjectiveCourse.of(accuracy, stopped)
    assert course.best_report == 10 and course.still_rising(accuracy)
    assert course.recent_slope == pytest.approx(0.0081, abs=1e-4) and course.recent_noise == pytest.approx(0.0127, abs=1e-4)
    # ... but not one that fell below its best by more than its noise, nor a flat one whose last report is its best
    assert not ObjectiveCourse.of(accuracy, [*stopped[:-1], 0.72]).still_rising(accuracy)
    flat = [0.245, 0.245, 0.2417, 0.25]  # a real job too (development seed 41, configuration 35: init scale)
    assert ObjectiveCourse.of(accuracy, flat).best_report == 4 and not ObjectiveCourse.of(accuracy, flat).still_rising(accuracy)
    assert not ObjectiveCourse.of(accuracy, [0.5, 0.6, 0.7]).still_rising(accuracy)  # too short to tell
    assert not ObjectiveCourse.of(accuracy, [0.5, 0.5, 0.5, 0.5]).still_rising(accuracy)  # never gained
    loss = Objective("val_loss", "Minimize", 0.1)
    assert ObjectiveCourse.of(loss, [1.0, 0.6, 0.5, 0.4]).still_rising(loss)  # a loss still falling improves
    assert not ObjectiveCourse(reports=12, best_report=12, best_value=0.8, last_value=0.8).still_rising(accuracy)
