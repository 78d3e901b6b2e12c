"""The planner on real trajectories: jobs recorded by ``recorded/make_recorded_runs.py`` (real training, the real
debugger), each fed through the monitor's own ``decide`` / ``apply_decision`` as the monitor Lambda reads it, then
planned. Every assertion is on the decision's structured fields (the remedy, what it changes, the evidence its
condition held on, what it left out and why) and the next job's run_spec; the reasons' words are kept in
``test_reasons.py``. The quiet misses the training labels explain are in ``test_recorded_label_runs.py``, a held-out
loss rising while the training loss falls in ``test_recorded_held_out_runs.py``."""

from __future__ import annotations

import pytest

from lambdas.remediation.planning.planner import plan
from lambdas.remediation.text.decision_text import headline
from lambdas.remediation.text.notifications import issues_found
from tests.lambdas.remediation.decision_fields import changes_of, ended, facts_of, skipped, skipped_with_jobs
from tests.lambdas.remediation.recorded_runs import (
    finish,
    quiet_miss,
    recorded,
    scored_higher,
    start,
    without_optimizer,
)

# --------------------------------------------------------------------------- diagnosis from the run's history


def test_gradients_dying_after_the_loss_blew_up_in_warmup_lower_the_warmup_rate(account_input):
    """ResNet-20 with batch norm at warmup 0.2 (issue 21's collapse): the loss spikes to 1e14 at the last warmup step,
    and at the first main step the stem's gradient is exactly 0. The last symptom says 'vanishing gradient in the
    main phase'; the history says the warmup rate blew the network up. The planner lowers the rate that was active
    at the spike, the warmup rate, and raises nothing."""
    run = recorded("resnet-batch-norm-warmup-0.2")
    state = finish(start(run, account_input, allow_loss_changes=True), run["jobs"][0])
    issue = state.last_attempt.issue
    assert (issue.rule, issue.phase, issue.value) == ("VanishingGradient", "main", 0.0)
    planned = plan(state)
    decision = planned.last_attempt.decision
    assert (decision.remedy, decision.cause) == ("LowerWarmupRateAfterCollapse", "VanishingGradient")
    assert changes_of(decision) == {"warmup_learning_rate": (0.2, 0.02)}  # 0.2 x 0.1; the main rate was not active
    assert planned.run_spec.hyperparameters["learning_rate"] == 0.1
    evidence = run["jobs"][0]["rule_status"]["evidence"]
    peak = evidence["loss_peak"]
    assert (peak["step"], peak["phase"], peak["learning_rate"]) == (19, "warmup", 0.2)  # before the rule, at step 20
    # the spike the remedy's condition held on: the loss's peak over its initial value, above the collapse factor
    assert facts_of(decision) == {"spiked_above": (pytest.approx(peak["value"] / evidence["initial_loss"]), 10.0)}


def test_dead_units_after_a_spike_at_a_main_rate_lower_that_rate(account_input):
    """The repair zoo's dead-ReLU MLP: SGD 0.4 with momentum; the loss spikes before DeadRelu fires. No phase:
    the rate the optimizer ran at, lr, is lowered tenfold."""
    run = recorded("mlp-dead-relu-lr-0.4")
    state = finish(start(run, account_input, allow_loss_changes=True), run["jobs"][0])
    assert state.last_attempt.issue.rule == "DeadRelu"
    planned = plan(state)
    decision = planned.last_attempt.decision
    assert (decision.remedy, decision.cause) == ("LowerRateAfterCollapse", "DeadRelu")
    assert changes_of(decision) == {"lr": (0.4, 0.04)} and planned.run_spec.hyperparameters["lr"] == 0.04
    evidence = run["jobs"][0]["rule_status"]["evidence"]
    peak = evidence["gradient_norm_peak"]  # the gradient norm spiked (13.5x), the loss did not
    assert facts_of(decision) == {
        "spiked_above": (pytest.approx(peak["value"] / evidence["initial_gradient_norm"]), 10.0)
    }


