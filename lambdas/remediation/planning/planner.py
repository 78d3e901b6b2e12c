"""The planner: after an attempt, which hyperparameters to change for the next launch, and why.

It applies the remedies the run declared (``contracts.remedies``): for the rule
that fired (or the failure kind, e.g. ``objective_missed``), the first remedy
in order whose condition holds on the debugger's evidence and whose change
applies within its bounds. Every decision states its reason with the numbers.

The built-in remedy sets (``evidence``, ``anchor``) are written in that same form
(``lambdas.remediation.planning.remedies.sets``) and copied into the state when the execution starts.

:func:`plan` records the decision on the last attempt and either sets
``next_action="launch_new"`` with the new run_spec (the sample's history
counters incremented) or ``next_action="end"`` with ``end_reason``. It ends when
the launch budget is spent: as in the AWS sample, ``num_retraining`` counts every launch (the train step
increments it) and no launch is planned once it reaches ``max_num_retraining``. Pure: no AWS calls.
"""

from __future__ import annotations

import dataclasses
import math

from contracts import rule_selection
from contracts.hyperparameter_values import Value
from contracts.remedies import (
    ANY_RULE,
    FAILURE_KINDS,
    NOT_REMEDIABLE,
    OBJECTIVE_MISSED,
    Remedy,
    Situation,
    show,
)
from lambdas.remediation.planning import in_job_class_weighting, in_job_loss, in_job_robust_loss, run_limits
from lambdas.remediation.planning.diagnosis import (
    attempt_to_plan_from,
    failure_of,
    rate_names,
    rate_range,
    remedies_that_made_it_worse,
    situation_to_plan_from,
)
from lambdas.remediation.planning.learning_rate_ranges import RateRange
from lambdas.remediation.planning.remedies import sets as remedy_sets
from lambdas.remediation.state.attempts import Attempt, Change, Decision
from lambdas.remediation.state.payload import WorkflowState
from lambdas.remediation.text.decision_text import (
    describe_changes,
    ending_settings,
    evidence_numbers,
    exhausted_reason,
    headline,
    outcome_reason,
    resume_sentence,
    short_action,
)

__all__ = ["HISTORY_COUNTERS", "NO_REMEDY", "PlanningError", "plan", "remedy_ladders", "short_action"]

NO_REMEDY = "none"

#: The AWS sample's history counters, by the example's hyperparameter they count.
HISTORY_COUNTERS = {
    "warmup_learning_rate": "num_warmup_adjustments",
    "add_batch_norm": "num_batch_layer_adjustments",
    "learning_rate": "num_learning_rate_adjustments",
}


class PlanningError(ValueError):
    """plan() was called on a state it cannot plan from; the message says what is missing."""


# --------------------------------------------------------------------------- planning


