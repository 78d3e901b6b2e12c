"""The planner: after an attempt, which hyperparameters to change for the next launch, and why.

It applies the remedies the run declared (``contracts.remedies``): for the rule
that fired (or the failure kind, e.g. ``objective_missed``), the first remedy
in order whose condition holds on the debugger's evidence and whose change
applies within its bounds. Every decision states its reason with the numbers.

The built-in remedy sets (``evidence``, ``anchor``) are written in that same form
(``lambdas.remediation.remedy_sets``) and copied into the state when the execution starts.

:func:`plan` records the decision on the last attempt and either sets
``next_action="launch_new"`` with the new run_spec (the sample's history
counters incremented) or ``next_action="end"`` with ``end_reason``. It ends when
the launch budget is spent: as in the AWS sample, ``num_retraining`` counts every launch (the train step
increments it) and no launch is planned once it reaches ``max_num_retraining``. Pure: no AWS calls.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from contracts import rule_selection
from contracts.remedies import (
    ANY_RULE,
    DATA_ERROR,
    FAILURE_KINDS,
    NOT_REMEDIABLE,
    OUT_OF_MEMORY,
    Remedy,
    Situation,
    show,
)
from lambdas.remediation import run_limits
from lambdas.remediation.attempts import Attempt, Change, Decision
from lambdas.remediation.payload import WorkflowState

NO_REMEDY = "none"

#: The AWS sample's history counters, by the example's hyperparameter they count.
HISTORY_COUNTERS = {
    "warmup_learning_rate": "num_warmup_adjustments",
    "add_batch_norm": "num_batch_layer_adjustments",
    "learning_rate": "num_learning_rate_adjustments",
}


class PlanningError(ValueError):
    """plan() was called on a state it cannot plan from; the message says what is missing."""


# --------------------------------------------------------------------------- what the planner knows


def situation_of(attempt: Attempt) -> Situation:
    """The last attempt's issue and evidence, as remedy conditions read them."""
    evidence = attempt.evidence
    issue = attempt.issue
    step = issue.step if issue and issue.step is not None else (evidence.first_issue_step if evidence else None)
    phase = (issue.phase if issue else None) or (evidence.phase if evidence else None)
    return Situation(
        issue_step=step,
        steps_per_epoch=evidence.steps_per_epoch if evidence else None,
        phase=phase,
        initial_gradient_norm=evidence.initial_gradient_norm if evidence else None,
        initial_loss=evidence.initial_loss if evidence else None,
        last_finite_loss=evidence.last_finite_loss if evidence else None,
        issue_kind=issue.kind if issue else None,
        issue_value=issue.value if issue else None,
        issue_tensor=(issue.tensor or None) if issue else None,
    )


def failure_of(attempt: Attempt) -> str:
    """The key of the remedies that answer this attempt: the rule that fired, or the failure kind."""
    if attempt.outcome in FAILURE_KINDS:
        return attempt.outcome
    if attempt.issue is not None:
        return attempt.issue.rule
    for status in attempt.rule_statuses:
        if status.status == "IssuesFound":
            return status.name
    return "unknown rule"