def test_a_spike_from_weights_initialised_far_too_large_is_answered_by_rescaling_them_not_by_the_rate(account_input):
    """Four tanh layers initialised at 100 times the usual scale: the units saturate, the gradient norm spikes from 373
    to 41,850 and VanishingGradient stops the job. The spike alone would read as a collapse from too high a rate (the
    collapse remedies' condition holds), but the run names the cause in its settings: the initialisation is rescaled,
    and the next job meets the objective (0.9694)."""
    from lambdas.remediation.planning.remedies.evidence import COLLAPSE_FACTOR
    from lambdas.remediation.planning.situation import situation_of

    run = recorded("mlp-tanh-init-x100")
    state = finish(start(run, account_input, allow_loss_changes=True), run["jobs"][0])
    assert state.last_attempt.issue.rule == "VanishingGradient"
    assert situation_of(state.last_attempt).spike(COLLAPSE_FACTOR) is not None
    planned = plan(state)
    decision = planned.last_attempt.decision
    assert decision.remedy == "RescaleInitialisation"
    assert planned.run_spec.hyperparameters == {**run["jobs"][0]["hyperparameters"], "init-scale": 1.0}  # lr kept
    assert changes_of(decision) == {"init-scale": (100.0, 1.0)}
    assert facts_of(decision) == {"hyperparameters_above": (100.0, 5.0)}  # init-scale 100 is above 5
    met = finish(planned, run["jobs"][1]).last_attempt
    assert met.outcome == "completed" and met.objective_value == pytest.approx(0.9694)


@pytest.mark.parametrize(
    ("name", "job"),
    [
        ("resnet-batch-norm-warmup-0.8", 1),
        ("resnet-batch-norm-warmup-0.2", 1),
        ("mlp-adam-1e-3-one-epoch", 0),
        ("mlp-adam-5e-4-one-epoch", 0),
    ],
)
def test_a_healthy_trajectory_shows_no_spike(name, job, account_input):
    """Healthy jobs (the ResNet at warmup 0.1, Adam on digits) stay far below the collapse factor."""
    from lambdas.remediation.planning.remedies.evidence import COLLAPSE_FACTOR
    from lambdas.remediation.planning.situation import situation_of

    run = recorded(name)
    state = start(run, account_input, allow_loss_changes=True)
    for earlier in run["jobs"][:job]:
        state = plan(finish(state, earlier))
    state = finish(state, run["jobs"][job])
    assert situation_of(state.last_attempt).spike(COLLAPSE_FACTOR) is None


# --------------------------------------------------------------------------- a quiet miss: the loss's course



def test_a_quiet_sigmoid_stack_gets_relu_before_more_epochs(account_input):
    """Four sigmoid layers at SGD 0.05: no default rule fires, accuracy 0.41, the loss still creeping down. Sigmoid's
    derivative shrinks the gradient layer by layer: the activation is changed before anything else."""
    job, planned, decision = quiet_miss("mlp-sigmoid-stack-quiet", account_input, allow_loss_changes=True)
    assert (decision.remedy, decision.cause) == ("SwitchToReLU", "objective_missed")
    assert planned.run_spec.hyperparameters["activation"] == "relu"
    assert planned.run_spec.hyperparameters["epochs"] == job["hyperparameters"]["epochs"]
    assert changes_of(decision) == {"activation": ("sigmoid", "relu")}
    assert facts_of(decision) == {"hyperparameters": ("sigmoid", "activation")}  # activation is sigmoid


def test_a_frozen_adam_rate_goes_to_adams_usual_start(account_input):
    """Adam at 2e-8: the loss never fell (it wandered around its start). The rate goes to Adam's usual 1e-3, not a
    tenth of it: a tenth left a quiet run short of its objective (issue 21's random zoo, development seeds)."""
    job, planned, decision = quiet_miss("mlp-adam-frozen", account_input, allow_loss_changes=True)
    assert job["rule_status"]["evidence"]["optimizer"] == "Adam"
    assert (decision.remedy, planned.run_spec.hyperparameters["lr"]) == ("LearningRateToUsual", 0.001)
    assert changes_of(decision) == {"lr": (2e-08, 0.001)}
    assert facts_of(decision) == {"hyperparameters_below": (2e-08, 1e-05)}  # below Adam's too-small bound


