"""The choice of a remedy: one whose job would carry more hyperparameters than SageMaker takes is left out, said so
(``why`` too_many_hyperparameters, with the count), and the next remedy of the ladder is taken, so a planned job never
fails at its request. On a recorded run (real training) whose script, under torchrun, fills SageMaker's limit
exactly: the in-job robust loss would add one more."""

from __future__ import annotations

import copy

from contracts.job import MAX_HYPERPARAMETERS
from contracts.run_spec import MAX_RUN_SPEC_HYPERPARAMETERS
from lambdas.remediation.job.job_request import count_hyperparameters
from lambdas.remediation.planning.planner import plan
from tests.lambdas.remediation.recorded_runs import finish, recorded, start

RUN = "mlp-noisy-labels-robust-in-job"


def _padded_miss(account_input, extra: int):
    """The recorded miss, its script given ``extra`` more hyperparameters (its job ran them too)."""
    run = copy.deepcopy(recorded(RUN))
    pad = {f"unused_{index:03d}": index for index in range(extra)}
    run["run_spec"]["hyperparameters"] = {**run["run_spec"]["hyperparameters"], **pad}
    run["jobs"][0]["hyperparameters"] = {**run["jobs"][0]["hyperparameters"], **pad}
    # torchrun on 2 instances: the platform's entries then take all SageMaker leaves the run_spec's 90
    distributed = {"distribution": {"torch_distributed": {"enabled": True}}, "instance_count": 2}
    state = finish(start(run, account_input, allow_loss_changes=True, **distributed), run["jobs"][0])
    return state, plan(state)


def _room(account_input) -> int:
    """How many more entries the script may have: the run_spec takes at most MAX_HYPERPARAMETERS less what the
    platform keeps, however few the workflow itself adds."""
    state, _ = _padded_miss(account_input, 0)
    return min(count_hyperparameters(state).left, MAX_RUN_SPEC_HYPERPARAMETERS - len(state.run_spec.hyperparameters))


def test_a_remedy_whose_job_would_carry_too_many_hyperparameters_is_skipped_and_named(account_input):
    state, planned = _padded_miss(account_input, _room(account_input))
    assert count_hyperparameters(state).left == 0  # the script's own job fits exactly
    decision = planned.last_attempt.decision
    skipped = {skip.remedy: (skip.why, skip.carried) for skip in decision.skipped}
    why, carried = skipped["RobustLossInJob"]
    assert why == "too_many_hyperparameters" and carried > MAX_HYPERPARAMETERS
    assert (decision.remedy, decision.next_action) == ("SmallerStepsOnNoisyLabels", "launch_new")
    assert count_hyperparameters(planned).fits  # the job planned instead can be requested
    assert carried == MAX_HYPERPARAMETERS + 1


def test_the_reason_names_the_remedy_left_out_for_the_hyperparameter_limit(account_input):
    _, planned = _padded_miss(account_input, _room(account_input))
    assert planned.last_attempt.decision.reason == (
        "Job remediation-job-70cf617e3e-001 completed with quiet rules but validation:accuracy = 0.7056 missed "
        "validation:accuracy >= 0.9 by 0.1944. Remedy 11 of 20 for objective_missed in the evidence remedies, "
        "SmallerStepsOnNoisyLabels (multiply lr by 0.3 (not below 0.0001)), applies because the training labels "
        "look noisy: over steps 233-286 the model's top class matched 47% of its training labels, yet it scored "
        "0.7056 on held-out data; a model fits the labels it trains on at least as well as unseen ones unless many "
        "of them are wrong. Many training labels look wrong: smaller steps fit fewer of them in the same epochs, so "
        "the model keeps more of what the correct ones share. Checking and correcting the labels is the fix. Rates "
        "judged in SGD's range (usual start 0.1, out of range above 0.4, too small below 0.001; the optimizer the "
        "job reported). Not tried: RobustLossInJob would make the job carry 101 hyperparameters, more than "
        "SageMaker takes (100): keep fewer run_spec.hyperparameters or select fewer rules. Next: lowering lr "
        "0.05 -> 0.015."
    )


def test_the_same_remedy_is_taken_when_its_job_fits(account_input):
    _, planned = _padded_miss(account_input, 0)
    decision = planned.last_attempt.decision
    assert decision.remedy == "RobustLossInJob" and decision.skipped == []
    assert count_hyperparameters(planned).fits