def headline(attempt: Attempt, state: WorkflowState) -> str:
    """'ExplodingTensor fired at step 2 (warmup phase, 20 steps per epoch, tensor ... = nan)'."""
    if attempt.outcome == "objective_missed":
        objective = state.declared_objective()
        value = attempt.objective_value
        target = objective.describe() if objective else "the objective"
        if value is None or objective is None:
            return f"Job {attempt.job_name} completed but missed {target}"
        return (
            f"Job {attempt.job_name} completed with quiet rules but {objective.metric_name} = {show(value)} missed "
            f"{target} by {show(objective.shortfall(value))}"
        )
    if attempt.outcome == DATA_ERROR:
        issue = attempt.issue
        if issue is not None and issue.message:
            return f"Job {attempt.job_name}: {issue.rule} found bad data at step {issue.step} ({issue.message})"
        return f"Job {attempt.job_name} failed on its data ({attempt.failure_reason or 'no reason given'})"
    if attempt.outcome == OUT_OF_MEMORY:
        cause = attempt.failure_reason.split(". ", 1)[0] or "no reason given"
        return f"Job {attempt.job_name} ran out of memory ({cause})"
    situation = situation_of(attempt)
    issue = attempt.issue
    where = f" at step {situation.issue_step}" if situation.issue_step is not None else ""
    details = []
    if situation.phase:
        details.append(f"{situation.phase} phase")
    if situation.steps_per_epoch:
        details.append(f"{situation.steps_per_epoch} steps per epoch")
    if issue is not None and issue.tensor:
        details.append(f"tensor {issue.tensor} = {show(issue.value) if issue.value is not None else 'unknown'}")
    suffix = f" ({', '.join(details)})" if details else ""
    return f"{failure_of(attempt)} fired{where}{suffix}"


def evidence_numbers(attempt: Attempt) -> str:
    evidence = attempt.evidence
    if evidence is None:
        return "no numeric evidence"
    parts = []
    for label, value in (
        ("initial gradient norm", evidence.initial_gradient_norm),
        ("initial loss", evidence.initial_loss),
        ("last finite loss", evidence.last_finite_loss),
        ("max gradient norm", evidence.max_gradient_norm),
    ):
        if value is not None:
            parts.append(f"{label} {show(value)}")
    return ", ".join(parts) if parts else "no numeric evidence"


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
        return _end(state, _outcome_reason(state, attempt), end_cause=attempt.outcome)

    failure = failure_of(attempt)
    if failure in NOT_REMEDIABLE:
        reason = (
            f"{headline(attempt, state)}. {FAILURE_KINDS[failure][:1].upper()}{FAILURE_KINDS[failure][1:]}: no "
            "hyperparameter change can fix it, so no job is relaunched. Ending; correct the data and start a new run."
        )
        return _end(state, reason, end_cause=failure)
    ladders = remedy_ladders(state, failure)
    situation = situation_of(attempt)
    hyperparameters = state.run_spec.hyperparameters
    chosen = None
    for key, ladder in ladders:
        for index, remedy in enumerate(ladder):
            holds, facts = remedy.when.check(situation, hyperparameters)
            updated = remedy.apply(hyperparameters) if holds else None
            if updated is not None:
                chosen = (key, ladder, index, remedy, facts, updated)
                break
        if chosen is not None:
            break
    end_cause = failure if failure in FAILURE_KINDS else "no_remedy_left"
    if chosen is None:
        return _end(state, _exhausted_reason(state, attempt, failure, ladders, situation), end_cause=end_cause)

    key, ladder, index, remedy, facts, updated = chosen
    changes = {
        name: Change(before=hyperparameters.get(name), after=value)
        for name, value in updated.items()
        if hyperparameters.get(name) != value
    }
    what = describe_changes(changes)
    if state.retraining_budget_left == 0:
        reason = (
            f"{headline(attempt, state)}. The relaunch budget is spent ({_launches(state.history.num_retraining)} "
            f"of max_num_retraining={state.max_num_retraining}); the next remedy would have been "
            f"{remedy.label} ({what}). Ending."
        )
        return _end(state, reason, end_cause="budget_spent")
    spent = run_limits.instance_hours_spent(state)
    if spent:
        reason = f"{headline(attempt, state)}. {spent}; the next remedy would have been {remedy.label} ({what}). Ending."
        return _end(state, reason, end_cause="instance_hours_spent")

    after = f" The next job continues from {attempt.job_name}'s checkpoints, not from step 0." if remedy.resume else ""
    run_spec = state.run_spec.with_hyperparameters(updated)
    answered = answered_data_finding(state, failure, situation) if key == failure else None  # not by "*"
    if answered is not None:
        rules, sentence = answered
        run_spec = run_spec.with_rules(rules)
        after += f" {sentence}"
    reason = (
        f"{headline(attempt, state)}. {_why(state, key, failure, ladder, index, remedy, facts, attempt)} "
        f"Next: {what}.{after}"
    )
    decision = Decision(
        remedy=remedy.label,
        reason=reason,
        next_action="launch_new",
        changes=changes,
        resume_from=attempt.job_name if remedy.resume else None,
    )
    history = state.history.model_copy(deep=True)
    for name in changes:
        counter = HISTORY_COUNTERS.get(name)
        if counter:
            setattr(history, counter, getattr(history, counter) + 1)
        history.num_hyperparameter_adjustments[name] = history.num_hyperparameter_adjustments.get(name, 0) + 1
    planned = state.with_last_attempt(decision=decision)
    return planned.updated(run_spec=run_spec, history=history, next_action="launch_new", end_reason=None)


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