def test_a_loss_that_never_moves_is_stopped_a_third_in_and_the_rate_goes_to_the_usual_start(account_input):
    """SGD at 5e-7 for 12 epochs (276 steps): the loss wandered around 3.05 and LossNotDecreasing reported it
    stagnant at step 79, so the job stopped a third of the way in (before, it trained all 12 epochs unreported and
    was answered after). The rate goes to SGD's usual start, and the recorded next job met the objective."""
    run = recorded("mlp-sgd-frozen-stagnant")
    state = finish(start(run, account_input, allow_loss_changes=True), run["jobs"][0])
    issue = state.last_attempt.issue
    assert (issue.rule, issue.kind, issue.step) == ("LossNotDecreasing", "stagnant", 82)  # training step 79
    assert "loss has not fallen since its first judged window" in issue.message
    planned = plan(state)
    decision = planned.last_attempt.decision
    assert (decision.remedy, decision.cause) == ("LearningRateToUsual", "LossNotDecreasing")
    assert changes_of(decision) == {"lr": (5e-07, 0.1)} and planned.run_spec.hyperparameters["lr"] == 0.1
    # the loss never moved (the rule found it stagnant) at a rate below SGD's too-small bound
    assert facts_of(decision) == {"issue_kind": ("stagnant", None), "hyperparameters_below": (5e-07, 0.001)}
    assert decision.resume_from == state.last_attempt.job_name
    met = finish(planned, run["jobs"][1])
    assert met.last_attempt.outcome == "completed" and met.last_attempt.objective_value == 0.9722


@pytest.mark.parametrize(
    ("hyperparameters", "remedy", "changed"),
    [
        ({"lr": 0.05, "epochs": 12, "activation": "sigmoid"}, "SwitchToReLU", {"activation": "relu"}),
        ({"lr": 0.05, "epochs": 12, "init-scale": 0.001}, "RescaleInitialisation", {"init-scale": 1.0}),
        ({"lr": 0.05, "epochs": 12, "batch-norm": False}, "AddBatchNorm", {"batch-norm": True}),
        ({"lr": 0.05, "epochs": 12}, "RaiseLearningRateToUsual", {"lr": 0.1}),
    ],
)
def test_a_stagnant_loss_at_a_usual_rate_is_answered_by_the_setting_that_stalls_training(
    account_input, hyperparameters, remedy, changed
):
    """The same stagnant job as its script's other settings would have it: at a usual rate, the settings known to
    stall training are fixed first (as after a quiet miss), then batch norm, then the usual rate; never a rate halved
    or raised a notch as for a loss that moved and then stopped."""
    run = recorded("mlp-sgd-frozen-stagnant")
    job = {**run["jobs"][0], "hyperparameters": hyperparameters}
    conventional = {"activation": "activation", "init-scale": "init_scale", "batch-norm": "add_batch_norm"}
    names = {"learning_rate": "lr", "num_epochs": "epochs",
             **{conventional[key]: key for key in hyperparameters if key in conventional}}
    state = start(run, account_input, allow_loss_changes=True, hyperparameters=hyperparameters, hyperparameter_names=names)
    planned = plan(finish(state, job))
    decision = planned.last_attempt.decision
    assert decision.remedy == remedy and evidence_test(decision, "issue_kind") == "stagnant"
    assert {key: planned.run_spec.hyperparameters[key] for key in changed} == changed
    assert {name: after for name, (_, after) in changes_of(decision).items()} == changed  # and nothing else


def evidence_test(decision, test):
    return facts_of(decision)[test][0]


def test_a_run_still_learning_when_it_stopped_trains_four_times_longer(account_input):
    """SGD 0.01 for one epoch, 0.894 against 0.9: the loss fell 80% and its last quarter was still well below the
    quarter before. Four times the epochs, from its checkpoint."""
    job, planned, decision = quiet_miss("mlp-sgd-one-epoch-still-falling", account_input, allow_loss_changes=True)
    assert (decision.remedy, decision.cause) == ("TrainLonger", "objective_missed")
    assert changes_of(decision) == {"epochs": (1, 4)}
    assert planned.run_spec.hyperparameters["lr"] == 0.01
    assert facts_of(decision) == {"loss_shape": ("still_falling", None)}
    assert decision.resume_from == job["describe"]["TrainingJobName"]


