"""The planner on a recorded job that overfits (``recorded/make_recorded_runs.py``: real training, the real debugger):
LossNotDecreasing finds the held-out loss rising while the training loss falls, and the planner answers it as
overfitting (the script's regularisers, else smaller steps), not as a rate that overshoots."""

from __future__ import annotations

from lambdas.remediation.planning.planner import plan
from tests.lambdas.remediation.decision_fields import changes_of, facts_of
from tests.lambdas.remediation.recorded_runs import finish, recorded, start


def overfit_run(account_input, **overrides):
    """Development seed 305, configuration 35 of the random zoo (60% wrong labels, tabular, Adam): job 1 misses, job 2
    on the robust loss still rises at its end and trains four times longer, and job 3 overfits: LossNotDecreasing
    finds the held-out loss rising while the training loss falls. Returns job 3's state, planned."""
    run = recorded("mlp-noisy-labels-held-out-loss-rising")
    first, robust, longer = run["jobs"]
    state = plan(finish(start(run, account_input, allow_loss_changes=True, **overrides), first))
    assert state.last_attempt.decision.remedy == "RobustLossInJob"
    state = plan(finish(state, robust))
    assert state.last_attempt.decision.remedy == "TrainLongerOnNoisyLabels"
    state = finish(state, longer)
    assert (state.last_attempt.issue.rule, state.last_attempt.issue.kind) == ("LossNotDecreasing", "held_out_rising")
    return plan(state)


def test_a_held_out_loss_rising_while_the_training_loss_falls_is_answered_as_overfitting_not_by_the_rate(account_input):
    """The rule's finding says the held-out loss rose from 0.716 to 1.077 while the training loss fell from 0.692 to
    0.591 (held-out accuracy had fallen from 0.797 at epoch 15 to 0.73). The planner used to read a rate that
    overshoots and halved it twice (0.745 at best); now it regularises with the script's weight-decay knob, from step
    0, keeping the robust loss."""
    planned = overfit_run(account_input)
    decision = planned.last_attempt.decision
    assert decision.remedy == "StartWeightDecay" and decision.resume_from is None
    assert planned.run_spec.hyperparameters["weight-decay"] == 0.0001
    assert planned.run_spec.hyperparameters["lr"] == 0.002 and planned.run_spec.hyperparameters["epochs"] == 48
    assert planned.run_spec.debugger_robust_loss == "generalized_cross_entropy"
    assert decision.cause == "LossNotDecreasing" and changes_of(decision) == {"weight-decay": (0.0, 0.0001)}
    assert facts_of(decision) == {"issue_kind": ("held_out_rising", None)}  # not a rate read as overshooting


def test_a_held_out_rise_in_a_script_without_regularisers_takes_smaller_steps_and_says_why(account_input):
    """The same run as a script with no weight-decay knob: smaller steps, for what they are (they fit less of what
    does not carry over in the same epochs), not a rate that overshoots."""
    run = recorded("mlp-noisy-labels-held-out-loss-rising")
    names = {key: value for key, value in run["run_spec"]["hyperparameter_names"].items() if key != "weight_decay"}
    decision = overfit_run(account_input, hyperparameter_names=names).last_attempt.decision
    assert (decision.remedy, decision.cause) == ("SmallerStepsOnHeldOutRise", "LossNotDecreasing")
    assert facts_of(decision) == {"issue_kind": ("held_out_rising", None)}
    assert changes_of(decision) == {"lr": (0.002, 0.001)}