def remedy_ladders(state: WorkflowState, failure: str) -> list[tuple[str, tuple[Remedy, ...]]]:
    """The remedy list for the failure: its own, else (for a rule with none of its own) the any-rule list; a
    failure kind (objective missed, out of memory) has only its own.
    A rule's own list replaces the any-rule list: remedies that fit one failure can hurt another (lowering
    the learning rate answers an explosion, not vanishing gradients)."""
    remedies = state.declared_remedies()
    if remedies.get(failure):
        return [(failure, remedies[failure])]
    if failure not in FAILURE_KINDS and remedies.get(ANY_RULE):
        return [(ANY_RULE, remedies[ANY_RULE])]
    return []


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
) -> str:
    """'Remedy 1 of 2 for ExplodingTensor in the declared remedies, ClipGradients (set grad_clip to 1), applies
    because ... Note. Evidence: ...'."""
    source = "the AWS sample's ladder" if state.policy == "anchor" else f"the {state.policy} remedies"
    described = remedy.change.describe()
    label = f"{remedy.name} ({described})" if remedy.name else described
    sentence = f"Remedy {index + 1} of {len(ladder)} for {key} in {source}, {label}, applies"
    if facts:
        sentence += f" because {' and '.join(facts)}"
    sentence += "."
    if remedy.note:
        sentence += f" {remedy.note}"
    if failure not in FAILURE_KINDS:
        sentence += f" Evidence: {evidence_numbers(attempt)}."
    return sentence


def _end(state: WorkflowState, reason: str, end_cause: str) -> WorkflowState:
    decision = Decision(remedy=NO_REMEDY, reason=reason, next_action="end", end_cause=end_cause)
    return state.with_last_attempt(decision=decision).updated(next_action="end", end_reason=reason)


def _exhausted_reason(
    state: WorkflowState,
    attempt: Attempt,
    failure: str,
    ladders: list[tuple[str, tuple[Remedy, ...]]],
    situation: Situation,
) -> str:
    """Which remedies exist for this failure and why none applies now, with the numbers."""
    hyperparameters = state.run_spec.hyperparameters
    lines = []
    for key, ladder in ladders:
        for remedy in ladder:
            holds, _ = remedy.when.check(situation, hyperparameters)
            if not holds:
                why = f"its condition {remedy.when.to_json()} does not hold"
            else:
                why = remedy.change.why_not(hyperparameters[remedy.change.hyperparameter])
            lines.append(f"{key}: {remedy.label}: {why}")
    tried = state.history.num_hyperparameter_adjustments
    tried_text = f" Changed so far: {', '.join(f'{name} x{count}' for name, count in tried.items())}." if tried else ""
    if not ladders:
        what = f"no remedies are declared for {failure}" + ("" if failure in FAILURE_KINDS else f" or {ANY_RULE}")
    else:
        what = f"no remedy left ({'; '.join(lines)})"
    return f"{headline(attempt, state)}. {what[:1].upper() + what[1:]}.{tried_text} Ending with {state.run_spec.summary()}."