def test_a_one_epoch_run_whose_loss_reads_settled_trains_longer_before_smaller_steps(account_input):
    """Three Adam layers for one epoch, 0.9611 against 0.97: over the epoch's 90 steps the loss reads as settled,
    which after twelve epochs would lower the rate. One epoch is too short to tell: four times the epochs, continuing
    from the job's checkpoint, at the same rate; the recorded next job met the objective at 0.9889."""
    run = recorded("mlp-adam-one-epoch-settled")
    job, planned, decision = quiet_miss("mlp-adam-one-epoch-settled", account_input, allow_loss_changes=True)
    assert decision.remedy == "TrainLonger"
    assert changes_of(decision) == {"epochs": (1, 4)} and planned.run_spec.hyperparameters["lr"] == 0.002
    # the loss reads settled, and one epoch is below the three that tell a settled loss from a slow one
    assert facts_of(decision) == {"loss_shape": ("settled", None), "hyperparameters_below": (1, 3.0)}
    assert decision.resume_from == job["describe"]["TrainingJobName"]
    met = finish(planned, run["jobs"][1])
    assert met.last_attempt.outcome == "completed" and met.last_attempt.objective_value == 0.9889


def test_a_run_that_fits_its_training_set_and_misses_is_regularised_not_trained_longer(account_input):
    """Twelve epochs, training loss 2.8 -> 0.002 and level, 0.975 against 0.995: more epochs would fit the training
    set further. With a weight-decay knob it starts weight decay; without one, no remedy is left (not TrainLonger)."""
    run = recorded("mlp-settled-short")
    job = {**run["jobs"][0], "hyperparameters": {**run["jobs"][0]["hyperparameters"], "weight-decay": 0.0}}
    names = {"learning_rate": "lr", "num_epochs": "epochs", "weight_decay": "weight-decay"}
    state = start(run, account_input, allow_loss_changes=True, hyperparameters=job["hyperparameters"], hyperparameter_names=names)
    planned = plan(finish(state, job))
    decision = planned.last_attempt.decision
    assert decision.remedy == "StartWeightDecay"
    assert changes_of(decision) == {"weight-decay": (0.0, 0.0001)}
    assert planned.run_spec.hyperparameters["epochs"] == 12 and decision.resume_from is None
    assert facts_of(decision) == {"loss_shape": ("memorised", None)}  # the loss fell to its floor: it fits the set

    _, planned, decision = quiet_miss("mlp-settled-short", account_input, allow_loss_changes=True)
    assert ended(decision) == ("none", "end", "objective_missed") and decision.cause == "objective_missed"
    assert decision.changes == {} and decision.skipped == []  # nothing applies; nothing was held back
    assert planned.run_spec.hyperparameters["epochs"] == 12


def test_a_run_whose_held_out_metric_met_the_objective_and_fell_again_stops_at_that_epoch(account_input):
    """Digits with 60% of the training labels drawn at random, twelve epochs against 0.75: the held-out accuracy the
    script saved once per epoch reached 0.7972 after epoch 2 and fell to 0.5194 as the network learned the wrong
    labels. The job trained past the epoch that met the objective: the next job trains 2 epochs, from step 0, ahead
    of the smaller steps the noisy labels would call for; the recorded next job scored 0.7972 again and met it."""
    run = recorded("mlp-noisy-labels-past-best")
    job, planned, decision = quiet_miss("mlp-noisy-labels-past-best", account_input, allow_loss_changes=True)
    assert decision.remedy == "StopAtBestEpoch"
    assert planned.run_spec.hyperparameters == {"lr": 0.05, "epochs": 2}
    assert decision.resume_from is None  # the checkpoints hold epoch 12, past the best one
    assert changes_of(decision) == {"epochs": (12, 2)}
    assert facts_of(decision) == {"objective_met_before_end": (2, None)}  # met after epoch 2 of 12
    course = planned.last_attempt.evidence.objective_course
    assert (course.best_report, course.reports) == (2, 12)
    assert (course.best_value, course.last_value) == pytest.approx((0.7972, 0.5194), abs=1e-4)
    met = finish(planned, run["jobs"][1])
    assert met.last_attempt.outcome == "completed" and met.last_attempt.objective_value == 0.7972


def test_a_script_that_only_prints_its_metric_is_stopped_at_its_best_epoch_too(account_input):
    """examples/plain has no debugger line: the job's debugger read its printed held-out accuracy with the run_spec's
    metric_definitions, once per epoch, so the course reached the planner as a saved metric's would."""
    run = recorded("plain-noisy-labels-past-best")
    job, planned, decision = quiet_miss("plain-noisy-labels-past-best", account_input, allow_loss_changes=True)
    assert job["rule_status"]["metrics"]["validation:accuracy"]["values"][3] == 0.9056
    assert decision.remedy == "StopAtBestEpoch"
    assert planned.run_spec.hyperparameters == {"lr": 0.05, "epochs": 4}
    assert facts_of(decision) == {"objective_met_before_end": (4, None)}  # met after epoch 4 of 12
    course = planned.last_attempt.evidence.objective_course
    assert (course.best_report, course.reports) == (4, 12)
    assert (course.best_value, course.last_value) == pytest.approx((0.9056, 0.7167), abs=1e-4)
    met = finish(planned, run["jobs"][1])
    assert met.last_attempt.outcome == "completed" and met.last_attempt.objective_value == 0.9056


