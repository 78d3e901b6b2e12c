"""The planner's first step: what the evidence of a finished attempt says, read once into an immutable
:class:`PlanningSituation`: the failure the remedies answer (the rule that fired, or the failure kind), the job to plan
from (the closest to the objective so far), the debugger's evidence about it as remedy conditions read it
(``contracts.situation.Situation``: the issue, the phase, where the loss and the gradient norm peaked, the loss's
course, the training labels), what earlier remedies did, and the learning-rate range of the optimizer the job
stepped."""

from __future__ import annotations

import dataclasses
import itertools
import math

from contracts.debugger_settings import DEBUGGER_SETTINGS
from contracts.divergence import GRADIENT_NORM, GRADIENT_NORM_FACTOR, LOSS, SPIKING, Divergence, divergence
from contracts.hyperparameter_values import Value, is_number, show
from contracts.loss_history import LossWindow
from contracts.objective import Objective, ObjectiveCourse
from contracts.remedies import OBJECTIVE_MISSED
from contracts.rule_status import Peak
from contracts.situation import Situation
from contracts.training_labels import LabelFinding
from lambdas.remediation.planning.learning_rate_ranges import RateRange, range_for
from lambdas.remediation.planning.rate_ceilings import FOR_TARGET_SCALE, rate_ceilings
from lambdas.remediation.state import attempts as attempt_models
from lambdas.remediation.state import loss_settings
from lambdas.remediation.state.attempts import Attempt
from lambdas.remediation.state.payload import WorkflowState

#: The conventional names of the learning rates: the rate remedies of the evidence set change these.
RATE_HYPERPARAMETERS = ("learning_rate", "warmup_learning_rate")


@dataclasses.dataclass(frozen=True)
class PlanningSituation:
    """Everything the planner reads about the run to decide after its last attempt, built once by
    :func:`read_situation`."""

    #: The job that just ended, and the failure its remedies answer (a rule's name or a failure kind).
    attempt: Attempt
    failure: str
    #: The job the next one is planned from: ``attempt``, or an earlier one that came closer to the objective.
    base: Attempt
    #: The debugger's evidence about ``base`` as remedy conditions read it.
    evidence: Situation
    #: What ``base`` ran with (hyperparameters and debugger settings): what the remedies change.
    settings: dict
    #: What the training labels say, when a quiet miss is to be read through them: then only a remedy that names a
    #: cause in the run answers it (the loss's course would only send more epochs or another rate after the data).
    labels: LabelFinding | None
    #: Remedies after which the objective got worse (label -> the fact), and the settings each job of the run ran.
    worse: dict[str, MadeItWorse]
    tried: tuple[dict, ...]
    #: The learning-rate range of the optimizer the job stepped.
    rates: RateRange

    @property
    def planned_from_earlier_job(self) -> bool:
        return self.base is not self.attempt


def read_situation(state: WorkflowState) -> PlanningSituation:
    """The situation after the state's last attempt (which must have ended)."""
    attempt = state.last_attempt
    failure = failure_of(attempt)
    base = attempt_to_plan_from(state, attempt, failure)
    evidence = situation_to_plan_from(state, base, attempt)
    names = state.hyperparameter_names
    ceilings = rate_ceilings(
        ((earlier, situation_in(state, earlier)) for earlier in state.attempts),
        names.get("learning_rate", "learning_rate"), names.get("warmup_learning_rate", "warmup_learning_rate"),
    )
    evidence = dataclasses.replace(evidence, rate_ceilings=ceilings, debugger_settings_tried=debugger_settings_tried(state))
    settings = base.settings() if base is not attempt else state.job_settings()
    return PlanningSituation(
        attempt=attempt,
        failure=failure,
        base=base,
        evidence=evidence,
        settings=settings,
        labels=evidence.labels if failure == OBJECTIVE_MISSED else None,
        worse=remedies_that_made_it_worse(state),
        tried=tuple(earlier.settings() for earlier in state.attempts),
        rates=rate_range(state),
    )


