"""Which of the debugger's changes to a script's training loss each job ran with, and how the next job goes back to
the loss of the job it is planned from.

The planner turns the debugger's robust loss (``in_job_robust_loss``) or class weighting (``in_job_class_weighting``)
on by setting a run_spec field. A job the planner goes back to (the closest to the objective so far) may have run
without it: "back to job 1's settings" then means job 1's loss too, or the next remedy would be judged on a loss that
made things worse (development seed 34, configuration 2: an SGD CNN scored 0.889, 0.197 on the robust loss, and 0.103
when smaller steps were taken from job 1's hyperparameters with the robust loss still on). The field goes to "off",
not back to "auto", so the planner does not turn it on again; the decision's changes say so.

Each job's value is read back from the decisions: the run_spec holds what the next job runs (the last job's, until
the planner decides after it), and the decision after job k lists what job k + 1 ran differently
(``Decision.changes``, before and after).
"""

from __future__ import annotations

from contracts.run_spec import AUTO, BALANCED_CLASS_WEIGHTING, IN_JOB_CLASS_WEIGHTINGS, OFF
from lambdas.remediation.planning import in_job_class_weighting, in_job_robust_loss
from lambdas.remediation.state.attempts import Attempt, Change
from lambdas.remediation.state.payload import WorkflowState

#: The planner's in-job loss changes: each names the run_spec FIELD it sets and gives the sentence a met objective
#: ends with when it was on (``success_note``).
IN_JOB_CHANGES = (in_job_class_weighting, in_job_robust_loss)


def success_notes(state: WorkflowState) -> str:
    """What a run that met its objective says of each loss change the debugger made in its job."""
    return "".join(change.success_note(state.run_spec) for change in IN_JOB_CHANGES)


def ran_with(state: WorkflowState, attempt: Attempt) -> dict[str, str]:
    """The in-job loss fields as ``attempt`` ran them (field -> value)."""
    values = {change.FIELD: getattr(state.run_spec, change.FIELD) for change in IN_JOB_CHANGES}
    for later in reversed(state.attempts):
        if later.number < attempt.number:
            break
        if later.decision is None:  # the attempt being planned: the run_spec is what it ran
            continue
        for field in values:
            changed = later.decision.changes.get(field)
            if changed is not None and isinstance(changed.before, str):
                values[field] = changed.before
    return values


def weighted_by_class(state: WorkflowState, attempt: Attempt) -> bool:
    """Whether ``attempt`` trained on a loss corrected for class frequencies: by the debugger in the job (balanced
    weights or the logit-adjusted loss), or by the script's own ``class_weighting`` knob (by the script's name for it)
    set to "balanced"."""
    knob = state.hyperparameter_names.get(in_job_class_weighting.SCRIPT_KNOB)
    return (
        ran_with(state, attempt)[in_job_class_weighting.FIELD] in IN_JOB_CLASS_WEIGHTINGS
        or (knob is not None and attempt.hyperparameters.get(knob) == BALANCED_CLASS_WEIGHTING)
    )


def robust_to_wrong_labels(state: WorkflowState, attempt: Attempt) -> bool:
    """Whether ``attempt`` trained on the debugger's loss robust to wrong labels (the generalized cross-entropy)."""
    return ran_with(state, attempt)[in_job_robust_loss.FIELD] == in_job_robust_loss.AFTER


def back_to(state: WorkflowState, base: Attempt) -> dict[str, Change]:
    """The in-job loss fields the next job must change to train its loss as ``base`` did (none when it does)."""
    then = ran_with(state, base)
    changes = {}
    for field, value in then.items():
        now = getattr(state.run_spec, field)
        if now != value:
            changes[field] = Change(before=now, after=OFF if value == AUTO else value)
    return changes
