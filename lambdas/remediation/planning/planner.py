"""The planner: after an attempt, what the next job runs with, and why. Pure: no AWS calls.

One pipeline, read top to bottom in :func:`plan`:

    evidence (the attempt)  -> situation  (``situation.read_situation``: built once, immutable)
                            -> ladder     (``ladders.ladders_for``: the remedies for the failure, declarative)
                            -> choice     (``choice.choose``: the first that holds, applies, is allowed and new)
                            -> Decision   (structured: remedy, changes, cause, evidence, skipped, end cause)
                            -> text       (``reasons``, rendered from those fields)

A decision either relaunches (``next_action="launch_new"``, the new run_spec, the AWS sample's history counters
incremented) or ends the run (``next_action="end"``, ``end_reason``). The launch budget counts every launch, as in
the AWS sample (the train step increments ``num_retraining``); no launch is planned once it reaches
``max_num_retraining``.
"""

from __future__ import annotations

import math

from contracts import rule_selection
from contracts.debugger_config import BUILTIN_RULE_DEFAULTS
from contracts.remedies import FAILURE_KINDS, NOT_REMEDIABLE
from lambdas.remediation.planning import reasons, run_limits
from lambdas.remediation.planning.choice import Choice, Skip, choose
from lambdas.remediation.planning.ladders import ladders_for
from lambdas.remediation.planning.situation import PlanningSituation, read_situation
from lambdas.remediation.state.attempts import Change, Decision, EvidenceFact, SkippedRemedy
from lambdas.remediation.state.payload import WorkflowState
from lambdas.remediation.text import decision_text

__all__ = ["HISTORY_COUNTERS", "NO_REMEDY", "PlanningError", "plan"]

NO_REMEDY = run_limits.NO_REMEDY

#: The AWS sample's history counters, by the example's hyperparameter they count.
HISTORY_COUNTERS = {
    "warmup_learning_rate": "num_warmup_adjustments",
    "add_batch_norm": "num_batch_layer_adjustments",
    "learning_rate": "num_learning_rate_adjustments",
}


class PlanningError(ValueError):
    """plan() was called on a state it cannot plan from; the message says what is missing."""


def plan(state: WorkflowState) -> WorkflowState:
    """Decide after the last attempt: relaunch with new settings, or end with a reason."""
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
        return _end(state, decision_text.outcome_reason(state, attempt), end_cause=attempt.outcome)

    situation = read_situation(state)
    if situation.failure in NOT_REMEDIABLE:
        return _end(state, reasons.not_remediable_reason(state, situation), situation.failure, situation.failure)
    ladders = ladders_for(state, situation.failure, situation.rates)
    chosen, skips = choose(state, situation, ladders)
    if chosen is None:
        end_cause = situation.failure if situation.failure in FAILURE_KINDS else "no_remedy_left"
        reason = reasons.no_remedy_reason(state, situation, ladders, skips)
        return _end(state, reason, end_cause, situation.failure, skips)
    return _launch(state, situation, chosen, skips)


def _launch(state: WorkflowState, situation: PlanningSituation, chosen: Choice, skips: list[Skip]) -> WorkflowState:
    """Relaunch with the chosen remedy's settings, or end when no launch is left to try it."""
    current = state.job_settings()
    changes = {
        name: Change(before=current.get(name), after=value)
        for name, value in chosen.settings.items()
        if current.get(name) != value
    }
    limit = run_limits.limit_reached(state)
    if limit is not None:
        reason = reasons.limit_reason(state, situation, chosen.remedy, changes, limit, skips)
        return _end(state, reason, limit.end_cause, situation.failure, skips, next_remedy=chosen.remedy.label)

    resume = reasons.resume_from(situation.base) if chosen.remedy.resume else None
    run_spec = state.run_spec.with_settings(chosen.settings)
    rule_changes = _rule_bound_for_the_data(state, situation, chosen)
    if rule_changes:
        rules = state.run_spec.watching_rules()
        for name, change in rule_changes.items():
            rule, parameter = name.split(".", 1)
            rules = rule_selection.with_rule_parameter(rules, rule, parameter, change.after)
        run_spec = run_spec.with_rules(rules)
    decision = Decision(
        remedy=chosen.remedy.label,
        reason="(rendered below)",
        next_action="launch_new",
        cause=situation.failure,
        changes=changes,
        rule_changes=rule_changes,
        evidence=_evidence(chosen),
        skipped=_skipped(skips, chosen),
        resume_from=resume,
        planned_from=situation.base.number if situation.planned_from_earlier_job else None,
    )
    reason = reasons.launch_reason(state, situation, chosen, skips, decision)
    decision = decision.model_copy(update={"reason": reason})
    history = state.history.model_copy(deep=True)
    for name in changes:
        counter = HISTORY_COUNTERS.get(name)
        if counter:
            setattr(history, counter, getattr(history, counter) + 1)
        history.num_hyperparameter_adjustments[name] = history.num_hyperparameter_adjustments.get(name, 0) + 1
    planned = state.with_last_attempt(decision=decision)
    return planned.updated(run_spec=run_spec, history=history, next_action="launch_new", end_reason=None)


def _rule_bound_for_the_data(state: WorkflowState, situation: PlanningSituation, chosen: Choice) -> dict[str, Change]:
    """A rule parameter for the next job, when the remedy chosen (one of the rule's own, not one for any rule)
    answers a finding about the data (``contracts.rule_selection.DATA_FINDING_BOUNDS``): the rule's bound goes above
    the measured value, so the next job is judged on its training, not stopped again on the data the remedy allows
    for but does not change."""
    failure, evidence = situation.failure, situation.evidence
    parameter = rule_selection.DATA_FINDING_BOUNDS.get((failure, evidence.issue_kind))
    measured = evidence.issue_value
    if chosen.ladder.key != failure or parameter is None or measured is None or not math.isfinite(measured):
        return {}
    watching = {rule["name"]: rule for rule in state.run_spec.watching_rules()}
    if failure not in watching:
        return {}  # a finding recorded for a rule this run does not select: there is no bound to move
    before = watching[failure]["parameters"].get(parameter, BUILTIN_RULE_DEFAULTS.get(failure, {}).get(parameter))
    return {f"{failure}.{parameter}": Change(before=before, after=f"{measured * rule_selection.DATA_FINDING_MARGIN:.3g}")}


def _evidence(chosen: Choice) -> list[EvidenceFact]:
    return [EvidenceFact(test=fact.test, measured=fact.measured, bound=fact.bound) for fact in chosen.facts]


def _skipped(skips: list[Skip], chosen: Choice | None = None) -> list[SkippedRemedy]:
    """The remedies left out before the chosen one (all of them when the run ends), once each."""
    kept: dict[tuple[str, str], SkippedRemedy] = {}
    for skip in skips:
        if chosen is not None and skip.key == chosen.ladder.key and skip.index >= chosen.index:
            continue
        kept.setdefault((skip.remedy.label, skip.why), SkippedRemedy(
            remedy=skip.remedy.label, why=skip.why, job=skip.job, carried=skip.carried
        ))
    return list(kept.values())[:24]


def _end(
    state: WorkflowState,
    reason: str,
    end_cause: str,
    cause: str | None = None,
    skips: list[Skip] | None = None,
    next_remedy: str | None = None,
) -> WorkflowState:
    decision = Decision(
        remedy=NO_REMEDY, reason=reason, next_action="end", cause=cause, end_cause=end_cause,
        skipped=_skipped(skips or []), next_remedy=next_remedy,
    )  # fmt: skip
    return state.with_last_attempt(decision=decision).updated(next_action="end", end_reason=reason)