def test_a_held_out_metric_falling_from_its_best_is_not_trained_longer_while_the_training_loss_still_falls(
    account_input,
):
    """The random zoo's plain logline script on digits with 40% noisy labels (development seed 24, configuration
    28): held-out accuracy 0.8944 after epoch 6 of 12, then down to 0.80 on average over the last four, while the
    training loss still fell. Four times the epochs took that run to 0.797; with the debugger's robust loss off, the
    run ends saying why not (with it left to the product, the next test)."""
    run = recorded("logline-noisy-labels-falling-held-out")
    job = run["jobs"][0]
    assert job["rule_status"]["metrics"]["validation:accuracy"]["values"][5] == 0.8944  # read from its printed lines
    planned = plan(finish(start(run, account_input), job))
    decision = planned.last_attempt.decision
    assert planned.next_action == "end" and ended(decision) == ("none", "end", "objective_missed")
    assert planned.run_spec == start(run, account_input).run_spec  # nothing changed, the loss included
    # the robust loss would answer it, and the run says so and how to allow it (the words: test_reasons.py)
    assert skipped_with_jobs(decision) == [("RobustLossPastPeak", "not_allowed", None)]
    # the same job had its script reported no course: more epochs, as the training loss still fell
    unreported = {**job, "rule_status": {**job["rule_status"], "metrics": {}}}
    decision = plan(finish(start(run, account_input, allow_loss_changes=True), unreported)).last_attempt.decision
    assert decision.remedy == "TrainLonger" and facts_of(decision) == {"loss_shape": ("still_falling", None)}
    assert changes_of(decision) == {"n-epochs": (12, 48)}


def test_a_held_out_metric_falling_from_its_best_with_nothing_else_left_gets_the_debuggers_robust_loss(account_input):
    """The same job with the robust loss left to the product: nothing in the ladder answers a held-out metric falling
    from its best while the training labels' match still rises (no labels finding), and that is what wrong labels
    make a model do, so the next job trains on the generalized cross-entropy, from step 0, before the run would end.
    The recorded next job met the objective (0.8222 -> 0.9444, its held-out accuracy never falling below 0.93 after
    epoch 4)."""
    run = recorded("logline-noisy-labels-past-peak-robust-loss")
    job = run["jobs"][0]
    assert job["rule_status"]["metrics"]["validation:accuracy"]["values"][5] == 0.8944  # the same first job
    planned = plan(finish(start(run, account_input, allow_loss_changes=True), job))
    decision = planned.last_attempt.decision
    assert decision.remedy == "RobustLossPastPeak" and planned.run_spec.debugger_robust_loss == "generalized_cross_entropy"
    assert planned.run_spec.hyperparameters == job["hyperparameters"]
    assert [(fact.test, fact.measured) for fact in decision.evidence] == [("objective_past_peak", True)]
    met = finish(planned, run["jobs"][1])
    assert met.last_attempt.outcome == "completed" and met.last_attempt.objective_value == 0.9444


def test_a_course_reported_more_or_less_often_than_once_per_epoch_names_no_epoch(account_input):
    """The same job, had its script saved the held-out accuracy at half its epochs only (or the run named no epochs
    hyperparameter): the reports cannot be read as epochs, so the epochs are not cut; the noisy labels' answer
    (the debugger's robust loss) comes instead."""
    run = recorded("mlp-noisy-labels-past-best")
    job = run["jobs"][0]
    metric = job["rule_status"]["metrics"]["validation:accuracy"]
    halved = {**metric, "values": metric["values"][1::2]}
    sparse = {**job, "rule_status": {**job["rule_status"], "metrics": {"validation:accuracy": halved}}}
    decision = plan(finish(start(run, account_input, allow_loss_changes=True), sparse)).last_attempt.decision
    assert decision.remedy == "RobustLossInJob"
    unnamed = start(run, account_input, allow_loss_changes=True, hyperparameter_names={"learning_rate": "lr"})
    decision = plan(finish(unnamed, job)).last_attempt.decision
    assert decision.remedy != "StopAtBestEpoch"


