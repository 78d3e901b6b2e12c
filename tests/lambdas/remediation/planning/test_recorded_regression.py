"""The planner on regressions whose targets are wrong (issue 46, gap 2), from real jobs recorded by
``recorded/make_recorded_runs.py`` (the random zoo's MLP regressor on make_friedman1): NaN in the training targets is a
data error that ends the run at once naming the targets, as NaN inputs do; targets a thousand times what the model's
outputs start at get, under SGD, the rate the measured scale implies in one launch, not a halving ladder that stops at
the floor."""

from __future__ import annotations

import pytest

from contracts.rule_status import NAN_TARGET
from lambdas.remediation.planning.planner import plan
from tests.lambdas.remediation.decision_fields import changes_of, ended, facts_of
from tests.lambdas.remediation.recorded_runs import finish, recorded, start


@pytest.mark.parametrize(
    ("name", "step", "count"), [("regression-nan-targets", 0, 4), ("regression-nan-targets-first-at-step-2", 2, 1)]
)
def test_nan_targets_end_the_run_at_once_as_a_data_error_naming_the_targets(account_input, name, step, count):
    """Before: "initial loss nan, initial gradient norm nan" read as an explosion, the rate halved three times. Now the
    gradient's NaN at the step whose batch held NaN targets (step 0, or step 2 after two clean batches) is the data's."""
    run = recorded(name)
    state = finish(start(run, account_input), run["jobs"][0])
    attempt = state.last_attempt
    assert attempt.outcome == "data_error"
    assert (attempt.issue.rule, attempt.issue.kind, attempt.issue.step) == ("ExplodingTensor", NAN_TARGET, step)
    planned = plan(state)
    assert ended(planned.last_attempt.decision) == ("none", "end", "data_error")
    assert len(run["jobs"]) == 1  # the recorded run launched no second job


def test_the_rule_names_the_targets_that_held_nan(account_input):
    job = recorded("regression-nan-targets")["jobs"][0]
    (issue,) = [rule["issue"] for rule in job["rule_status"]["rules"] if rule["issue"]]
    assert issue["message"] == (
        "570 NaN or infinite value(s) in gradient/0.weight at step 0; the targets the training loss read at that step "
        "held 4 NaN or infinite value(s): the data is wrong"
    )


def test_targets_a_thousand_times_the_outputs_scale_get_the_rate_divided_by_that_scale_in_one_launch(account_input):
    """SGD at 0.01 on targets x1000 (an initial loss of 7e5) exploded at step 3. The job measured the targets' root
    mean square (837.7) against the outputs' (0.119, counted as 1): the rate goes to 0.01 / 837.7 = 1.2e-5 at once
    (before: ClipGradients, then halving from 0.01 down to a floor of 1e-4, which never reaches it)."""
    run = recorded("regression-targets-x1000")
    first = run["jobs"][0]
    state = finish(start(run, account_input), first)
    assert state.last_attempt.issue.rule == "ExplodingTensor"
    planned = plan(state)
    decision = planned.last_attempt.decision
    assert (decision.remedy, decision.cause) == ("RateForTargetScale", "ExplodingTensor")
    assert changes_of(decision) == {"lr": (0.01, 1.2e-05)}
    evidence = first["rule_status"]["evidence"]
    scale = evidence["target_rms"] / max(evidence["output_rms"], 1.0)
    assert facts_of(decision)["target_scale_above"] == (pytest.approx(scale, rel=1e-4), 30.0)
    assert facts_of(decision)["hyperparameters_above"] == (0.01, 0.001)
    # the second job ran at that rate (real training): its RMSE came within a tenth of the objective, not to it
    second = run["jobs"][1]
    assert second["hyperparameters"]["lr"] == 1.2e-05


def test_a_rate_already_divided_by_the_targets_scale_is_not_divided_again(account_input):
    """The second recorded job, at 1.2e-5, measured the same scale: RateForTargetScale does not apply to it twice."""
    run = recorded("regression-targets-x1000")
    state = finish(start(run, account_input), run["jobs"][0])
    state = finish(plan(state), run["jobs"][1])
    decision = plan(state).last_attempt.decision
    assert decision.remedy != "RateForTargetScale"
    assert "lr" not in changes_of(decision) or changes_of(decision)["lr"][1] >= 1e-6


def test_the_target_scale_fact_says_the_scale_with_its_numbers(account_input):
    run = recorded("regression-targets-x1000")
    planned = plan(finish(start(run, account_input), run["jobs"][0]))
    assert [fact.test for fact in planned.last_attempt.decision.evidence].count("target_scale_above") == 1
    assert planned.last_attempt.decision.reason.count(
        "the targets' scale (root mean square 837.7) is 837.7 times what the model's outputs start at (0.1186, counted "
        "as at least 1), above 30"
    ) == 1


def test_targets_a_thousand_times_too_large_are_standardised_where_the_script_can_and_the_objective_is_met(account_input):
    """The same run from a script with a --normalize-targets knob (mapped as normalize_targets, off): the planner turns
    it on, and the second job (real training, the same SGD rate of 0.01) met RMSE <= 400 at 254.5: two launches."""
    run = recorded("regression-targets-x1000-normalize-knob")
    state = finish(start(run, account_input), run["jobs"][0])
    planned = plan(state)
    decision = planned.last_attempt.decision
    assert (decision.remedy, decision.cause) == ("NormalizeTargets", "ExplodingTensor")
    assert changes_of(decision) == {"normalize-targets": (0, 1)}
    assert "target_scale_above" in facts_of(decision)
    second = finish(planned, run["jobs"][1])
    assert second.last_attempt.outcome == "completed" and second.next_action == "end"
    assert second.last_attempt.objective_value == pytest.approx(254.4543)
    assert len(run["jobs"]) == 2


def test_after_the_rate_was_divided_by_the_targets_scale_the_rate_range_is_on_that_scale(account_input):
    """The second recorded job, at 1.2e-5, blew up late (its gradient norm 356x its first step's at step 255). The
    rates it is judged in are SGD's divided by the targets' scale (0.01 / 1.2e-5 = 833.3): a tenth of its rate,
    1.2e-6, is within that range, where SGD's own floor (1e-4) refused every lower rate and the run ended."""
    run = recorded("regression-targets-x1000")
    state = finish(start(run, account_input), run["jobs"][0])
    state = finish(plan(state), run["jobs"][1])
    decision = plan(state).last_attempt.decision
    assert (decision.remedy, decision.cause) == ("LowerRateAfterCollapse", "LossNotDecreasing")
    assert changes_of(decision) == {"lr": (1.2e-05, 1.2e-06)}
    assert (
        "Rates judged in SGD's range, divided by the targets' scale 833.3 (usual start 0.00012, out of range above "
        "0.00048, too small below 1.2e-06; the optimizer the job reported)"
    ) in decision.reason
