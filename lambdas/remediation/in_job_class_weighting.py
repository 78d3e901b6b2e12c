"""The planner's answer to a class too rare in a PyTorch script's training labels when no remedy of the script's
own answers it (it has no class-weighting argument mapped as ``class_weighting``): the next job's debugger weights
the script's training cross-entropy by class (``debugger.hook.class_weighting``). The run_spec's
``debugger_class_weighting`` goes from "auto" to "balanced"; a user who sets "off" keeps the loss as the script writes
it, and one who sets "balanced" has it weighted from the first job.

It is the product changing how the user's loss counts each class, so the reason says so, and says how to switch it
off. A job already weighted that still misses trains longer while its held-out metric still rose at the end
(the evidence remedies' TrainLongerOnRareClass); otherwise it ends the run: the rare class needs more samples.

Measured before building it (development seeds 20-22 of bench/zoo_random.py, a class kept at 2% of its samples,
each script alone with the weights of ``debugger.hook.class_weighting``): 4 of 11 configurations that missed their
objective met it weighted. None that met it unweighted fell below it.
"""

from __future__ import annotations

from collections.abc import Mapping

from contracts.run_spec import BALANCED_CLASS_WEIGHTING, DEFAULT_CLASS_WEIGHTING
from contracts.training_labels import LabelFinding
from lambdas.remediation.run_spec_model import RunSpec

REMEDY = "WeightClassesInJob"
FIELD = "debugger_class_weighting"
AFTER = BALANCED_CLASS_WEIGHTING
IMBALANCED = "imbalanced"
#: The conventional name of a script's own class-weighting knob (hyperparameter_names maps it to the script's).
SCRIPT_KNOB = "class_weighting"


def answers(run_spec: RunSpec, labels: LabelFinding, hyperparameter_names: Mapping[str, str]) -> bool:
    """Whether the next job should weight the loss in the job: imbalanced labels, a PyTorch script with no
    class-weighting knob of its own (none mapped as ``class_weighting``: the evidence remedies weight through it, and
    weighting the loss twice, or again after the script's own weighting missed, answers nothing new), and the run_spec
    leaves it to the product ("auto")."""
    return (
        labels.kind == IMBALANCED
        and run_spec.framework == "pytorch"
        and SCRIPT_KNOB not in hyperparameter_names
        and run_spec.debugger_class_weighting == DEFAULT_CLASS_WEIGHTING
    )


def explanation() -> str:
    """What the next job does and how to switch it off."""
    return (
        "The script has no class-weighting argument of its own (none is mapped as class_weighting in "
        "hyperparameter_names), so the next job's debugger weights its training loss by class: each class's "
        "cross-entropy by the inverse of its share of the training labels, as scikit-learn's \"balanced\" does. "
        f"Evaluation keeps the plain loss. Set run_spec.{FIELD} to \"off\" to keep the loss as the script writes it"
    )


def advice_after(run_spec: RunSpec, labels: LabelFinding, weighted: bool) -> str:
    """What answers a rare class once a job of the run trained on a loss weighted by class (``weighted``: by the
    debugger, or by the script's own knob) and the objective is still missed."""
    if labels.kind != IMBALANCED or not weighted:
        return labels.advice
    how = (
        f"the debugger weighted the training loss by class ({FIELD}=balanced)"
        if run_spec.debugger_class_weighting == BALANCED_CLASS_WEIGHTING
        else f"the training loss was weighted by class (the script's {SCRIPT_KNOB} knob at \"balanced\")"
    )
    return (
        f"{how} and the objective is still missed: more training samples of the rare class (or a model that needs "
        "fewer) are the fix"
    )


def success_note(run_spec: RunSpec) -> str:
    """Said with a met objective: the job's loss was weighted by the debugger, which the script alone does not do."""
    if run_spec.debugger_class_weighting != BALANCED_CLASS_WEIGHTING:
        return ""
    return (
        f" The debugger weighted its training loss by class ({FIELD}=balanced): the script alone trains unweighted, "
        "so give it class weights (inverse class frequency) to train the same way without it."
    )