# --------------------------------------------------------------------------- optimizers and types


@pytest.mark.parametrize("name", ["mlp-adam-1e-3-one-epoch", "mlp-adam-5e-4-one-epoch"])
def test_adams_usual_rates_are_not_moved(name, account_input):
    """Adam on digits, one epoch, short of the objective. 1e-3 and 5e-4 are Adam's usual range: the evidence set
    trains longer (four times: one epoch is too short to read the loss's course) and leaves the rate alone (judged
    in SGD's range, 5e-4 would be 'too small' and go to 0.01)."""
    run = recorded(name)
    job = run["jobs"][0]
    planned = plan(finish(start(run, account_input, allow_loss_changes=True), job))
    decision = planned.last_attempt.decision
    assert job["rule_status"]["evidence"]["optimizer"] == "Adam"
    assert decision.remedy == "TrainLonger" and changes_of(decision) == {"epochs": (1, 4)}
    assert planned.run_spec.hyperparameters["lr"] == job["hyperparameters"]["lr"]
    assert facts_of(decision) == {"hyperparameters_below": (1, 3.0)}  # one epoch is too short to read the loss


def test_without_the_optimizer_the_rate_is_judged_as_sgds_and_the_text_says_so(account_input):
    run = recorded("mlp-adam-5e-4-one-epoch")
    planned = plan(finish(start(run, account_input, allow_loss_changes=True), without_optimizer(run["jobs"][0])))
    decision = planned.last_attempt.decision
    assert (decision.remedy, planned.run_spec.hyperparameters["lr"]) == ("LearningRateToUsual", 0.1)
    # SGD's too-small bound (0.001, not Adam's 1e-05) and SGD's usual start (0.1)
    assert facts_of(decision) == {"hyperparameters_below": (0.0005, 0.001)}
    assert changes_of(decision) == {"lr": (0.0005, 0.1)}
    # the range is an assumption the structure does not carry: the reason says so
    assert "Rates judged in SGD's range (usual start 0.1, out of range above 0.4, too small below 0.001; assumed: the " \
           "job reported no optimizer)." in decision.reason


def test_a_json_integer_rate_is_a_real_number_50_then_5_then_half(account_input):
    """'"lr": 50' with a declared 'multiply by 0.1': 50 -> 5.0 -> 0.5, not 50 -> 5 -> 'would round to 0'."""
    run = recorded("mlp-lr-50-as-integer")
    first, second = run["jobs"]
    state = plan(finish(start(run, account_input, allow_loss_changes=True), first))
    lr = state.run_spec.hyperparameters["lr"]
    assert lr == 5.0 and isinstance(lr, float)
    assert changes_of(state.last_attempt.decision) == {"lr": (50, 5.0)}
    state = plan(finish(state, second))  # the recorded second job ran at 5.0 and exploded too
    assert state.next_action == "launch_new"
    assert state.run_spec.hyperparameters["lr"] == 0.5
    assert changes_of(state.last_attempt.decision) == {"lr": (5.0, 0.5)}


def test_a_declared_floor_ends_the_run_with_the_changes_made_so_far(account_input):
    """'multiply lr by 0.1, not below 1': 50 -> 5, then 0.5 would be below the floor, so the run ends (the words,
    'Changed so far: lr 50 -> 5', are in test_reasons.py)."""
    run = recorded("mlp-lr-50-as-integer")
    remedies = {"ExplodingTensor": [{"hyperparameter": "lr", "multiply_by": 0.1, "min": 1}]}
    state = plan(finish(start(run, account_input, allow_loss_changes=True, remedies=remedies), run["jobs"][0]))
    state = plan(finish(state, run["jobs"][1]))
    assert state.next_action == "end"
    decision = state.last_attempt.decision
    assert ended(decision) == ("none", "end", "no_remedy_left") and decision.cause == "ExplodingTensor"
    assert state.run_spec.hyperparameters["lr"] == 5.0
    assert [changes_of(attempt.decision) for attempt in state.attempts] == [{"lr": (50, 5.0)}, {}]


