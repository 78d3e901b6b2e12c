"""The planner's answer to training labels that look wrong in a PyTorch script: the next job's debugger trains the
script on the generalized cross-entropy, a loss robust to wrong labels (``debugger.loss_patches.robust_loss``), in place of
its cross-entropy. The run_spec's ``debugger_robust_loss`` goes from "auto" to "generalized_cross_entropy"; a user
who sets "off" keeps the loss as the script writes it, and one who sets "generalized_cross_entropy" has it from the
first job.

It comes before every remedy that answers what the labels say (``when: training_labels`` noisy or memorised: the
script's weight decay and dropout, smaller steps), after those that name another cause (stopping at the epoch that
met the objective, inputs left raw, a sigmoid stack), and the relaunch trains from step 0 with the settings of the
job closest to the objective. Later launches planned from a job that trained on it keep it (the ladder goes on:
stopping at its best epoch, smaller steps); one planned from a job without it switches it off
(``lambdas.remediation.planning.in_job_loss``). It is the product changing the user's loss, so the reason says so and says how
to switch it off.

Measured before building it (development seeds 30-39 of bench/zoo_random.py: the 59 configurations drawn with 40%
or 60% of their training labels drawn at random, each trained alone in a standalone copy of its script's model,
optimizer and data, a probe not kept in the repository): of the 39 that missed their objective with the
cross-entropy, 27 met it on the generalized cross-entropy, against 9 at a third of the rate
(SmallerStepsOnNoisyLabels), 0 with weight decay 1e-4 and 2 with 1e-3, hence before the script's own regularisers.
Of the 20 that met it with the cross-entropy, 5 fell below it, all under SGD: the loss's gradient is the
cross-entropy's times p ** 0.7, about a fifth of it while every class is equally likely, so training starts slower
(since kept at the cross-entropy's scale: debugger.loss_patches.robust_loss, 1 of 20 fell then). Hence only after a miss,
not from the first job. A model that learns clean labels by heart (digits, 150 to 400
training samples, 40 epochs, 12 drawn configurations) scored about the same held out with either: weight decay 1e-3
from -0.008 to +0.015 against the plain loss, the generalized cross-entropy from -0.013 to +0.023.

When a job's held-out metric fell from an earlier best while it trained (``objective_past_peak``) and no other remedy
is left, the robust loss is the last one tried before the run ends: of those 39 misses, the 22 whose held-out
accuracy had fallen so scored higher on the generalized cross-entropy, 19 of them meeting the objective; two
random-zoo configurations of development seeds 33 and 34 (a plain logline script, 40% of its labels wrong, the
model's match with its training labels still rising: no label finding) had ended after their first job with no
remedy left, and met it so in the full loop.
"""

from __future__ import annotations

from contracts.run_spec import DEFAULT_ROBUST_LOSS, GENERALIZED_CROSS_ENTROPY
from contracts.training_labels import LabelFinding
from lambdas.remediation.state.run_spec import RunSpec

REMEDY = "RobustLossInJob"
FIELD = "debugger_robust_loss"
AFTER = GENERALIZED_CROSS_ENTROPY
#: What the training labels say when this answers them (contracts.training_labels): many look wrong, or the model
#: learns them by heart.
FINDINGS = ("noisy", "memorised")


def answers(run_spec: RunSpec, labels: LabelFinding) -> bool:
    """Whether the next job should train on the robust loss: labels that look wrong, and it applies (below)."""
    return labels.kind in FINDINGS and applies(run_spec)


def applies(run_spec: RunSpec) -> bool:
    """A PyTorch script, and the run_spec leaves the loss to the product ("auto")."""
    return run_spec.framework == "pytorch" and run_spec.debugger_robust_loss == DEFAULT_ROBUST_LOSS


def past_peak_sentence() -> str:
    """Why a held-out metric that fell from an earlier best is answered by the robust loss, when nothing else is."""
    return (
        "Learning what does not carry over to held-out data is what wrong training labels make a model do, and no "
        "other remedy is left"
    )



def short_match_sentence() -> str:
    """Why a match short of held out, under the bound that names wrong labels, is answered by the robust loss, when
    nothing else is."""
    return "Wrong training labels are the likeliest cause left, and no other remedy is left"


def explanation() -> str:
    """What the next job does and how to switch it off."""
    return (
        "The next job's debugger trains the script on the generalized cross-entropy (Zhang and Sabuncu, NeurIPS "
        "2018, q=0.7) in place of its cross-entropy: a sample whose label the model finds unlikely, as most wrong "
        "labels are once the right ones are learnt, pulls the weights less. Evaluation keeps the plain loss. Set "
        f"run_spec.{FIELD} to \"off\" to keep the loss as the script writes it"
    )


def advice_after(run_spec: RunSpec, labels: LabelFinding) -> str | None:
    """What answers wrong labels once the debugger has trained on the robust loss and the objective is still missed;
    None when it has not."""
    if labels.kind in FINDINGS and run_spec.debugger_robust_loss == GENERALIZED_CROSS_ENTROPY:
        return (
            f"the debugger trained on a loss robust to wrong labels ({FIELD}={GENERALIZED_CROSS_ENTROPY}) and the "
            "objective is still missed: correcting the training labels is the fix"
        )
    return None


def success_note(run_spec: RunSpec) -> str:
    """Said with a met objective: the job trained on the debugger's robust loss, which the script alone does not."""
    if run_spec.debugger_robust_loss != GENERALIZED_CROSS_ENTROPY:
        return ""
    return (
        f" The debugger trained it on the generalized cross-entropy ({FIELD}={GENERALIZED_CROSS_ENTROPY}): the "
        "script alone trains on the cross-entropy, so use that loss in the script (or correct the labels) to train "
        "the same way without it."
    )
