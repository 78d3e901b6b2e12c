"""The planner on runs that diverged without a NaN (issue 46, gap 1), from real trajectories recorded by
``recorded/make_recorded_runs.py``: a loss that rose far above its first step after a rate was raised, and a GRU whose
gradient norm spiked. A rise or a spike is answered by a lower rate or clipping, never by more epochs; the decision's
evidence names the divergence with its numbers."""

from __future__ import annotations

import pytest

from lambdas.remediation.planning.planner import plan
from tests.lambdas.remediation.decision_fields import changes_of, facts_of
from tests.lambdas.remediation.recorded_runs import finish, recorded, start, without_optimizer

MLP_NAMES = {"learning_rate": "lr", "num_epochs": "epochs"}


def _rate_raised_job(account_input, job_transform=lambda job: job):
    """The second job of the recorded run (Adam at 0.1 after 1e-5) as the first job of a run on the evidence set."""
    run = recorded("mlp-adam-rate-raised-loss-rising")
    job = job_transform(run["jobs"][1])
    spec = {key: value for key, value in run["run_spec"].items() if key != "remedies"}
    spec = {**spec, "hyperparameters": job["hyperparameters"], "hyperparameter_names": MLP_NAMES}
    state = finish(start({**run, "run_spec": spec}, account_input), job)
    assert state.last_attempt.outcome == "objective_missed"
    assert {status.status for status in state.last_attempt.rule_statuses} == {"NoIssuesFound"}
    return job, plan(state)


def test_a_loss_that_rose_after_the_rate_was_raised_gets_a_lower_rate_not_more_epochs(account_input):
    """Every rule was quiet; the loss's windows rose to 4.7x its first step's within 8 steps and ended 1.6x above it
    (accuracy 0.85 against 0.9). Before: "it never learned ... num_epochs 2 is below 3", four times the epochs. Now: the
    divergence, and the rate below the one it diverged at. The job ran Adam: 0.1 is far above Adam's range, so the
    rate goes to Adam's usual start, the divergence named."""
    job, planned = _rate_raised_job(account_input)
    decision = planned.last_attempt.decision
    assert (decision.remedy, decision.cause) == ("LowerRateOnDivergence", "objective_missed")
    assert changes_of(decision) == {"lr": (0.1, 0.001)}
    evidence = job["rule_status"]["evidence"]
    rise, found = facts_of(decision)["diverged"], evidence["loss_divergence"]  # what the job's debugger read
    assert rise == ("rising", pytest.approx(found["level"] / found["early"], rel=1e-3))
    assert planned.run_spec.hyperparameters["epochs"] == 2


def test_a_rise_at_a_rate_inside_the_range_gets_a_tenth_of_it_not_more_epochs(account_input):
    """The same job from a debugger that does not report the optimizer: its rate, 0.1, is SGD's usual start, so no
    rate is out of range. The loss course alone said 'flat: never learned' and sent 4x the epochs; the divergence
    sends a tenth of the rate."""
    job, planned = _rate_raised_job(account_input, without_optimizer)
    decision = planned.last_attempt.decision
    assert decision.remedy == "LowerRateOnDivergence"
    assert changes_of(decision) == {"lr": (0.1, 0.01)}
    assert "diverged" in facts_of(decision)
    assert planned.run_spec.hyperparameters["epochs"] == 2


def test_a_loss_that_rose_and_came_back_below_its_start_is_no_divergence(account_input):
    """The recorded twin whose loss rose to 4.4x its first step and recovered (0.54x at the end, accuracy 0.91):
    no divergence is read from it."""
    from lambdas.remediation.planning.situation import situation_of
    from tests.lambdas.remediation.recorded_runs import finish as finish_job

    run = recorded("logline-adam-rate-raised-recovers")
    job = run["jobs"][1]
    spec = {key: value for key, value in run["run_spec"].items() if key != "remedies"}
    state = finish_job(start({**run, "run_spec": {**spec, "hyperparameters": job["hyperparameters"]}}, account_input), job)
    situation = situation_of(state.last_attempt)
    assert situation.loss_divergence is None and situation.gradient_norm_divergence is None


def test_a_recurrent_network_whose_gradient_spiked_gets_a_lower_rate_and_the_reason_names_the_spike(account_input):
    """The GRU under SGD at a rate of 2: LossNotDecreasing found the loss rising at step 40; the gradient norm had
    spiked to 824 from 0.216. The rate, above SGD's range, goes to its usual start; the decision's evidence names the
    loss's rise and the gradient norm's spike with their numbers."""
    run = recorded("gru-sgd-lr-2-gradient-spikes")
    state = finish(start(run, account_input), run["jobs"][0])
    assert (state.last_attempt.issue.rule, state.last_attempt.issue.kind) == ("LossNotDecreasing", "rising")
    planned = plan(state)
    decision = planned.last_attempt.decision
    assert (decision.remedy, decision.cause) == ("LowerRateOnDivergence", "LossNotDecreasing")
    assert changes_of(decision) == {"lr": (2.0, 0.1)}
    evidence = run["jobs"][0]["rule_status"]["evidence"]
    tests = [fact.test for fact in decision.evidence]
    assert tests.count("diverged") >= 1
    spike = evidence["gradient_norm_peak"]["value"] / evidence["initial_gradient_norm"]
    assert spike > 1000
    text = planned.last_attempt.decision.reason
    assert "gradient norm spiked to 824.5" in text or "loss rose to" in text