def test_the_evidence_set_switches_a_0_1_batch_norm_knob(account_input):
    """'"batch-norm": 0' named add_batch_norm: the run is accepted, and batch norm is turned on as 1 (the script's
    own spelling), not refused for not being true/false."""
    run = recorded("mlp-sigmoid-batch-norm-0")
    # at a tenth of the usual initial scale, the scale and the sigmoid are both changed, in one launch (the fixed
    # zoo's mlp-vanishing-sigmoid took one for each); the recorded next job met the objective ...
    rescaled = plan(finish(start(run, account_input, allow_loss_changes=True), run["jobs"][0]))
    decision = rescaled.last_attempt.decision
    assert decision.remedy == "RescaleAndSwitchToReLU"
    assert (rescaled.run_spec.hyperparameters["init-scale"], rescaled.run_spec.hyperparameters["activation"]) == (
        1.0, "relu")
    assert changes_of(decision) == {"activation": ("sigmoid", "relu"), "init-scale": (0.1, 1.0)}
    # activation is sigmoid and init-scale 0.1 is below 0.2
    assert facts_of(decision) == {"hyperparameters": ("sigmoid", "activation"), "hyperparameters_below": (0.1, 0.2)}
    met = finish(rescaled, run["jobs"][1]).last_attempt
    assert met.outcome == "completed" and met.objective_value == 0.9278
    # ... and with init-scale not named for the product, batch norm goes on
    names = {key: value for key, value in run["run_spec"]["hyperparameter_names"].items() if key != "init_scale"}
    planned = plan(finish(start(run, account_input, allow_loss_changes=True, hyperparameter_names=names), run["jobs"][0]))
    decision = planned.last_attempt.decision
    assert decision.remedy == "AddBatchNorm"
    knob = planned.run_spec.hyperparameters["batch-norm"]
    assert knob == 1 and not isinstance(knob, bool)
    change = decision.changes["batch-norm"]
    assert (change.before, change.after) == (0, 1) and not isinstance(change.after, bool)
    subject = issues_found(planned).subject
    assert subject.startswith("[remediation] VanishingGradient at step 0: turning batch-norm on, relaunching")


# --------------------------------------------------------------------------- true claims


def test_no_resume_claim_for_a_script_that_writes_no_checkpoints(account_input):
    """examples/ddp writes no checkpoints: the next job trains from step 0, and the decision says so."""
    run = recorded("ddp-script-without-checkpoints")
    assert run["jobs"][0]["rule_status"]["evidence"]["checkpoint_files"] == 0
    planned = plan(finish(start(run, account_input, allow_loss_changes=True), run["jobs"][0]))
    decision = planned.last_attempt.decision
    assert decision.remedy == "TrainLonger" and decision.resume_from is None
    assert planned.last_attempt.resumed_from is None


def test_a_script_that_left_checkpoints_is_told_what_a_resuming_script_does(account_input):
    run = recorded("mlp-adam-5e-4-one-epoch")  # examples/mlp checkpoints every epoch
    job = run["jobs"][0]
    planned = plan(finish(start(run, account_input, allow_loss_changes=True), job))
    decision = planned.last_attempt.decision
    assert job["rule_status"]["evidence"]["checkpoint_files"] == 1
    assert decision.remedy == "TrainLonger" and decision.resume_from == job["describe"]["TrainingJobName"]


def test_the_xgboost_headline_gives_the_rules_numbers_not_its_patience_as_the_loss(xgboost_account_input):
    """Issue 20: 'Overtraining fired at step 10 (tensor validation-logloss = 10)' named the patience as the loss."""
    run = recorded("xgboost-overtraining")
    state = finish(start(run, xgboost_account_input), run["jobs"][0])
    assert headline(state.last_attempt, state) == (
        "Overtraining fired at step 10: the validation loss validation-logloss has not improved by more than delta "
        "0.01 of its best 0.303379 for 10 steps (patience_validation 10) at step 10; latest 0.976145"
    )
    planned = plan(state)
    decision = planned.last_attempt.decision
    assert (decision.remedy, decision.cause) == ("GentlerTrees", "Overtraining")
    assert changes_of(decision) == {
        "num_round": (100, 200), "max_depth": (10, 6), "eta": (0.9, 0.3), "min_child_weight": (0, 1.0),
        "early_stopping_rounds": (0, 5),
    }  # fmt: skip
    assert facts_of(decision) == {"hyperparameters_above": (0.9, 0.3)}  # eta 0.9 is above 0.3


