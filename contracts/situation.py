"""What the debugger's evidence says about a failure, as a remedy's ``when`` reads it (:class:`Situation`): the
rule's finding, the run's history (where the loss and the gradient norm peaked), the loss's course, the training
labels and the objective's metric over the job. ``contracts.remedy_conditions`` says what each test reads here.
Standard library only.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

from contracts.divergence import Divergence
from contracts.hyperparameter_values import Value, is_number, show
from contracts.loss_history import DIVERGED, LossShape, LossWindow, loss_shape
from contracts.objective import Objective, ObjectiveCourse, late_reports, recent_reports
from contracts.rule_status import Peak
from contracts.training_labels import (
    CHANCE_MARGIN,
    LabelFinding,
    ShortMatch,
    guessing_score,
    label_finding,
    short_match,
)

#: Losses whose gradient grows with the targets' scale (torch.nn's class names): a squared error.
SQUARED_ERROR_LOSSES = ("MSELoss", "GaussianNLLLoss")
#: Without steps_per_epoch in the evidence, an issue before this step counts as "early".
EARLY_STEP_FALLBACK = 10


@dataclasses.dataclass(frozen=True)
class Spike:
    """A series (the loss, the total gradient norm) that peaked at ``peak.value`` from ``initial``."""

    series: str
    initial: float
    peak: Peak

    @property
    def ratio(self) -> float:
        return self.peak.value / self.initial

    def describe(self) -> str:
        """'the loss rose from 3.351 to 1181 (352x) at step 4 (warmup phase, learning rate 0.8)'; a peak whose optimizer
        step the report carried is named by it, the saved global step beside it (contracts.step_names)."""
        context = [f"{self.peak.phase} phase"] if self.peak.phase else []
        if self.peak.learning_rate is not None:
            context.append(f"learning rate {show(self.peak.learning_rate)}")
        where = f" ({', '.join(context)})" if context else ""
        return (
            f"the {self.series} rose from {show(self.initial)} to {show(self.peak.value)} ({self.ratio:.3g}x) at "
            f"{self.peak.step_name()}{where}"
        )


@dataclasses.dataclass(frozen=True)
class RateCeiling:
    """A learning rate the run's history says is too high: no remedy sets ``setting`` (the script's own name of a rate)
    at or above ``value`` (decision 187). ``why``: what job ``job`` showed, in words."""

    setting: str
    value: float
    job: int
    why: str
    #: Set by a job that blew up at that rate (diverged, exploded, collapsed); False: by what a remedy computed (the
    #: targets' scale), which says the rate is too high, not that a job showed it.
    blew_up: bool = True

    def describe(self) -> str:
        """'at or above 0.5, the rate job 1 diverged at'."""
        return f"at or above {show(self.value)}, {self.why}"


@dataclasses.dataclass(frozen=True)
class Situation:
    """What the debugger's evidence says about the failure, as conditions read it."""

    issue_step: int | None = None
    #: The issue's optimizer step (contracts.step_names; None: unknown, the global step stands for it): the unit
    #: ``steps_per_epoch`` counts in and messages name.
    issue_optimizer_step: int | None = None
    steps_per_epoch: int | None = None
    phase: str | None = None
    initial_gradient_norm: float | None = None
    initial_loss: float | None = None
    last_finite_loss: float | None = None
    #: How the rule's condition failed (the rule's own token, e.g. "above_max"), its value and tensor.
    issue_kind: str | None = None
    issue_value: float | None = None
    issue_tensor: str | None = None
    #: Where the loss and the total gradient norm peaked (the run's history).
    loss_peak: Peak | None = None
    gradient_norm_peak: Peak | None = None
    #: The training loss's course over the whole job (contracts.loss_history).
    loss_windows: tuple[LossWindow, ...] | None = None
    #: The training labels the job counted by class, and the objective's value when it is a 0-1 score.
    label_counts: tuple[int, ...] | None = None
    held_out_score: float | None = None
    #: The largest dropout probability active while the model trained (None: none was).
    training_dropout: float | None = None
    #: The share of its training input rows the job saw again unchanged (contracts.training_inputs; None: unknown).
    training_inputs_repeated: float | None = None
    #: The epochs the job trained, when the run names its epochs hyperparameter.
    epochs: int | None = None
    #: The run's objective, and its metric over the job when the script saved it with the debugger.
    objective: Objective | None = None
    objective_course: ObjectiveCourse | None = None
    #: The job's training loss was corrected for class frequencies (the debugger's balanced weights or logit-adjusted
    #: loss, or the script's own weighting knob).
    loss_weighted_by_class: bool = False
    #: The job trained on the debugger's loss robust to wrong labels (lambdas.remediation.planning.in_job_robust_loss).
    loss_robust_to_wrong_labels: bool = False
    #: What a later job of the run found in the same training labels, when the planner plans from this job and its
    #: own labels say nothing (lambdas.remediation.planning.situation.situation_to_plan_from).
    later_labels: LabelFinding | None = None
    #: The training loss and the gradient norm risen or spiked far above the run's first step (contracts.divergence).
    loss_divergence: Divergence | None = None
    gradient_norm_divergence: Divergence | None = None
    #: A regression's targets and the model's outputs at its first training step (root mean squares).
    target_rms: float | None = None
    output_rms: float | None = None
    #: The loss module that compared them, by class name (None: unknown).
    target_loss: str | None = None
    #: The rates the run's earlier jobs showed too high (diverged or exploded at, or divided by the targets' scale):
    #: upper bounds on every rate remedy (lambdas.remediation.planning.rate_ceilings).
    rate_ceilings: tuple[RateCeiling, ...] = ()
    #: The debugger settings (run_spec field, value) some job of the run trained with, including a job the planner
    #: went back from (lambdas.remediation.planning.situation.read_situation).
    debugger_settings_tried: tuple[tuple[str, Value], ...] = ()
    #: The total gradient norm's typical size before it spiked (contracts.divergence.typical_before_spike).
    gradient_norm_typical: float | None = None

    @property
    def typical_gradient_norm(self) -> float | None:
        """The size the network's total gradient norm kept before any spike: measured over the job's windows, else
        (a debugger that kept no course of it) its first step's value."""
        for value in (self.gradient_norm_typical, self.initial_gradient_norm):
            if value is not None and math.isfinite(value) and value > 0:
                return value
        return None

    def ceiling_for(self, setting: str) -> RateCeiling | None:
        """The lowest ceiling on ``setting`` (None: the history bounds it nowhere)."""
        found = [ceiling for ceiling in self.rate_ceilings if ceiling.setting == setting]
        return min(found, key=lambda ceiling: ceiling.value, default=None)

    def blown_up_above(self, settings: Mapping[str, Value]) -> RateCeiling | None:
        """The lowest rate an earlier job blew up at that is above the rate ``settings`` give the same setting now
        (None: no job of the run blew up above the current rate)."""
        found = [
            ceiling for ceiling in self.rate_ceilings
            if ceiling.blew_up and is_number(settings.get(ceiling.setting)) and settings[ceiling.setting] < ceiling.value
        ]  # fmt: skip
        return min(found, key=lambda ceiling: ceiling.value, default=None)

    @property
    def target_scale(self) -> float | None:
        """How many times the targets' scale is what the model's outputs start at (at least 1: an output's scale below
        one is no unit to learn in); None when the job measured no regression targets."""
        if self.target_rms is None or self.output_rms is None:
            return None
        if not (math.isfinite(self.target_rms) and math.isfinite(self.output_rms)):
            return None
        return self.target_rms / max(self.output_rms, 1.0)

    @property
    def step_target_scale(self) -> float | None:
        """:attr:`target_scale` when the loss's gradient grows with the targets (a squared error, whose gradient is
        the error itself); None for a loss whose gradient is bounded (Huber, smooth L1, L1: no larger step to undo)."""
        if self.target_loss is not None and self.target_loss not in SQUARED_ERROR_LOSSES:
            return None
        return self.target_scale

    def divergences(self, kinds: tuple[str, ...]) -> tuple[Divergence, ...]:
        """The loss's and the gradient norm's divergences of one of ``kinds`` (the loss's first)."""
        return tuple(
            found for found in (self.loss_divergence, self.gradient_norm_divergence) if found and found.kind in kinds
        )

    @property
    def best_epoch(self) -> int | None:
        """The epoch after which the held-out metric met the objective at its best, when the job reported it once per
        epoch and trained past it to a miss (None otherwise)."""
        course, objective = self.objective_course, self.objective
        if course is None or objective is None or self.epochs is None or course.reports != self.epochs:
            return None
        return course.best_report if course.met_before_end(objective) else None

    @property
    def past_peak(self) -> bool:
        """Whether the objective's metric fell from an earlier best over the job's last third (False when the job
        did not report its course)."""
        course, objective = self.objective_course, self.objective
        return course is not None and objective is not None and course.past_peak(objective)

    @property
    def still_rising(self) -> bool:
        """Whether the objective's metric still improved at the job's end (``ObjectiveCourse.still_rising``; False
        when the job did not report its course)."""
        course, objective = self.objective_course, self.objective
        return course is not None and objective is not None and course.still_rising(objective)

    def describe_rise(self) -> str:
        """The objective's course still rising at the end, with its numbers (call when :attr:`still_rising` holds)."""
        course, objective = self.objective_course, self.objective
        if course.recent_slope is None or course.recent_noise is None:
            return (
                f"{objective.metric_name} rose from {show(course.first_value)} to {show(course.last_value)} and was at "
                f"its best at its last report ({course.reports} of {course.reports}): the job ended while it still "
                "improved"
            )
        return (
            f"{objective.metric_name} rose from {show(course.first_value)} to {show(course.last_value)} (best "
            f"{show(course.best_value)}), by {show(round(abs(course.recent_slope), 4))} a report over its last "
            f"{len(recent_reports(range(course.reports)))} (noise {show(round(course.recent_noise, 4))}): the job "
            "ended while it still improved"
        )

    def describe_peak(self) -> str:
        """The objective's course past its peak, with its numbers (call when :attr:`past_peak` holds)."""
        course, objective = self.objective_course, self.objective
        return (
            f"{objective.metric_name} was best after report {course.best_report} of {course.reports}, at "
            f"{show(course.best_value)}, and its last {late_reports(course.reports)} averaged "
            f"{show(round(course.late_mean, 4))}: more of the same training takes it further from its best"
        )

    @property
    def labels(self) -> LabelFinding | None:
        """What the training labels say (contracts.training_labels), when they say something: this job's finding,
        else :attr:`later_labels`."""
        return self.own_labels or self.later_labels

    @property
    def own_labels(self) -> LabelFinding | None:
        """What this job's training labels say, read from its own evidence."""
        objective = self.objective
        target_score = (
            objective.target_value
            if self.held_out_score is not None and objective is not None and 0 <= objective.target_value <= 1
            else None
        )  # held_out_score is set only for a score from 0 to 1 that a higher value betters: the target is one too
        return label_finding(
            self.label_counts,
            self.loss_windows,
            self.held_out_score,
            self.epochs,
            target_score,
            self.training_dropout,
            self.training_inputs_repeated,
        )

    @property
    def short_match(self) -> ShortMatch | None:
        """A match with the training labels settled short of the held-out score, under what names them noisy or
        explained by dropout or changed inputs (contracts.training_labels.short_match); None when it is not."""
        return short_match(
            self.loss_windows, self.held_out_score, self.epochs, self.training_dropout, self.training_inputs_repeated
        )

    @property
    def loss_course(self) -> LossShape | None:
        """What the loss's course says (None: the job reported too little of it). A loss that diverged (rose far above
        its first step and stayed above it) is "diverged", never "flat": it did not fail to learn, it unlearned."""
        shape = loss_shape(self.loss_windows, self.initial_loss) if self.loss_windows else None
        if shape is not None and self.loss_divergence is not None:
            return dataclasses.replace(shape, shape=DIVERGED, divergence=self.loss_divergence.describe())
        return shape

    @property
    def learned_nothing(self) -> bool:
        """The job learned nothing its objective can show: its training loss never fell (flat, or diverged above its
        start) and, for a score whose training labels were counted, its held-out score is within
        :data:`~contracts.training_labels.CHANCE_MARGIN` of always guessing the most common class. Two such jobs'
        objective values differ by chance, not by what their settings did (docs/decisions/208-*). A flat loss beside
        a score well above guessing (wrong labels, under dropout) learned something."""
        course = self.loss_course
        if course is None or course.shape not in ("flat", DIVERGED):
            return False
        guessing = guessing_score(self.label_counts)
        return self.held_out_score is None or guessing is None or self.held_out_score <= guessing + CHANCE_MARGIN

    def describe_learned_nothing(self) -> str:
        """'the training loss went from 1.383 to 1.391, and validation:accuracy 0.233 is within 0.05 of always guessing
        the most common class (0.262): it learned nothing'."""
        course = self.loss_course
        text = f"the training loss went from {show(course.start)} to {show(course.end)}" if course else "the loss never fell"
        guessing = guessing_score(self.label_counts)
        if self.held_out_score is not None and guessing is not None and self.objective is not None:
            text += (
                f", and {self.objective.metric_name} {show(self.held_out_score)} is within {show(CHANCE_MARGIN)} of "
                f"always guessing the most common class ({show(round(guessing, 4))})"
            )
        return f"{text}: it learned nothing"

    def spike(self, factor: float, only: str | None = None) -> Spike | None:
        """The first of the loss and the gradient norm (``only``: that series) to peak above ``factor`` times its
        initial value at or before the issue's step (None: neither did, or the numbers are missing)."""
        spikes = []
        for series, initial, peak in (
            ("loss", self.initial_loss, self.loss_peak),
            ("gradient norm", self.initial_gradient_norm, self.gradient_norm_peak),
        ):
            if only is not None and series != only:
                continue
            if peak is None or initial is None or not math.isfinite(initial) or initial <= 0:
                continue
            if self.issue_step is not None and peak.step > self.issue_step:
                continue
            if math.isfinite(peak.value) and peak.value > factor * initial:
                spikes.append(Spike(series, initial, peak))
        return min(spikes, key=lambda spike: spike.peak.step) if spikes else None

    @property
    def issue_step_counted(self) -> int | None:
        """The issue's step as steps_per_epoch and messages count it: its optimizer step, else its global step. (An
        evaluation pass or each closure evaluation is a global step too: against a length in optimizer steps, the
        global step would put an early issue late.)"""
        return self.issue_optimizer_step if self.issue_optimizer_step is not None else self.issue_step

    @property
    def early(self) -> bool | None:
        step = self.issue_step_counted
        if step is None:
            return None
        return step < self.early_limit

    @property
    def early_limit(self) -> float:
        return self.steps_per_epoch / 2 if self.steps_per_epoch else EARLY_STEP_FALLBACK

    @property
    def loss_trend(self) -> str | None:
        if self.initial_loss is None or self.last_finite_loss is None:
            return None
        return "rising" if self.last_finite_loss >= self.initial_loss else "falling"