def plan(state: WorkflowState) -> WorkflowState:
    """Decide after the last attempt: relaunch with new hyperparameters, or end with a reason."""
    attempt = state.last_attempt
    if attempt is None:
        raise PlanningError("attempts: plan needs a finished attempt; the state has none (launch a job first)")
    if attempt.outcome == "running":
        raise PlanningError(
            f"attempts[-1].outcome: job {attempt.job_name} is still running; the monitor decides when to plan"
        )
    if attempt.outcome == "max_runtime_exceeded":
        return run_limits.continue_after_max_runtime(state, attempt)
    if attempt.outcome != "issues_found" and attempt.outcome not in FAILURE_KINDS:
        return _end(state, outcome_reason(state, attempt), end_cause=attempt.outcome)

    failure = failure_of(attempt)
    if failure in NOT_REMEDIABLE:
        reason = (
            f"{headline(attempt, state)}. {FAILURE_KINDS[failure][:1].upper()}{FAILURE_KINDS[failure][1:]}: no "
            "hyperparameter change can fix it, so no job is relaunched. Ending; correct the data and start a new run."
        )
        return _end(state, reason, end_cause=failure)
    rates = rate_range(state)
    ladders = remedy_ladders(state, failure, rates)
    base = attempt_to_plan_from(state, attempt, failure)
    situation = situation_to_plan_from(state, base, attempt)
    # A quiet miss the training labels explain: only a remedy that names a cause in the run (a setting, or the labels
    # themselves) answers it; the loss's course would only send more epochs or another rate after the data.
    labels = situation.labels if failure == OBJECTIVE_MISSED else None
    hyperparameters = base.hyperparameters if base is not attempt else state.run_spec.hyperparameters
    worse = remedies_that_made_it_worse(state)
    tried = [attempt.hyperparameters for attempt in state.attempts]
    repeats: dict[str, int] = {}
    chosen = None
    for key, ladder in ladders:
        for index, remedy in enumerate(ladder):
            if remedy.label in worse or (labels is not None and not remedy.when.names_a_cause):
                continue
            holds, facts = remedy.when.check(situation, hyperparameters)
            updated = remedy.apply(hyperparameters, situation) if holds else None
            if updated is not None and updated in tried:  # a job already ran these settings: no circles
                repeats.setdefault(remedy.label, next(a.number for a in state.attempts if a.hyperparameters == updated))
                continue
            if updated is not None:
                chosen = (key, ladder, index, remedy, facts, updated)
                break
        if chosen is not None:
            break
    end_cause = failure if failure in FAILURE_KINDS else "no_remedy_left"
    # The debugger's own answers to the labels, in the job: a robust loss before the remedies that answer wrong labels
    # with a regulariser or smaller steps, class weighting once no remedy of the script's own answers a rare class
    # (balanced weights, then the logit-adjusted loss: in_job_class_weighting).
    robust = LossChange(in_job_robust_loss.REMEDY, in_job_robust_loss.FIELD, in_job_robust_loss.AFTER,
                        in_job_robust_loss.explanation())
    if labels is not None and in_job_robust_loss.answers(state.run_spec, labels) and (
        chosen is None or set(chosen[3].when.training_labels) & set(in_job_robust_loss.FINDINGS)
    ):
        return _change_the_loss_in_job(state, attempt, _sentence(labels.describe()), hyperparameters, base, robust)
    weighting = in_job_class_weighting.next_weighting(state, labels) if chosen is None and labels is not None else None
    if weighting is not None:
        correction = LossChange(in_job_class_weighting.REMEDIES[weighting], in_job_class_weighting.FIELD, weighting,
                                in_job_class_weighting.explanation(weighting))
        return _change_the_loss_in_job(state, attempt, _sentence(labels.describe()), hyperparameters, base, correction)
    last_resort = chosen is None and failure == OBJECTIVE_MISSED and in_job_robust_loss.applies(state.run_spec)
    if last_resort and situation.past_peak:
        finding = f"{_sentence(situation.describe_peak())}. {in_job_robust_loss.past_peak_sentence()}"
        return _change_the_loss_in_job(state, attempt, finding, hyperparameters, base, robust)
    short = situation.short_match if labels is None and failure == OBJECTIVE_MISSED else None
    if last_resort and short is not None and short.labels_suspect:
        finding = f"{_sentence(short.sentence)}. {in_job_robust_loss.short_match_sentence()}"
        return _change_the_loss_in_job(state, attempt, finding, hyperparameters, base, robust)
    if chosen is None and labels is not None:
        weighted = any(in_job_loss.weighted_by_class(state, earlier) for earlier in state.attempts)
        advice = in_job_robust_loss.advice_after(state.run_spec, labels) or in_job_class_weighting.advice_after(
            state.run_spec, labels, weighted
        )
        reason = (
            f"{headline(attempt, state)}. {_sentence(labels.describe())}. No remedy in the {state.policy} remedies "
            f"answers that: {advice}."
            f"{_not_again(worse, repeats)} {ending_settings(state, base)}"
        )
        return _end(state, reason, end_cause=end_cause)
    if chosen is None:
        explained = short is not None and not short.labels_suspect
        reason = exhausted_reason(
            state, attempt, failure, ladders, situation, ANY_RULE, FAILURE_KINDS, hyperparameters, closest=base,
            not_again=_not_again(worse, repeats), labels_considered=f" {_sentence(short.sentence)}." if explained else "",
        )
        return _end(state, reason, end_cause=end_cause)

    key, ladder, index, remedy, facts, updated = chosen
    loss_back = in_job_loss.back_to(state, base) if base is not attempt else {}
    changes = {**_hyperparameter_changes(state, updated), **loss_back}
    what = describe_changes(changes, state.kinds())
    # A run that ends here while its training labels explain the miss still says so, with what would answer it.
    data = f" {_sentence(labels.describe())}: {labels.advice}." if labels is not None else ""
    ended = _ended_at_a_limit(state, attempt, remedy.label, what, data)
    if ended is not None:
        return ended

    after, resumable = resume_sentence(base) if remedy.resume else ("", False)
    run_spec = state.run_spec.with_hyperparameters(updated).with_changes(
        {field: change.after for field, change in loss_back.items()}
    )
    answered = answered_data_finding(state, failure, situation) if key == failure else None  # not by "*"
    if answered is not None:
        rules, sentence = answered
        run_spec = run_spec.with_rules(rules)
        after += f" {sentence}"
    passed = {item.label for item in ladder[:index]}
    not_again = _not_again(
        {label: fact for label, fact in worse.items() if label in passed},
        {label: number for label, number in repeats.items() if label in passed},
    )
    also = f" Also: {labels.describe()}." if labels is not None and not remedy.when.training_labels else ""
    back = f" {_back_to_closest(state, base)}; from there:" if base is not attempt else ""
    reason = (
        f"{headline(attempt, state)}.{back} {_why(state, key, failure, ladder, index, remedy, facts, base, rates)}"
        f"{also}{not_again} Next: {what}.{after}"
    )
    decision = Decision(
        remedy=remedy.label,
        reason=reason,
        next_action="launch_new",
        changes=changes,
        resume_from=base.job_name if resumable else None,
    )
    history = state.history.model_copy(deep=True)
    for name in changes:
        counter = HISTORY_COUNTERS.get(name)
        if counter:
            setattr(history, counter, getattr(history, counter) + 1)
        history.num_hyperparameter_adjustments[name] = history.num_hyperparameter_adjustments.get(name, 0) + 1
    planned = state.with_last_attempt(decision=decision)
    return planned.updated(run_spec=run_spec, history=history, next_action="launch_new", end_reason=None)