@pytest.fixture
def xgboost_account_input(account_input):
    return dict(account_input)


# --------------------------------------------------------------------------- a score that moved within its noise


def test_a_job_a_point_lower_within_its_reports_noise_is_built_on_not_undone(account_input):
    """Development seed 262, configuration 18 of the random zoo (a 4x32 GELU MLP trained 1 epoch of its 12): job 1
    scored 0.2983, at chance; four times the epochs 0.2883, its four reports 0.298, 0.233, 0.32, 0.288 (noise 0.044
    around their line). That point is chance, not a remedy that made things worse: the planner raises the rate from
    job 2's four epochs (it used to go back to one epoch, raise the rate there, and end at chance), then trains
    twice as long, and the recorded fourth job meets the objective at 0.845."""
    run = recorded("mlp-one-epoch-at-chance")
    first, longer, faster, met = run["jobs"]
    state = plan(finish(start(run, account_input, allow_loss_changes=True), first))
    assert state.last_attempt.decision.remedy == "TrainLonger" and state.run_spec.hyperparameters["epochs"] == 4
    state = plan(finish(state, longer))
    decision = state.last_attempt.decision
    assert decision.remedy == "RaiseLearningRateToUsual"
    # built on job 2 (its four epochs kept, nothing undone), and nothing left out as having made it worse
    assert changes_of(decision) == {"lr": (0.05, 0.1)} and skipped(decision) == {}
    assert state.run_spec.hyperparameters["epochs"] == 4
    state = plan(finish(state, faster))
    assert state.last_attempt.decision.remedy == "TrainLonger" and state.run_spec.hyperparameters["epochs"] == 8
    state = finish(state, met)
    assert state.last_attempt.outcome == "completed" and state.last_attempt.objective_value == pytest.approx(0.845)


def steady(job):
    """The same recorded job as if its held-out reports had all been its last (noise 0)."""
    metrics = job["rule_status"]["metrics"]
    values = {name: {**metric, "values": [metric["values"][-1]] * len(metric["values"])} for name, metric in metrics.items()}
    return {**job, "rule_status": {**job["rule_status"], "metrics": values}}


def test_two_jobs_that_learned_nothing_are_neither_better_nor_worse_even_without_report_noise(account_input):
    """The same job 2 read as if its four reports had been steady (noise 0): a point lower than job 1, but both jobs'
    losses never fell and both score what guessing the most common class scores (decision 208): neither is worse, so
    the planner builds on job 2's four epochs and raises the rate."""
    run = recorded("mlp-one-epoch-at-chance")
    first, longer = run["jobs"][:2]
    state = plan(finish(plan(finish(start(run, account_input, allow_loss_changes=True), first)), steady(longer)))
    decision = state.last_attempt.decision
    assert [attempt.objective_value for attempt in state.attempts] == pytest.approx([0.2983, 0.2883], abs=1e-4)
    assert decision.remedy == "RaiseLearningRateToUsual"
    assert changes_of(decision) == {"lr": (0.05, 0.1)}
    assert skipped_with_jobs(decision) == []
    assert state.run_spec.hyperparameters["epochs"] == 4


def test_a_job_lower_by_more_than_its_reports_noise_is_undone(account_input):
    """The same two jobs, job 2 steady, both read as scoring 0.06 higher (above guessing: they learned something): a
    point lower is then worse, and the planner goes back to job 1's settings, saying so."""
    run = recorded("mlp-one-epoch-at-chance")
    first, longer = (scored_higher(job, 0.06) for job in run["jobs"][:2])
    state = plan(finish(plan(finish(start(run, account_input, allow_loss_changes=True), first)), steady(longer)))
    decision = state.last_attempt.decision
    assert [attempt.objective_value for attempt in state.attempts] == pytest.approx([0.3583, 0.3483], abs=1e-4)
    # back to job 1's settings (epochs 4 -> 1), and from there the next remedy; TrainLonger made it worse (job 2)
    assert decision.remedy == "RaiseLearningRateToUsual"
    assert changes_of(decision) == {"lr": (0.05, 0.1), "epochs": (4, 1)}
    assert skipped_with_jobs(decision) == [("TrainLonger", "made_it_worse", 2)]
    assert state.run_spec.hyperparameters["epochs"] == 1
