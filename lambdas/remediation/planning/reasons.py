"""The planner's last step: the reason a decision gives, rendered from its structured fields and the situation it
was made in (every sentence the planner writes is built here, from the pieces of
``lambdas.remediation.text.decision_text``)."""

from __future__ import annotations

from collections.abc import Mapping

from contracts.debugger_settings import BY_FIELD
from contracts.job import MAX_HYPERPARAMETERS
from contracts.remedies import FAILURE_KINDS, Remedy, show
from contracts.remedy_changes import TIMES_TYPICAL_GRADIENT_NORM
from contracts.rule_selection import DATA_FINDING_MARGIN
from lambdas.remediation.planning.choice import Choice, Skip
from lambdas.remediation.planning.ladders import Ladder, source
from lambdas.remediation.planning.run_limits import Limit
from lambdas.remediation.planning.situation import PlanningSituation, rate_names
from lambdas.remediation.state import loss_settings
from lambdas.remediation.state.attempts import Attempt, Change, Decision
from lambdas.remediation.state.payload import WorkflowState
from lambdas.remediation.state.payload_fields import MAX_REASON_BYTES
from lambdas.remediation.state.validation_messages import clip
from lambdas.remediation.text import loss_text
from lambdas.remediation.text.decision_text import (
    changes_so_far,
    describe_changes,
    ending_settings,
    evidence_numbers,
    headline,
    resume_sentence,
)

#: The list of remedies that did not apply keeps at least this much of itself however long the rest of the reason.
MIN_REMEDY_LIST_CHARACTERS = 80
#: What the list of remedies says of one left out (``choice.Skip.why``).
SKIPPED = {
    "made_it_worse": "not tried again (the objective got worse after it, job {job})",
    "repeats_a_job": "would repeat job {job}'s settings",
    "not_allowed": "not allowed (it changes the training loss)",
    "fixed_hyperparameter": "kept fixed",
    "too_many_hyperparameters": "its job would carry {carried} hyperparameters, more than SageMaker takes ({limit})",
}


def launch_reason(
    state: WorkflowState, situation: PlanningSituation, chosen: Choice, skips: list[Skip], decision: Decision
) -> str:
    """'{what happened}. Remedy 1 of 3 for ExplodingTensor in the evidence remedies, ClipGradients (...), applies
    because ... Not tried again: ... Next: {the changes}. {what the next job does with the checkpoints}'."""
    attempt, base, remedy = situation.attempt, situation.base, chosen.remedy
    what = describe_changes(decision.changes, state.kinds())
    after = resume_sentence(base)[0] if remedy.resume else ""
    if decision.rule_changes:
        after += f" {_rule_changes_sentence(situation, decision.rule_changes)}"
    labels = situation.labels
    also = f" Also: {labels.describe()}." if labels is not None and not remedy.when.training_labels else ""
    back = f" {_back_to_closest(state, base)}; from there:" if situation.planned_from_earlier_job else ""
    passed = [skip for skip in skips if skip.key == chosen.ladder.key and skip.index < chosen.index]
    head = f"{headline(attempt, state)}.{back} "
    middle = f"{_why(state, situation, chosen)}{also}{not_again(situation, passed)}"
    tail = f" Next: {what}.{after}"
    room = MAX_REASON_BYTES - len(head.encode()) - len(tail.encode())
    return head + clip(middle, max(room, MIN_REMEDY_LIST_CHARACTERS)) + tail


def limit_reason(
    state: WorkflowState,
    situation: PlanningSituation,
    remedy: Remedy,
    changes: Mapping[str, Change],
    limit: Limit,
    skips: list[Skip],
) -> str:
    """The run ends at a limit (the relaunch budget, the stack's instance-hours), naming the remedy it would have
    tried, what would answer the training labels when they explain the miss, and a loss change the run does not
    allow that would answer it."""
    labels = situation.labels
    data = f" {_sentence(labels.describe())}: {labels.advice}." if labels is not None else ""
    what = describe_changes(changes, state.kinds())
    return (
        f"{headline(situation.attempt, state)}. {limit.sentence}; the next remedy would have been {remedy.label} "
        f"({what}).{data}{_kept_out(skips)} Ending."
    )