def test_spikes_are_clipped_at_twice_the_gradient_norms_own_typical_size(account_input):
    """The regression on targets x1000, its second job at SGD 1.2e-5 (the rate its targets' scale implies): the gradient
    norm started at 1065 and spiked 356 times that. A fixed total norm of 1 would cut every step of this network a
    thousandfold; the threshold is twice the size the norm kept before it spiked, measured in the job, and carried in
    the attempt's evidence, the decision and the next launch's settings. (The run keeps its rate fixed: on the
    targets' scale a tenth of the rate is in range, decision 210, and the collapse's lower rate would come first.)"""
    from contracts.divergence import typical_before_spike
    from contracts.loss_history import LossWindow
    from lambdas.remediation.state.product_changes import product_changes

    run = recorded("regression-targets-x1000")
    first = finish(start(run, account_input), run["jobs"][0])
    assert plan(first).last_attempt.decision.remedy == "RateForTargetScale"
    # the rate the targets' scale implies, kept from there on (a user's fixed_hyperparameters, as the test sets it)
    state = finish(plan(first).model_copy(update={"fixed_hyperparameters": ["lr"]}), run["jobs"][1])
    evidence = run["jobs"][1]["rule_status"]["evidence"]
    windows = [LossWindow.from_dict(window) for window in evidence["gradient_norm_windows"]]
    typical = typical_before_spike(windows, evidence["initial_gradient_norm"])
    assert state.last_attempt.evidence.gradient_norm_typical == pytest.approx(typical)
    planned = plan(state)
    decision = planned.last_attempt.decision
    assert decision.remedy == "ClipGradientsOnSpikes"
    assert changes_of(decision) == {"grad-clip": (0.0, float(f"{2 * typical:.2g}"))}
    assert changes_of(decision)["grad-clip"][1] > 1000 * 1.0  # not the fixed 1.0 of before
    launched = planned.with_new_attempt("remediation-job-3")
    assert product_changes(launched)["grad-clip"].after == float(f"{2 * typical:.2g}")  # what the launch "ran with"


def _planned_after_the_lowered_rate(name, account_input):
    """A recorded run whose job 1 blew up and whose job 2 ran at the rate LowerRateOnDivergence set: the run and the
    state planned after job 2."""
    run = recorded(name)
    state = plan(finish(start(run, account_input), run["jobs"][0]))
    assert state.last_attempt.decision.remedy == "LowerRateOnDivergence"
    return run, plan(finish(state, run["jobs"][1]))


def test_a_rate_lowered_after_a_divergence_at_which_the_network_learned_nothing_is_lowered_again(account_input):
    """An LSTM under RMSprop at 0.05, ten times its usual rate (decision 208): job 1's loss rose and came back above its
    start, at chance; LowerRateOnDivergence set RMSprop's usual 0.01, and job 2 learned nothing (its loss stayed at its
    start, 4 classes at about guessing's 0.262), a point lower than job 1 within chance. Before: job 2 read as worse,
    the rate not lowered again, no remedy left. Now neither is worse, the rate is lowered again below the one that
    blew up, and the recorded job 3 at 0.001 meets the objective."""
    run, state = _planned_after_the_lowered_rate("lstm-rmsprop-rate-lowered-learned-nothing", account_input)
    third = run["jobs"][2]
    decision = state.last_attempt.decision
    assert state.last_attempt.objective_value < state.attempts[0].objective_value  # lower, and not read as worse
    assert (decision.remedy, decision.cause) == ("LowerRateLearnedNothing", "objective_missed")
    assert decision.resume_from is None and changes_of(decision) == {"lr": (0.01, 0.001)}
    facts = facts_of(decision)
    assert facts["learned_nothing"] == (True, None)
    assert facts["blew_up_at_a_higher_rate"] == (0.01, 0.05)
    assert facts["spiked_above"] == (pytest.approx(2.286, abs=1e-3), 1.5)  # the loss jumped at its first steps
    state = finish(state, third)
    assert state.last_attempt.outcome == "completed" and state.last_attempt.objective_value >= 0.9


def test_a_rate_lowered_for_the_targets_scale_is_not_one_a_job_blew_up_at(account_input):
    """The ceiling RateForTargetScale sets (decision 187) says a rate is too high by computation, not that a job blew
    up there: a job at a lower rate that learned nothing is not sent lower by it."""
    from contracts.remedy_condition_parsing import parse_condition
    from contracts.situation import RateCeiling, Situation

    condition = parse_condition({"blew_up_at_a_higher_rate": True}, {"lr": 0.01}, "when")
    computed = Situation(rate_ceilings=(RateCeiling("lr", 0.004, 2, "4 times the rate the targets' scale implies", blew_up=False),))
    assert condition.check(computed, {"lr": 2.9e-5}) == (False, [])
    diverged = Situation(rate_ceilings=(RateCeiling("lr", 0.05, 1, "the rate job 1 diverged at"),))
    holds, facts = condition.check(diverged, {"lr": 0.01})
    assert holds and [fact.text for fact in facts] == ["lr 0.01 is below 0.05, the rate job 1 diverged at"]
    assert condition.check(diverged, {"lr": 0.05}) == (False, [])  # not below it


def test_a_plateau_at_a_fitting_rate_after_a_blow_up_trains_longer_at_that_rate(account_input):
    """A GRU under Adam at 1.0 blew up; at Adam's usual 0.001 the next job learned nothing in its first five epochs,
    but its loss crept down from its start and never rose above it: a plateau, not a rate that still overshoots
    (decision 208). More epochs at that rate, not a tenth of it; the recorded job 3 meets the objective."""
    run, state = _planned_after_the_lowered_rate("gru-adam-rate-lowered-plateau", account_input)
    longer = run["jobs"][2]
    decision = state.last_attempt.decision
    assert decision.remedy == "TrainLonger"
    assert changes_of(decision) == {"epochs": (10, 20)}
    state = finish(state, longer)
    assert state.last_attempt.outcome == "completed" and state.last_attempt.objective_value >= 0.9