def debugger_settings_tried(state: WorkflowState) -> tuple[tuple[str, Value], ...]:
    """The debugger settings (run_spec field, value) the run's jobs trained with, in the order first tried."""
    tried: dict[tuple[str, Value], None] = {}
    for earlier in state.attempts:
        settings = earlier.settings()
        for setting in DEBUGGER_SETTINGS.values():
            if setting.field in settings:
                tried[(setting.field, settings[setting.field])] = None
    return tuple(tried)


def situation_in(state: WorkflowState, attempt: Attempt) -> Situation:
    """:func:`situation_of` with what the run says about the attempt: its objective, the epochs it trained (its
    ``num_epochs`` hyperparameter, by the script's own name), and whether its loss was weighted by class or robust to
    wrong labels."""
    return situation_of(
        attempt,
        state.declared_objective(),
        state.epochs_in(attempt.hyperparameters),
        loss_weighted_by_class=loss_settings.weighted_by_class(state, attempt),
        loss_robust_to_wrong_labels=loss_settings.robust_to_wrong_labels(attempt),
    )


def situation_to_plan_from(state: WorkflowState, base: Attempt, attempt: Attempt) -> Situation:
    """:func:`situation_in` of the attempt the planner plans from (``base``, :func:`attempt_to_plan_from`), with what a
    later quiet miss found in the training labels when ``base``'s own labels say nothing (the latest such finding).

    The labels are the same in every job of a run, but what a job shows of them depends on its settings: a job trained
    longer may learn them by heart where the closer one showed nothing (docs/decisions/016-later-job-label-finding.md)."""
    situation = situation_in(state, base)
    if base is attempt or situation.own_labels is not None:
        return situation
    for later in reversed(state.attempts):
        if later.number <= base.number:
            break
        if later.outcome != OBJECTIVE_MISSED:
            continue
        finding = situation_in(state, later).own_labels
        if finding is not None:
            seen = dataclasses.replace(finding, detail=f"in job {later.number}, {finding.detail}")
            return dataclasses.replace(situation, later_labels=seen)
    return situation


def situation_of(
    attempt: Attempt,
    objective: Objective | None = None,
    epochs: int | None = None,
    *,
    loss_weighted_by_class: bool = False,
    loss_robust_to_wrong_labels: bool = False,
) -> Situation:
    """The attempt's issue and evidence, as remedy conditions read them. ``objective``: the run's, whose value the
    training labels' agreement is compared with (contracts.training_labels); ``epochs``: how many the job trained;
    ``loss_weighted_by_class``: whether its training loss was weighted by class; ``loss_robust_to_wrong_labels``:
    whether it trained on the debugger's robust loss."""
    evidence = attempt.evidence
    issue = attempt.issue
    if issue and issue.step is not None:
        step, optimizer_step = issue.step, issue.optimizer_step
    elif evidence is not None:
        step, optimizer_step = evidence.first_issue_step, evidence.first_issue_optimizer_step
    else:
        step = optimizer_step = None
    phase = (issue.phase if issue else None) or (evidence.phase if evidence else None)
    return Situation(
        issue_step=step,
        issue_optimizer_step=optimizer_step,  # carried by the status document, never recomputed here
        steps_per_epoch=evidence.steps_per_epoch if evidence else None,
        phase=phase,
        initial_gradient_norm=evidence.initial_gradient_norm if evidence else None,
        initial_loss=evidence.initial_loss if evidence else None,
        last_finite_loss=evidence.last_finite_loss if evidence else None,
        issue_kind=issue.kind if issue else None,
        issue_value=issue.value if issue else None,
        issue_tensor=(issue.tensor or None) if issue else None,
        loss_peak=_peak(evidence.loss_peak) if evidence else None,
        gradient_norm_peak=_peak(evidence.gradient_norm_peak) if evidence else None,
        loss_windows=_windows(evidence.loss_windows) if evidence else None,
        label_counts=tuple(evidence.label_counts) if evidence and evidence.label_counts else None,
        held_out_score=_score(attempt.objective_value, objective),
        training_dropout=evidence.training_dropout if evidence else None,
        training_inputs_repeated=evidence.training_inputs_repeated if evidence else None,
        epochs=epochs,
        objective=objective,
        objective_course=_course(evidence.objective_course) if evidence else None,
        loss_weighted_by_class=loss_weighted_by_class,
        loss_robust_to_wrong_labels=loss_robust_to_wrong_labels,
        loss_divergence=_loss_divergence(evidence),
        gradient_norm_divergence=_gradient_norm_divergence(evidence),
        target_rms=evidence.target_rms if evidence else None,
        output_rms=evidence.output_rms if evidence else None,
        target_loss=evidence.target_loss if evidence else None,
        gradient_norm_typical=evidence.gradient_norm_typical if evidence else None,
    )