def not_remediable_reason(state: WorkflowState, situation: PlanningSituation) -> str:
    what = FAILURE_KINDS[situation.failure]
    return (
        f"{headline(situation.attempt, state)}. {what[:1].upper()}{what[1:]}: no hyperparameter change can fix it, so "
        "no job is relaunched. Ending; correct the data and start a new run."
    )


def no_remedy_reason(
    state: WorkflowState, situation: PlanningSituation, ladders: list[Ladder], skips: list[Skip]
) -> str:
    """Why the run ends with no remedy left: what the training labels say and what would answer them, or which
    remedies exist for the failure and why none applies now; and a remedy the user's settings kept out."""
    attempt, labels = situation.attempt, situation.labels
    kept_out = _kept_out(skips)
    if labels is not None:
        weighted = any(loss_settings.weighted_by_class(state, earlier) for earlier in state.attempts)
        advice = loss_text.advice_after(state.run_spec, labels, weighted)
        return (
            f"{headline(attempt, state)}. {_sentence(labels.describe())}. No remedy in the {state.policy} remedies "
            f"answers that: {advice}.{not_again(situation, skips)}{kept_out} {ending_settings(state, situation.base)}"
        )
    short = situation.evidence.short_match if situation.failure == "objective_missed" else None
    explained = f" {_sentence(short.sentence)}." if short is not None and not short.labels_suspect else ""
    return _exhausted_reason(state, situation, ladders, skips, explained, kept_out)


def resume_from(base: Attempt) -> str | None:
    """The job whose checkpoints the next one starts from, when it left any (or may have)."""
    return base.job_name if resume_sentence(base)[1] else None


def not_again(situation: PlanningSituation, skips: list[Skip]) -> str:
    """' Not tried again: after LowerLearningRate (job 2), val_acc went from 0.7 to 0.64; RaiseLearningRate would
    repeat job 1's settings.'"""
    facts: dict[str, str] = {}
    for skip in skips:
        if skip.why == "made_it_worse":
            facts.setdefault(skip.remedy.label, situation.worse[skip.remedy.label].fact)
    for skip in skips:
        if skip.why == "repeats_a_job":
            facts.setdefault(skip.remedy.label, f"{skip.remedy.label} would repeat job {skip.job}'s settings")
    allowed = [
        f"{skip.remedy.label} would change {_labels(skip.remedy)}, which fixed_hyperparameters keeps"
        for skip in skips if skip.why == "fixed_hyperparameter"
    ]  # fmt: skip
    allowed += [
        f"{skip.remedy.label} would make the job carry {skip.carried} hyperparameters, more than SageMaker takes "
        f"({MAX_HYPERPARAMETERS}): keep fewer run_spec.hyperparameters or select fewer rules"
        for skip in skips if skip.why == "too_many_hyperparameters"
    ]  # fmt: skip
    said = f" Not tried again: {'; '.join(facts.values())}." if facts else ""
    return said + (f" Not tried: {'; '.join(dict.fromkeys(allowed))}." if allowed else "")


def _kept_out(skips: list[Skip]) -> str:
    """A remedy that would answer the failure but changes the training loss, which the run does not allow: said, with
    how to allow it."""
    for skip in skips:
        if skip.why == "not_allowed":
            return (
                f" {skip.remedy.label} would answer it, but it changes the training loss ({_labels(skip.remedy)}), "
                "which this run does not allow: set allow_loss_changes to true in the run_spec to let the product "
                "try it."
            )
    return ""


def _described(change, situation: PlanningSituation) -> str:
    """The change in words, with the measurement it is scaled to: 'set grad_clip to 2 times the total gradient norm's
    typical size before it spiked (3700 in job 2)'."""
    typical = situation.evidence.typical_gradient_norm
    if change.operation != TIMES_TYPICAL_GRADIENT_NORM or typical is None:
        return change.describe()
    return f"{change.describe()} ({show(float(f'{typical:.4g}'))} in job {situation.base.number})"


