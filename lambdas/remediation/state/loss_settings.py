"""How a job computed its training loss, as the planner's conditions read it: corrected for class frequencies (by the
debugger in the job, or by the script's own knob), or on the debugger's loss robust to wrong labels. Read from the
debugger settings each attempt ran with (``Attempt.debugger_settings``, ``contracts.debugger_settings``)."""

from __future__ import annotations

from contracts.debugger_settings import BALANCED, CLASS_WEIGHTING, GENERALIZED_CROSS_ENTROPY, ROBUST_LOSS
from lambdas.remediation.state.attempts import Attempt
from lambdas.remediation.state.payload import WorkflowState

#: The conventional name of a script's own class-weighting knob (hyperparameter_names maps it to the script's).
SCRIPT_CLASS_WEIGHTING = "class_weighting"


def weighted_by_class(state: WorkflowState, attempt: Attempt) -> bool:
    """Whether ``attempt`` trained on a loss corrected for class frequencies: by the debugger in the job (balanced
    weights or the logit-adjusted loss), or by the script's own ``class_weighting`` knob (by the script's name for it)
    set to "balanced"."""
    knob = state.hyperparameter_names.get(SCRIPT_CLASS_WEIGHTING, SCRIPT_CLASS_WEIGHTING)
    debugger = attempt.debugger_settings.get(CLASS_WEIGHTING.field, CLASS_WEIGHTING.default)
    return debugger != CLASS_WEIGHTING.default or attempt.hyperparameters.get(knob) == BALANCED


def robust_to_wrong_labels(attempt: Attempt) -> bool:
    """Whether ``attempt`` trained on the debugger's loss robust to wrong labels (the generalized cross-entropy)."""
    return attempt.debugger_settings.get(ROBUST_LOSS.field) == GENERALIZED_CROSS_ENTROPY
