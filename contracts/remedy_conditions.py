"""When a remedy applies: the debugger's evidence about a failure (:class:`Situation`) and the tests a remedy's
``when`` makes on it (:class:`Condition`). Standard library only.

A condition holds when every test it gives holds::

    "when": {"phase": "warmup", "early": true, "initial_gradient_norm_above": 50}
    "when": {"issue_kind": "rising"}                        # the rule said how the loss failed to decrease
    "when": {"issue_value_above": 50}                       # e.g. DeadRelu: more than half the units dead (%)
    "when": {"hyperparameters": {"activation": "relu"}}     # the run's current value
    "when": {"hyperparameters_above": {"learning_rate": 0.4}}  # a number above (or _below) a bound
    "when": {"spiked_above": 10, "spike_phase": "warmup"}   # the run's history: see below
    "when": {"spiked_above": 2, "spike_series": "loss"}     # the loss alone
    "when": {"target_scale_above": 30}                    # a regression's targets 30x what its outputs start at
    "when": {"diverged": "spiking"}                        # the loss or gradient norm rose or spiked (contracts.divergence)
    "when": {"loss_shape": "still_falling"}                 # the loss's course over the job (contracts.loss_history)
    "when": {"loss_shape": ["settled", "unknown"]}          # one of these ("unknown": too little reported to tell)
    "when": {"training_labels": "imbalanced"}               # what the job's training labels say (contracts.training_labels)
    "when": {"objective_met_before_end": true}              # the held-out metric met the objective at an earlier epoch
    "when": {"objective_past_peak": false}                  # the held-out metric was not falling from an earlier best
    "when": {"objective_still_rising": true}                # the held-out metric still rose, beyond its noise, at the end
    "when": {"loss_weighted_by_class": true}                # the job's loss was corrected for class frequencies
    "when": {"loss_robust_to_wrong_labels": false}          # the job did not train on the debugger's robust loss
    "when": {"labels_short_of_held_out": true}              # its training-label match settled short of held out
    "when": {"debugger_settings": {"class_weighting": "balanced"}}  # the debugger setting the job ran with
    "when": {"debugger_settings_tried": {"class_weighting": "balanced"}}  # a setting some job of the run ran with
    "when": {"learned_nothing": true}                      # its loss never fell, its score is what guessing scores
    "when": {"blew_up_at_a_higher_rate": true}             # an earlier job blew up at a rate above this job's

``spiked_above`` reads the run's history, not only its last symptom: it holds when the loss or the total gradient
norm rose to more than that many times its initial value at or before the step the rule fired (the job reports
where each peaked, with the learning rate and phase of that step). Gradients that vanish, or units that die,
after such a spike are a collapse caused by a rate too high, not a rate too low; ``spike_phase`` says in which
phase the spike was, so a remedy can lower the rate that was active then.

``objective_met_before_end`` reads the objective's metric over the job (every value the script saved with the
debugger, ``contracts.objective.ObjectiveCourse``): it holds when the job reported it once per epoch (as many values
as it trained epochs), met the objective after an epoch before the last, and missed it at the end. The job trained
past its best epoch; ``to_best_epoch`` (``contracts.remedy_changes``) sets the epochs to that one.
``objective_past_peak`` reads the same course: it holds when the metric was best before the course's last third
and that third gave back at least a quarter of what it had gained (``ObjectiveCourse.past_peak``), whether or not it
ever met the objective. More of the same training would take it further from its best; a course the job did not
report counts as not past its peak. ``objective_still_rising`` holds when the metric's recent reports rose by more than
their noise and its last report is within that noise of its best (of at least four, above its first): the job ended
while it still improved (``ObjectiveCourse.still_rising``).
``loss_weighted_by_class`` holds when the job's training loss was corrected for class frequencies, by the debugger
in the job (run_spec.debugger_class_weighting "balanced", or "logit_adjusted": a per-class shift of the scores, the
other way the debugger makes a rare class count) or by the script's own ``class_weighting`` knob set to "balanced".
``loss_robust_to_wrong_labels`` holds when the job trained on the debugger's loss robust to wrong labels
(run_spec.debugger_robust_loss "generalized_cross_entropy"). Both read the job the next one is planned from (the
closest to the objective so far), whose loss the next job goes back to.

Each test that holds adds a fact, with its numbers, to the reason the planner writes.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from contracts.debugger_settings import BY_FIELD
from contracts.hyperparameter_values import Value, is_number, show
from contracts.situation import Situation

LOSS_TRENDS = ("rising", "falling")
#: The series ``spike_series`` names (contracts.situation.Situation.spike).
SPIKE_SERIES = ("loss", "gradient norm")
#: The loss_shape condition's word for a job that reported too little of its loss's course to tell.
UNKNOWN_LOSS_SHAPE = "unknown"


@dataclasses.dataclass(frozen=True)
class Fact:
    """One test of a condition that held, with what it measured: the evidence a decision names."""

    #: The condition's key (``initial_gradient_norm_above``, ``training_labels``, ...).
    test: str
    #: The sentence the reasons use, with its numbers.
    text: str
    #: What the job showed (a number, a word such as "warmup" or "noisy"), and the bound it was held against.
    measured: Value | None = None
    bound: Value | None = None


@dataclasses.dataclass(frozen=True)
class Condition:
    """All given tests must hold. Empty: always."""

    phase: str | None = None
    early: bool | None = None
    initial_gradient_norm_above: float | None = None
    loss: str | None = None
    issue_kind: str | None = None
    issue_value_above: float | None = None
    issue_value_below: float | None = None
    hyperparameters: tuple[tuple[str, Value], ...] = ()
    hyperparameters_above: tuple[tuple[str, float], ...] = ()
    hyperparameters_below: tuple[tuple[str, float], ...] = ()
    spiked_above: float | None = None
    spike_phase: str | None = None
    #: With ``spiked_above``: only this series counts ("loss" or "gradient norm"; the gradient norm grows in healthy
    #: training too, the loss does not rise above its start at a rate too small).
    spike_series: str | None = None
    #: The targets' scale above this many times what the model's outputs start at (Situation.target_scale).
    target_scale_above: float | None = None
    #: How the training loss or the total gradient norm diverged, one of these (contracts.divergence.DIVERGENCE_KINDS).
    diverged: tuple[str, ...] = ()
    #: The shapes of the loss's course this holds for (contracts.loss_history.LOSS_SHAPES, or "unknown": the job
    #: reported too little of it).
    loss_shape: tuple[str, ...] = ()
    #: The findings about the training labels this holds for (contracts.training_labels.LABEL_FINDINGS).
    training_labels: tuple[str, ...] = ()
    #: The job met the objective after an earlier epoch and trained past it (see :attr:`Situation.best_epoch`).
    objective_met_before_end: bool | None = None
    #: The objective's metric fell from an earlier best over the job's last third (see :attr:`Situation.past_peak`).
    objective_past_peak: bool | None = None
    #: The objective's metric was at its best at the job's last report (see :attr:`Situation.still_rising`).
    objective_still_rising: bool | None = None
    #: The job's training loss was corrected for class frequencies (see :attr:`Situation.loss_weighted_by_class`).
    loss_weighted_by_class: bool | None = None
    #: The job trained on the debugger's robust loss (see :attr:`Situation.loss_robust_to_wrong_labels`).
    loss_robust_to_wrong_labels: bool | None = None
    #: The job's match with its training labels settled short of its held-out score, by enough to suspect the labels
    #: but not to name them noisy (``contracts.training_labels.short_match``).
    labels_short_of_held_out: bool | None = None
    #: The job learned nothing its objective can show (see :attr:`Situation.learned_nothing`).
    learned_nothing: bool | None = None
    #: An earlier job of the run blew up at a rate above the one this job ran (see :meth:`Situation.blown_up_above`).
    blew_up_at_a_higher_rate: bool | None = None
    #: The debugger settings the job ran with (run_spec field -> value, ``contracts.debugger_settings``).
    debugger_settings: tuple[tuple[str, Value], ...] = ()
    #: Debugger settings some job of the run ran with, even one the planner went back from (a loss change that made
    #: things worse is undone, and the next loss change still follows it: Situation.debugger_settings_tried).
    debugger_settings_tried: tuple[tuple[str, Value], ...] = ()

    @property
    def names_a_cause(self) -> bool:
        """Whether this condition names a cause of the failure in the run itself (a setting of its hyperparameters,
        what its training labels say, or epochs trained past the one that met the objective), not only the loss's
        course or the rule's finding: such a remedy still answers a missed objective that the training labels
        explain (``plan``)."""
        return (
            bool(self.training_labels)
            or bool(self.diverged)
            or bool(self.objective_met_before_end)
            or bool(self.blew_up_at_a_higher_rate)
            or any(getattr(self, key) for key in HYPERPARAMETER_TESTS)
        )

    def check(self, situation: Situation, settings: Mapping[str, Value]) -> tuple[bool, list[Fact]]:
        """(holds, the facts behind it with their numbers). ``settings``: the job's hyperparameters and debugger
        settings (``contracts.debugger_settings``)."""
        facts: list[Fact] = []
        if self.phase is not None:
            if situation.phase != self.phase:
                return False, []
            facts.append(Fact("phase", f"it happened in the {self.phase} phase", self.phase))
        if self.early is not None:
            if situation.early is None or situation.early != self.early:
                return False, []
            limit = show(situation.early_limit)
            where = f"at step {situation.issue_step_counted}"
            text = f"{where}, before step {limit}" if self.early else f"{where}, after step {limit}"
            facts.append(Fact("early", text, situation.issue_step_counted, situation.early_limit))
        if self.initial_gradient_norm_above is not None:
            norm = situation.initial_gradient_norm
            if norm is None or not math.isfinite(norm) or norm <= self.initial_gradient_norm_above:
                return False, []
            facts.append(Fact(
                "initial_gradient_norm_above",
                f"the initial gradient norm {show(norm)} is above {show(self.initial_gradient_norm_above)}",
                norm, self.initial_gradient_norm_above,
            ))
        if self.loss is not None:
            if situation.loss_trend != self.loss:
                return False, []
            facts.append(Fact(
                "loss",
                f"the loss went from {show(situation.initial_loss)} to {show(situation.last_finite_loss)} ({self.loss})",
                situation.last_finite_loss, situation.initial_loss,
            ))
        if self.issue_kind is not None:
            if situation.issue_kind != self.issue_kind:
                return False, []
            facts.append(Fact("issue_kind", f"the rule found {self.issue_kind.replace('_', ' ')}", self.issue_kind))
        value = situation.issue_value
        tensor = f" ({situation.issue_tensor})" if situation.issue_tensor else ""
        if self.issue_value_above is not None:
            if value is None or not math.isfinite(value) or value <= self.issue_value_above:
                return False, []
            facts.append(Fact(
                "issue_value_above", f"the rule's value {show(value)}{tensor} is above {show(self.issue_value_above)}",
                value, self.issue_value_above,
            ))
        if self.issue_value_below is not None:
            if value is None or not math.isfinite(value) or value >= self.issue_value_below:
                return False, []
            facts.append(Fact(
                "issue_value_below", f"the rule's value {show(value)}{tensor} is below {show(self.issue_value_below)}",
                value, self.issue_value_below,
            ))
        if self.spiked_above is not None:
            spike = situation.spike(self.spiked_above, self.spike_series)
            if spike is None:
                return False, []
            if self.spike_phase is not None and spike.peak.phase != self.spike_phase:
                return False, []
            fired = f" before the rule fired at step {situation.issue_step_counted}" if situation.issue_step is not None else ""
            facts.append(Fact(
                "spiked_above", f"{spike.describe()}{fired}, more than {show(self.spiked_above)}x its initial value",
                spike.ratio, self.spiked_above,
            ))
        if self.target_scale_above is not None:
            scale = situation.target_scale
            if scale is None or scale <= self.target_scale_above:
                return False, []
            facts.append(Fact(
                "target_scale_above",
                f"the targets' scale (root mean square {show(round(situation.target_rms, 4))}) is {show(round(scale, 1))} "
                f"times what the model's outputs start at ({show(round(situation.output_rms, 4))}, counted as at least "
                f"1), above {show(self.target_scale_above)}",
                round(scale, 4), self.target_scale_above,
            ))
        if self.diverged:
            found = situation.divergences(self.diverged)
            if not found:
                return False, []
            for divergence in found:
                facts.append(Fact("diverged", divergence.describe(), divergence.kind, round(divergence.ratio, 4)))
        if self.loss_shape:
            shape = situation.loss_course
            name = shape.shape if shape else UNKNOWN_LOSS_SHAPE
            if name not in self.loss_shape:
                return False, []
            if shape is not None:
                facts.append(Fact("loss_shape", shape.describe(), name))
        if self.training_labels:
            finding = situation.labels
            if finding is None or finding.kind not in self.training_labels:
                return False, []
            facts.append(Fact("training_labels", finding.describe(), finding.kind))
        if self.labels_short_of_held_out is not None:
            short = situation.short_match
            suspect = short is not None and short.labels_suspect
            if suspect != self.labels_short_of_held_out:
                return False, []
            if suspect:
                facts.append(Fact("labels_short_of_held_out", short.sentence, True))
        for key, fact in LOSS_TESTS.items():
            wanted = getattr(self, key)
            if wanted is not None:
                if getattr(situation, key) != wanted:
                    return False, []
                if wanted:
                    facts.append(Fact(key, fact, True))
        for key, (reading, describe) in COURSE_READINGS.items():
            wanted = getattr(self, key)
            if wanted is not None:
                if getattr(situation, reading) != wanted:
                    return False, []
                if wanted:
                    facts.append(Fact(key, getattr(situation, describe)(), True))
        if self.blew_up_at_a_higher_rate is not None:
            ceiling = situation.blown_up_above(settings)
            if (ceiling is not None) != self.blew_up_at_a_higher_rate:
                return False, []
            if ceiling is not None:
                facts.append(Fact(
                    "blew_up_at_a_higher_rate",
                    f"{ceiling.setting} {show(settings[ceiling.setting])} is below {show(ceiling.value)}, {ceiling.why}",
                    settings[ceiling.setting], ceiling.value,
                ))
        if self.objective_met_before_end is not None:
            best = situation.best_epoch
            if (best is not None) != self.objective_met_before_end:
                return False, []
            if best is not None:
                course, objective = situation.objective_course, situation.objective
                facts.append(Fact(
                    "objective_met_before_end",
                    f"{objective.metric_name} met the objective ({objective.comparison} {show(objective.target_value)}) "
                    f"after epoch {best} of {course.reports}, at {show(course.best_value)} (its best), and ended at "
                    f"{show(course.last_value)}",
                    best,
                ))
        for key in ("hyperparameters", "debugger_settings"):
            for name, expected in getattr(self, key):
                if settings.get(name) != expected:
                    return False, []
                label = f"the debugger's {BY_FIELD[name].name}" if name in BY_FIELD else name
                facts.append(Fact(key, f"{label} is {show(expected)}", expected, name))
        for name, expected in self.debugger_settings_tried:
            if (name, expected) not in situation.debugger_settings_tried:
                return False, []
            facts.append(Fact(
                "debugger_settings_tried", f"a job of this run trained with the debugger's {BY_FIELD[name].name} "
                f"{show(expected)}", expected, name,
            ))
        for side, tests in (("above", self.hyperparameters_above), ("below", self.hyperparameters_below)):
            for name, bound in tests:
                current = settings.get(name)
                if not is_number(current) or not (current > bound if side == "above" else current < bound):
                    return False, []
                facts.append(Fact(f"hyperparameters_{side}", f"{name} {show(current)} is {side} {show(bound)}", current, bound))
        return True, facts

    def guarded_against(self, situation: Situation, hyperparameters: Mapping[str, Value]) -> str | None:
        """What the job showed, when that alone keeps this condition from holding: ``objective_past_peak: false``
        on a course past its peak, every other test holding (None otherwise). The reason a run ends with says it."""
        if self.objective_past_peak is False and situation.past_peak:
            holds, _ = dataclasses.replace(self, objective_past_peak=None).check(situation, hyperparameters)
            if holds:
                return situation.describe_peak()
        return None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        for key in CONDITION_KEYS:
            if key in HYPERPARAMETER_TESTS:
                continue
            if key in ("debugger_settings", "debugger_settings_tried"):
                if getattr(self, key):
                    data[key] = {BY_FIELD[field].name: value for field, value in getattr(self, key)}
                continue
            if key in ("diverged", "loss_shape", "training_labels"):
                values = getattr(self, key)
                if values:
                    data[key] = values[0] if len(values) == 1 else list(values)
            elif getattr(self, key) is not None:
                data[key] = getattr(self, key)
        for key in HYPERPARAMETER_TESTS:
            if getattr(self, key):
                data[key] = dict(getattr(self, key))
        return data

    def hyperparameter_names(self) -> tuple[str, ...]:
        return tuple(name for key in HYPERPARAMETER_TESTS for name, _ in getattr(self, key))


CONDITION_KEYS = (
    "phase",
    "early",
    "initial_gradient_norm_above",
    "loss",
    "issue_kind",
    "issue_value_above",
    "issue_value_below",
    "hyperparameters",
    "hyperparameters_above",
    "hyperparameters_below",
    "spiked_above",
    "spike_phase",
    "spike_series",
    "target_scale_above",
    "diverged",
    "loss_shape",
    "training_labels",
    "objective_met_before_end",
    "objective_past_peak",
    "objective_still_rising",
    "loss_weighted_by_class",
    "loss_robust_to_wrong_labels",
    "labels_short_of_held_out",
    "learned_nothing",
    "blew_up_at_a_higher_rate",
    "debugger_settings",
    "debugger_settings_tried",
)
#: The conditions that are true or false.
BOOLEAN_TESTS = (
    "objective_met_before_end",
    "objective_past_peak",
    "objective_still_rising",
    "loss_weighted_by_class",
    "loss_robust_to_wrong_labels",
    "labels_short_of_held_out",
    "learned_nothing",
    "blew_up_at_a_higher_rate",
)
#: The conditions on how the job computed its training loss (a Situation field of the same name), with the fact each
#: adds to the reason when it holds true.
LOSS_TESTS = {
    "loss_weighted_by_class": "the job's training loss was corrected for class frequencies",
    "loss_robust_to_wrong_labels": "the job trained on the debugger's loss robust to wrong labels",
}
#: The true-or-false readings of the job's course (condition key -> the Situation's reading, the method that says it
#: with its numbers when it holds).
COURSE_READINGS = {
    "objective_past_peak": ("past_peak", "describe_peak"),
    "objective_still_rising": ("still_rising", "describe_rise"),
    "learned_nothing": ("learned_nothing", "describe_learned_nothing"),
}
#: The conditions on the run's hyperparameters (their names follow the script's, see contracts.remedies.adapt_to_script).
HYPERPARAMETER_TESTS = ("hyperparameters", "hyperparameters_above", "hyperparameters_below")
