"""What the reasons and notifications say of the debugger's changes to a job's training loss
(``contracts.debugger_settings``): the note a met objective ends with when its job trained on a changed loss, and
what answers the training labels once such a loss still missed."""

from __future__ import annotations

from contracts.debugger_settings import (
    BALANCED,
    CLASS_WEIGHTING,
    GENERALIZED_CROSS_ENTROPY,
    LOGIT_ADJUSTED,
    ROBUST_LOSS,
)
from contracts.training_labels import LabelFinding
from lambdas.remediation.state.run_spec import RunSpec

#: The training-label findings the robust loss answers (contracts.training_labels).
ROBUST_LOSS_FINDINGS = ("noisy", "memorised")
#: The conventional name of a script's own class-weighting knob.
SCRIPT_CLASS_WEIGHTING = "class_weighting"


def success_notes(run_spec: RunSpec) -> str:
    """What a run that met its objective says of each change the debugger made to its job's loss."""
    notes = ""
    if run_spec.debugger_class_weighting == BALANCED:
        notes += (
            f" The debugger weighted its training loss by class ({CLASS_WEIGHTING.field}={BALANCED}): the script "
            "alone trains unweighted, so give it class weights (inverse class frequency) to train the same way "
            "without it."
        )
    elif run_spec.debugger_class_weighting == LOGIT_ADJUSTED:
        notes += (
            f" The debugger trained it on the logit-adjusted loss ({CLASS_WEIGHTING.field}={LOGIT_ADJUSTED}): the "
            "script alone does not, so add the log of each class's share of the training labels to the scores its "
            "training loss reads (not to those it predicts with) to train the same way without it."
        )
    if run_spec.debugger_robust_loss == GENERALIZED_CROSS_ENTROPY:
        notes += (
            f" The debugger trained it on the generalized cross-entropy ({ROBUST_LOSS.field}="
            f"{GENERALIZED_CROSS_ENTROPY}): the script alone trains on the cross-entropy, so use that loss in the "
            "script (or correct the labels) to train the same way without it."
        )
    return notes


def advice_after(run_spec: RunSpec, labels: LabelFinding, weighted_by_class: bool) -> str:
    """What answers the training labels when no remedy is left: after the robust loss, correcting the labels; after a
    loss weighted by class (``weighted_by_class``), more samples of the rare class; else the finding's own advice."""
    if labels.kind in ROBUST_LOSS_FINDINGS and run_spec.debugger_robust_loss == GENERALIZED_CROSS_ENTROPY:
        return (
            f"the debugger trained on a loss robust to wrong labels ({ROBUST_LOSS.field}={GENERALIZED_CROSS_ENTROPY}) "
            "and the objective is still missed: correcting the training labels is the fix"
        )
    if labels.kind != "imbalanced" or not weighted_by_class:
        return labels.advice
    if run_spec.debugger_class_weighting == LOGIT_ADJUSTED:
        how = f"the debugger trained on the logit-adjusted loss ({CLASS_WEIGHTING.field}={LOGIT_ADJUSTED})"
    elif run_spec.debugger_class_weighting == BALANCED:
        how = f"the debugger weighted the training loss by class ({CLASS_WEIGHTING.field}={BALANCED})"
    else:
        how = f"the training loss was weighted by class (the script's {SCRIPT_CLASS_WEIGHTING} knob at \"balanced\")"
    return (
        f"{how} and the objective is still missed: more training samples of the rare class (or a model that needs "
        "fewer) are the fix"
    )