def _why(state: WorkflowState, situation: PlanningSituation, chosen: Choice) -> str:
    """'Remedy 1 of 2 for ExplodingTensor in the declared remedies, ClipGradients (set grad_clip to 1), applies
    because ... Note. Evidence: ...'; for the evidence set's remedies on a learning rate, the range it judged in."""
    remedy, ladder = chosen.remedy, chosen.ladder
    described = " and ".join(_described(change, situation) for change in remedy.changes())
    label = f"{remedy.name} ({described})" if remedy.name else described
    sentence = f"Remedy {chosen.index + 1} of {len(ladder.remedies)} for {ladder.key} in {source(state)}, {label}, applies"
    if chosen.facts:
        sentence += f" because {' and '.join(fact.text for fact in chosen.facts)}"
    sentence += "."
    if remedy.note:
        sentence += f" {remedy.note}"
    if remedy.changes_the_loss:
        sentence += " It changes the training loss, which this run allows."
    touched = set(remedy.settings()) | set(remedy.when.hyperparameter_names())
    if state.policy == "evidence" and touched & rate_names(state):
        sentence += f" Rates judged in {situation.rates.describe()}."
    if situation.failure not in FAILURE_KINDS:
        sentence += f" Evidence: {evidence_numbers(situation.base)}."
    return sentence


def _exhausted_reason(
    state: WorkflowState,
    situation: PlanningSituation,
    ladders: list[Ladder],
    skips: list[Skip],
    labels_considered: str,
    kept_out: str,
) -> str:
    """Which remedies exist for this failure and why none applies now, with the numbers. The list of remedies is what
    is shortened to fit a reason's size: the settings the run ends with, and why a remedy was not repeated or was
    kept out, are kept whole."""
    settings, evidence = situation.settings, situation.evidence
    skipped = {(skip.key, skip.index): skip for skip in skips}
    lines, guarded, held = [], [], []
    for ladder in ladders:
        for index, remedy in enumerate(ladder.remedies):
            skip = skipped.get((ladder.key, index))
            if skip is not None:
                why = SKIPPED[skip.why].format(job=skip.job, carried=skip.carried, limit=MAX_HYPERPARAMETERS)
                held.append(f"{ladder.key}: {remedy.label}: {why}")
                continue
            holds, _ = remedy.when.check(evidence, settings)
            guard = None if holds else remedy.when.guarded_against(evidence, settings)
            if guard is not None:  # what the job showed against it: said first, so a clipped list keeps it
                guarded.append(f"{ladder.key}: {remedy.label}: not now, {guard}")
                continue
            if not holds:
                lines.append(f"{ladder.key}: {remedy.label}: its condition {remedy.when.to_json()} does not hold")
            else:  # its condition held and something else kept it out: said before the conditions that did not hold
                held.append(f"{ladder.key}: {remedy.label}: {remedy.why_not(settings, evidence)}")
    lines = list(dict.fromkeys(guarded + held + lines))  # a remedy in the ladder twice is said once
    failure = situation.failure
    if not ladders:
        # a failure kind says what it is (and, for a batch of one, what avoids it in the script)
        what = f"no remedies are declared for {failure}" + (
            f" ({FAILURE_KINDS[failure]})" if failure in FAILURE_KINDS else " or *"
        )
    else:
        what = f"no remedy left ({'; '.join(lines)})"
    head = f"{headline(situation.attempt, state)}. "
    tail = (
        f".{labels_considered}{not_again(situation, skips)}{kept_out}{changes_so_far(state)} "
        f"{ending_settings(state, situation.base)}"
    )
    room = MAX_REASON_BYTES - len(head.encode()) - len(tail.encode())
    return head + clip(what[:1].upper() + what[1:], max(room, MIN_REMEDY_LIST_CHARACTERS)) + tail


def _rule_changes_sentence(situation: PlanningSituation, rule_changes: Mapping[str, Change]) -> str:
    evidence = situation.evidence
    name, change = next(iter(rule_changes.items()))
    rule, parameter = name.split(".", 1)
    return (
        f"{rule}'s {evidence.issue_kind} ({show(evidence.issue_value)}) describes the data, which this remedy allows "
        f"for but does not change, so the next job's {rule} gets {parameter}={change.after} "
        f"({DATA_FINDING_MARGIN:g} x the measured value) and judges the training only."
    )


def _back_to_closest(state: WorkflowState, base: Attempt) -> str:
    return (
        f"Back to job {base.number}'s settings, the closest to the objective so far "
        f"({state.declared_objective().metric_name} = {show(base.objective_value)})"
    )


def _labels(remedy: Remedy) -> str:
    names = [f"the debugger's {BY_FIELD[name].name}" if name in BY_FIELD else name for name in remedy.settings()]
    return " and ".join(dict.fromkeys(names))


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]