def _divergence(found: attempt_models.Divergence | None) -> Divergence | None:
    return None if found is None else Divergence(**found.model_dump())


def _loss_divergence(evidence: attempt_models.AttemptEvidence | None) -> Divergence | None:
    """The job's own reading; a job whose debugger did not report one is read from its loss windows the same way."""
    if evidence is None:
        return None
    if evidence.loss_divergence is not None or evidence.gradient_norm_divergence is not None:
        return _divergence(evidence.loss_divergence)
    return divergence(_windows(evidence.loss_windows), evidence.initial_loss, LOSS)


def _gradient_norm_divergence(evidence: attempt_models.AttemptEvidence | None) -> Divergence | None:
    """The job's own reading; from a debugger that did not report one, the gradient norm's peak against its first
    step's value (a spike: that debugger kept no course of it)."""
    if evidence is None:
        return None
    if evidence.loss_divergence is not None or evidence.gradient_norm_divergence is not None:
        return _divergence(evidence.gradient_norm_divergence)
    peak, early = evidence.gradient_norm_peak, evidence.initial_gradient_norm
    if peak is None or early is None or not (math.isfinite(early) and early > 0 and math.isfinite(peak.value)):
        return None
    if peak.value < GRADIENT_NORM_FACTOR * early:
        return None
    return Divergence(
        GRADIENT_NORM, SPIKING, early, peak.value, peak.step, peak.step, peak.value, peak.optimizer_step, peak.optimizer_step
    )


def _course(course: attempt_models.ObjectiveCourse | None) -> ObjectiveCourse | None:
    return None if course is None else ObjectiveCourse(**course.model_dump())


def _score(value: float | None, objective: Objective | None) -> float | None:
    """The objective's value when it is a score from 0 to 1 that a higher value betters (an accuracy)."""
    if objective is None or objective.type != "Maximize" or value is None or not 0 <= value <= 1:
        return None
    return value


def _windows(windows: list[attempt_models.LossWindow] | None) -> tuple[LossWindow, ...] | None:
    if windows is None:
        return None
    return tuple(LossWindow(**w.model_dump()) for w in windows)


def _peak(peak: attempt_models.Peak | None) -> Peak | None:
    if peak is None:
        return None
    return Peak(**peak.model_dump())


def failure_of(attempt: Attempt) -> str:
    """The key of the remedies that answer this attempt: the rule that fired, or the failure kind."""
    return attempt.failure_key


def reported_optimizer(state: WorkflowState) -> str | None:
    """The optimizer the run's jobs reported, the latest first (a job stopped before its first step may not know)."""
    for attempt in reversed(state.attempts):
        if attempt.evidence is not None and attempt.evidence.optimizer:
            return attempt.evidence.optimizer
    return None


def rate_range(state: WorkflowState) -> RateRange:
    """The learning-rate range the evidence remedies judge this run's rates in: its optimizer's."""
    name = state.hyperparameter_names.get("learning_rate", "learning_rate")
    start = state.attempts[0].hyperparameters.get(name) if state.attempts else None
    starting_rate = float(start) if isinstance(start, (int, float)) and not isinstance(start, bool) else None
    rates = range_for(reported_optimizer(state), starting_rate)
    for attempt in reversed(state.attempts):  # the latest rate set for the targets' scale puts the range there
        decision = attempt.decision
        change = decision.changes.get(name) if decision is not None and decision.remedy == FOR_TARGET_SCALE else None
        if change is not None and is_number(change.before) and is_number(change.after) and 0 < change.after < change.before:
            return rates.divided_by_target_scale(change.before / change.after)
    return rates