@dataclasses.dataclass(frozen=True)
class LossChange:
    """A change the debugger makes to the script's training loss in the next job: the decision's remedy name, the
    run_spec field it sets, the value it sets, and what the reason says it does (``in_job_robust_loss`` for labels
    that look wrong, ``in_job_class_weighting`` for a rare class)."""

    remedy: str
    field: str
    after: str
    explanation: str


def _change_the_loss_in_job(
    state: WorkflowState,
    attempt: Attempt,
    finding: str,
    hyperparameters: dict[str, Value],
    base: Attempt,
    change: LossChange,
) -> WorkflowState:
    """Relaunch with the debugger changing the script's training loss, from step 0, with the settings of the job
    closest to the objective so far."""
    what = f"{change.field} {getattr(state.run_spec, change.field)} -> {change.after}"
    loss_back = in_job_loss.back_to(state, base) if base is not attempt else {}
    loss_back.pop(change.field, None)
    if loss_back:
        what += f", {describe_changes(loss_back)}"
    ended = _ended_at_a_limit(state, attempt, change.remedy, what, f" {finding}.")
    if ended is not None:
        return ended
    turned_on = Change(before=getattr(state.run_spec, change.field), after=change.after)
    changes = {**_hyperparameter_changes(state, hyperparameters), **loss_back, change.field: turned_on}
    back = f" {_back_to_closest(state, base)}." if base is not attempt else ""
    reason = (
        f"{headline(attempt, state)}. {finding}.{back} {change.explanation}. "
        f"Next: {what}, trained from step 0."
    )
    decision = Decision(remedy=change.remedy, reason=reason, next_action="launch_new", changes=changes)
    run_spec = state.run_spec.with_hyperparameters(hyperparameters).with_changes(
        {**{field: back.after for field, back in loss_back.items()}, change.field: change.after}
    )
    planned = state.with_last_attempt(decision=decision)
    return planned.updated(run_spec=run_spec, next_action="launch_new", end_reason=None)


def _hyperparameter_changes(state: WorkflowState, updated: dict[str, Value]) -> dict[str, Change]:
    """Each hyperparameter the next job runs differently, before and after."""
    current = state.run_spec.hyperparameters
    return {
        name: Change(before=current.get(name), after=value) for name, value in updated.items()
        if current.get(name) != value
    }  # fmt: skip


def _ended_at_a_limit(state: WorkflowState, attempt: Attempt, remedy: str, what: str, data: str) -> WorkflowState | None:
    """The run ended, naming the remedy it would have tried, when the relaunch budget or the stack's instance-hours
    guardrail leaves no launch; else None. ``data``: what the training labels say, as a sentence (or "")."""
    if state.retraining_budget_left == 0:
        reason = (
            f"{headline(attempt, state)}. The relaunch budget is spent ({_launches(state.history.num_retraining)} "
            f"of max_num_retraining={state.max_num_retraining}); the next remedy would have been "
            f"{remedy} ({what}).{data} Ending."
        )
        return _end(state, reason, end_cause="budget_spent")
    spent = run_limits.instance_hours_spent(state)
    if spent:
        reason = f"{headline(attempt, state)}. {spent}; the next remedy would have been {remedy} ({what}).{data} Ending."
        return _end(state, reason, end_cause="instance_hours_spent")
    return None


def _back_to_closest(state: WorkflowState, base: Attempt) -> str:
    return (
        f"Back to job {base.number}'s settings, the closest to the objective so far "
        f"({state.declared_objective().metric_name} = {show(base.objective_value)})"
    )