def _outcome_reason(state: WorkflowState, attempt: Attempt) -> str:
    job = attempt.job_name
    failure = f": {attempt.failure_reason}" if attempt.failure_reason else ""
    attempts = f"{state.attempt_count} attempt{'s' if state.attempt_count != 1 else ''}"
    objective = state.declared_objective()
    if objective is None:
        met = "no objective was declared"
    else:
        met = f"{objective.metric_name} = {show(attempt.objective_value)} meets {objective.describe()}"
    reasons = {
        "completed": f"Job {job} completed with no rule issues after {attempts} and {met}; final hyperparameters: "
        f"{attempt.summary()}.",
        "objective_unmeasured": (
            f"Job {job} completed but never reported {objective.metric_name if objective else 'the metric'}: no "
            "MetricDefinitions regex matched the log and the script saved no scalar of that name. Ending; check "
            "metric_definitions or save the metric with hook.save_scalar."
        ),
        "missing_evidence": (
            f"Job {job} completed but its debugger never reported a rule status: no rule was evaluated, so the "
            "run cannot be called clean. Ending; create the hook in the script (smd.Hook.create_from_json_file(), "
            "register_module, register_loss) and check that debug-output/ reaches the bucket."
            if not attempt.outcome_reason or "never reported a rule status" in attempt.outcome_reason
            # a rule in Error, still evaluating past the bound, or a document not the job's own: the monitor's words
            else f"{attempt.outcome_reason} Ending; look at those rules' evaluation (status details, logs)."
        ),
        "algorithm_error": (
            f"Job {job} failed in the training code, not because a rule fired{failure}. "
            "Other hyperparameters would not fix that; ending."
        ),
        "capacity_error": (
            f"Job {job} got no {state.run_spec.instance_type} capacity after {state.history.capacity_retries} "
            f"retries{failure}. Ending; try another instance type or region."
        ),
        "stopped": f"Job {job} was stopped outside the workflow{failure}; ending.",
        "max_runtime_exceeded": f"Job {job} reached its MaxRuntimeInSeconds{failure}; ending.",
        "failed": f"Job {job} failed{failure}; ending.",
        "monitor_limit": (
            f"Job {job} was still running after {state.history.num_monitor_transitions} monitor transitions "
            f"(max_monitor_transitions={state.max_monitor_transitions}); ending."
        ),
    }
    return reasons[attempt.outcome]


def describe_changes(changes: Mapping[str, Change]) -> str:
    """'adding batch norm (warmup_learning_rate stays 0.1)', 'lowering lr 0.1 -> 0.05, setting grad_clip to 1'."""
    phrases = []
    for name, change in changes.items():
        before, after = change.before, change.after
        if name == "add_batch_norm":
            phrases.append("adding batch norm" if after else "removing batch norm")
        elif isinstance(before, (int, float)) and isinstance(after, (int, float)) and not isinstance(after, bool):
            verb = "lowering" if after < before else "raising"
            phrases.append(f"{verb} {name} {show(before)} -> {show(after)}")
        else:
            phrases.append(f"setting {name} to {show(after)} (was {show(before)})")
    return ", ".join(phrases)


def short_action(decision: Decision) -> str:
    """'adding batch norm', 'lowering warmup_learning_rate to 0.05': a few words for a notification subject."""
    if not decision.changes:
        return "ending"
    phrases = []
    for name, change in decision.changes.items():
        if name == "add_batch_norm":
            phrases.append("adding batch norm" if change.after else "removing batch norm")
        elif isinstance(change.before, (int, float)) and isinstance(change.after, (int, float)):
            verb = "lowering" if change.after < change.before else "raising"
            phrases.append(f"{verb} {name} to {show(change.after)}")
        else:
            phrases.append(f"{name} -> {show(change.after)}")
    return ", ".join(phrases)