def rate_names(state: WorkflowState) -> set[str]:
    """The run's own names of its learning rates."""
    return {state.hyperparameter_names.get(name, name) for name in RATE_HYPERPARAMETERS}


@dataclasses.dataclass(frozen=True)
class MadeItWorse:
    """A remedy after which the job's objective got worse: the job after it, and the fact to say."""

    job: int
    fact: str


def remedies_that_made_it_worse(state: WorkflowState) -> dict[str, MadeItWorse]:
    """The remedies (by label) after which the job's objective metric got worse than the job before by more than the
    later job's :func:`report_noise` ("after LowerLearningRate (job 2), validation:accuracy went from 0.45 to 0.3"):
    the planner does not repeat them. Not between two jobs that both learned nothing (:func:`learned_nothing`)."""
    objective = state.declared_objective()
    worse: dict[str, MadeItWorse] = {}
    if objective is None:
        return worse
    for before, after in itertools.pairwise(state.attempts):
        if after.number != before.number + 1:  # attempts dropped from the payload between them
            continue
        remedy = before.decision.remedy if before.decision else None
        old, new = before.objective_value, after.objective_value
        if remedy is None or old is None or new is None or not (math.isfinite(old) and math.isfinite(new)):
            continue
        if objective.shortfall(new) > objective.shortfall(old) + report_noise(after) and not (
            learned_nothing(state, before) and learned_nothing(state, after)
        ):
            worse[remedy] = MadeItWorse(
                after.number,
                f"after {remedy} (job {after.number}), {objective.metric_name} went from {show(old)} to {show(new)}",
            )
    return worse


def attempt_to_plan_from(state: WorkflowState, attempt: Attempt, failure: str) -> Attempt:
    """The attempt the planner plans from: after a quiet miss, the one that came closest to the objective among those
    that completed with quiet rules and missed it (the earliest of equals), when it came closer than the last
    (``attempt``) by more than the last one's :func:`report_noise`: a remedy that made things worse is undone, not
    built on; not when both learned nothing (:func:`learned_nothing`). Else ``attempt``."""
    objective = state.declared_objective()
    if failure != OBJECTIVE_MISSED or attempt.outcome != OBJECTIVE_MISSED or objective is None:
        return attempt
    quiet = [
        earlier
        for earlier in state.attempts
        if earlier.outcome == OBJECTIVE_MISSED and earlier.objective_value is not None
        and math.isfinite(earlier.objective_value)
    ]  # fmt: skip
    best = min(quiet, key=lambda earlier: objective.shortfall(earlier.objective_value), default=attempt)
    if attempt.objective_value is None or best.objective_value is None:
        return attempt
    closer = objective.shortfall(best.objective_value) + report_noise(attempt) < objective.shortfall(attempt.objective_value)
    if closer and learned_nothing(state, best) and learned_nothing(state, attempt):
        return attempt
    return best if closer else attempt


def learned_nothing(state: WorkflowState, attempt: Attempt) -> bool:
    """Whether the attempt learned nothing its objective can show (``contracts.situation.Situation.learned_nothing``):
    its objective value is chance's, so comparing it with another such job's says nothing about their settings."""
    return situation_in(state, attempt).learned_nothing


def report_noise(attempt: Attempt) -> float:
    """How far the attempt's objective value moves by chance: the standard deviation of its recent reports around
    their trend line (``contracts.objective.ObjectiveCourse.recent_noise``); 0 when it reported too few to tell.

    A job whose value differs from an earlier one's by less than this did neither better nor worse
    (docs/decisions/015-worse-and-closer-beyond-report-noise.md)."""
    course = attempt.evidence.objective_course if attempt.evidence else None
    noise = course.recent_noise if course is not None else None
    return noise if noise is not None and math.isfinite(noise) and noise > 0 else 0.0