def _not_again(worse: dict[str, str], repeats: dict[str, int]) -> str:
    """' Not tried again: after LowerLearningRate (job 2), val_acc went from 0.7 to 0.64; RaiseLearningRate would
    repeat job 1's settings.'"""
    facts = [*worse.values(), *(f"{label} would repeat job {number}'s settings" for label, number in repeats.items())]
    return f" Not tried again: {'; '.join(facts)}." if facts else ""


def answered_data_finding(state: WorkflowState, failure: str, situation: Situation) -> tuple[list[dict], str] | None:
    """(the next job's rules, a sentence saying why) when the remedy just chosen, one of the rule's own, answers a
    finding about the data (``contracts.rule_selection.DATA_FINDING_BOUNDS``): the rule's bound goes above the
    measured value, so the next job is judged on its training, not stopped again on the data the remedy already
    allows for. A remedy for any rule ("*") does not answer it."""
    parameter = rule_selection.DATA_FINDING_BOUNDS.get((failure, situation.issue_kind))
    measured = situation.issue_value
    if parameter is None or measured is None or not math.isfinite(measured):
        return None
    watching = state.run_spec.watching_rules()
    if failure not in {rule["name"] for rule in watching}:
        return None  # a finding recorded for a rule this run does not select: there is no bound to move
    bound = f"{measured * rule_selection.DATA_FINDING_MARGIN:.3g}"
    rules = rule_selection.with_rule_parameter(watching, failure, parameter, bound)
    sentence = (
        f"{failure}'s {situation.issue_kind} ({show(measured)}) describes the data, which this remedy allows for "
        f"but does not change, so the next job's {failure} gets {parameter}={bound} "
        f"({rule_selection.DATA_FINDING_MARGIN:g} x the measured value) and judges the training only."
    )
    return rules, sentence


def remedy_ladders(
    state: WorkflowState, failure: str, rates: RateRange | None = None
) -> list[tuple[str, tuple[Remedy, ...]]]:
    """The remedy list for the failure: its own, else (for a rule with none of its own) the any-rule list; a
    failure kind (objective missed, out of memory) has only its own. The evidence set judges learning rates in
    ``rates``, the range of the optimizer the job stepped (default: the run's, :func:`diagnosis.rate_range`).
    A rule's own list replaces the any-rule list: remedies that fit one failure can hurt another (lowering
    the learning rate answers an explosion, not vanishing gradients)."""
    preset = None
    if state.policy == "evidence":
        preset = remedy_sets.evidence_remedies(rates or rate_range(state))
    remedies = state.declared_remedies(preset)
    if remedies.get(failure):
        return [(failure, remedies[failure])]
    if failure not in FAILURE_KINDS and remedies.get(ANY_RULE):
        return [(ANY_RULE, remedies[ANY_RULE])]
    return []


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _launches(count: int) -> str:
    return f"{count} launch{'' if count == 1 else 'es'}"


def _why(
    state: WorkflowState,
    key: str,
    failure: str,
    ladder: tuple[Remedy, ...],
    index: int,
    remedy: Remedy,
    facts: list[str],
    attempt: Attempt,
    rates: RateRange,
) -> str:
    """'Remedy 1 of 2 for ExplodingTensor in the declared remedies, ClipGradients (set grad_clip to 1), applies
    because ... Note. Evidence: ...'; for the evidence set's remedies on a learning rate, the range it judged in."""
    source = "the AWS sample's ladder" if state.policy == "anchor" else f"the {state.policy} remedies"
    described = " and ".join(change.describe() for change in remedy.changes())
    label = f"{remedy.name} ({described})" if remedy.name else described
    sentence = f"Remedy {index + 1} of {len(ladder)} for {key} in {source}, {label}, applies"
    if facts:
        sentence += f" because {' and '.join(facts)}"
    sentence += "."
    if remedy.note:
        sentence += f" {remedy.note}"
    touched = {change.hyperparameter for change in remedy.changes()} | set(remedy.when.hyperparameter_names())
    if state.policy == "evidence" and touched & rate_names(state):
        sentence += f" Rates judged in {rates.describe()}."
    if failure not in FAILURE_KINDS:
        sentence += f" Evidence: {evidence_numbers(attempt)}."
    return sentence


def _end(state: WorkflowState, reason: str, end_cause: str) -> WorkflowState:
    decision = Decision(remedy=NO_REMEDY, reason=reason, next_action="end", end_cause=end_cause)
    return state.with_last_attempt(decision=decision).updated(next_action="end", end_reason=reason)
