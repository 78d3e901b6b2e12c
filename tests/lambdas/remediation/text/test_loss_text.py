"""What the product says of the debugger's changes to a job's training loss (``lambdas.remediation.text.loss_text``),
whole: the note a met objective ends with when its job trained on a changed loss (as the monitor's end reason
carries it, from recorded runs), and what answers the training labels once the run has no remedy left."""

from __future__ import annotations

import pytest

from lambdas.remediation.planning.planner import plan
from lambdas.remediation.planning.situation import situation_in
from lambdas.remediation.text.loss_text import advice_after, success_notes
from tests.lambdas.remediation.recorded_runs import finish, quiet_miss, recorded, start

# --------------------------------------------------------------------------- a met objective on a changed loss


def test_a_run_met_on_the_debuggers_class_weighting_says_what_the_script_needs_alone(account_input):
    _, planned, _ = quiet_miss("mlp-rare-class-weighted-in-job", account_input, allow_loss_changes=True)
    met = finish(planned, recorded("mlp-rare-class-weighted-in-job")["jobs"][1])
    assert (met.last_attempt.outcome, met.run_spec.debugger_class_weighting) == ("completed", "balanced")
    assert met.end_reason == (
        "Job remediation-job-489b871246-002 completed, no rule found an issue and validation:accuracy = 0.9667 "
        "meets validation:accuracy >= 0.9. Final hyperparameters: lr=0.05, epochs=12. The debugger weighted its "
        "training loss by class (debugger_class_weighting=balanced): the script alone trains unweighted, so give it "
        "class weights (inverse class frequency) to train the same way without it."
    )


def test_a_run_met_on_the_logit_adjusted_loss_says_what_the_script_needs_alone(account_input):
    run = recorded("logline-rare-class-weighted-then-logit-adjusted")
    first, weighted, adjusted = run["jobs"]
    state = plan(finish(plan(finish(start(run, account_input, allow_loss_changes=True), first)), weighted))
    met = finish(state, adjusted)
    assert (met.last_attempt.outcome, met.run_spec.debugger_class_weighting) == ("completed", "logit_adjusted")
    assert met.end_reason == (
        "Job remediation-job-78d889ac21-003 completed, no rule found an issue and validation:accuracy = 0.8517 "
        "meets validation:accuracy >= 0.8. Final hyperparameters: learning-rate=0.002, n-epochs=12, bs=64, "
        "n-layers=4, hidden-units=64, act=tanh, batchnorm=0, opt=adam, init-gain=1, scale-inputs=1, seed=757, "
        "clip-norm=0. The debugger trained it on the logit-adjusted loss (debugger_class_weighting=logit_adjusted): "
        "the script alone does not, so add the log of each class's share of the training labels to the scores its "
        "training loss reads (not to those it predicts with) to train the same way without it."
    )


def test_a_run_met_on_the_robust_loss_says_what_the_script_needs_alone(account_input):
    _, planned, _ = quiet_miss("mlp-noisy-labels-robust-in-job", account_input, allow_loss_changes=True)
    met = finish(planned, recorded("mlp-noisy-labels-robust-in-job")["jobs"][1])
    assert (met.last_attempt.outcome, met.run_spec.debugger_robust_loss) == ("completed", "generalized_cross_entropy")
    assert met.end_reason == (
        "Job remediation-job-70cf617e3e-002 completed, no rule found an issue and validation:accuracy = 0.9278 "
        "meets validation:accuracy >= 0.9. Final hyperparameters: lr=0.05, epochs=12, hidden=32, depth=1. The "
        "debugger trained it on the generalized cross-entropy (debugger_robust_loss=generalized_cross_entropy): the "
        "script alone trains on the cross-entropy, so use that loss in the script (or correct the labels) to train "
        "the same way without it."
    )


def test_each_loss_change_has_its_note_and_the_scripts_own_loss_none(account_input):
    run = recorded("mlp-rare-class-weighted-in-job")
    run_spec = start(run, account_input).run_spec
    assert success_notes(run_spec) == ""
    both = run_spec.model_copy(update={"debugger_class_weighting": "balanced", "debugger_robust_loss": "generalized_cross_entropy"})
    assert success_notes(both) == (
        " The debugger weighted its training loss by class (debugger_class_weighting=balanced): the script alone "
        "trains unweighted, so give it class weights (inverse class frequency) to train the same way without it. "
        "The debugger trained it on the generalized cross-entropy (debugger_robust_loss=generalized_cross_entropy): "
        "the script alone trains on the cross-entropy, so use that loss in the script (or correct the labels) to "
        "train the same way without it."
    )


# --------------------------------------------------------------------------- what answers the labels at the end


def finding(name: str, account_input):
    """A recorded job's run_spec and what its training labels say, as the planner reads them."""
    run = recorded(name)
    state = finish(start(run, account_input), run["jobs"][0])
    return state.run_spec, situation_in(state, state.last_attempt).labels


@pytest.mark.parametrize(
    ("name", "loss", "weighted", "expected"),
    [
        ("mlp-noisy-labels-small", {}, False, (
            "check and correct the training labels (a share of them disagree with what the rest teach the model); "
            "more epochs would fit more of the wrong ones"
        )),
        ("mlp-noisy-labels-small", {"debugger_robust_loss": "generalized_cross_entropy"}, False, (
            "the debugger trained on a loss robust to wrong labels (debugger_robust_loss=generalized_cross_entropy) "
            "and the objective is still missed: correcting the training labels is the fix"
        )),
        ("mlp-noisy-labels", {}, False, (
            "regularise (give the script weight decay, dropout or early stopping and map them in "
            "hyperparameter_names as weight_decay, dropout, early_stopping_patience), add training data, or check "
            "the training labels (a network large enough learns wrong ones by heart too); more epochs would widen "
            "the gap"
        )),
        ("mlp-rare-class-weighted-in-job", {}, False, (
            "weight the loss by class: give the script a class-weighting argument and map it in "
            'hyperparameter_names as class_weighting (the evidence remedies set it to "balanced"), or resample the '
            "rare classes in the training channel"
        )),
        ("mlp-rare-class-weighted-in-job", {}, True, (
            'the training loss was weighted by class (the script\'s class_weighting knob at "balanced") and the '
            "objective is still missed: more training samples of the rare class (or a model that needs fewer) are "
            "the fix"
        )),
        ("mlp-rare-class-weighted-in-job", {"debugger_class_weighting": "balanced"}, True, (
            "the debugger weighted the training loss by class (debugger_class_weighting=balanced) and the objective "
            "is still missed: more training samples of the rare class (or a model that needs fewer) are the fix"
        )),
        ("mlp-rare-class-weighted-in-job", {"debugger_class_weighting": "logit_adjusted"}, True, (
            "the debugger trained on the logit-adjusted loss (debugger_class_weighting=logit_adjusted) and the "
            "objective is still missed: more training samples of the rare class (or a model that needs fewer) are "
            "the fix"
        )),
    ],
    ids=["noisy", "noisy-after-robust-loss", "memorised", "imbalanced", "imbalanced-script-weighted",
         "imbalanced-debugger-weighted", "imbalanced-logit-adjusted"],
)
def test_what_answers_the_training_labels(account_input, name, loss, weighted, expected):
    run_spec, labels = finding(name, account_input)
    assert advice_after(run_spec.model_copy(update=loss), labels, weighted) == expected
