"""One change a remedy makes to one of a job's settings: a hyperparameter of the script, or a setting of the debugger
in the job (``contracts.debugger_settings``). An operation (:data:`OPERATIONS`), optional inclusive bounds on the
result, and the result written as the setting's kind is (``contracts.hyperparameter_values``). Standard library only;
``contracts.remedies`` builds remedies from these."""

from __future__ import annotations

import dataclasses
from typing import Any

from contracts.debugger_settings import BY_FIELD
from contracts.hyperparameter_values import (
    FLAG,
    INTEGER,
    REAL,
    Value,
    fits_kind,
    is_number,
    kind_of_value,
    show,
    written,
)

#: ``{"hyperparameter": "num_epochs", "to_best_epoch": true}``: the epochs after which the job's held-out metric met
#: the objective at its best (``contracts.objective.ObjectiveCourse``); it does not apply when the job's course does
#: not show one (``best_epoch`` None). Early stopping through the script's own epoch count.
TO_BEST_EPOCH = "to_best_epoch"
#: ``{"hyperparameter": "learning_rate", "divide_by_target_scale": true}``: the rate divided by how many times a
#: regression's targets exceed what its outputs start at (``contracts.situation.Situation.step_target_scale``): under
#: SGD and a squared error the first steps grow with the targets' scale. It does not apply when the job measured none,
#: or when its loss's gradient is bounded (Huber, L1).
DIVIDE_BY_TARGET_SCALE = "divide_by_target_scale"
#: ``{"hyperparameter": "grad_clip", "times_typical_gradient_norm": 2}``: that many times the total gradient norm's
#: typical size before it spiked in the failed job (``contracts.situation.Situation.typical_gradient_norm``): a clipping
#: threshold on the network's own scale (a norm that starts at 1e3 is not clipped at 1). It does not apply when the
#: job measured no gradient norm.
TIMES_TYPICAL_GRADIENT_NORM = "times_typical_gradient_norm"
#: The operations whose result comes from the failed job's evidence, not only from their operand.
MEASURED_OPERATIONS = (TO_BEST_EPOCH, DIVIDE_BY_TARGET_SCALE, TIMES_TYPICAL_GRADIENT_NORM)
NUMERIC_OPERATIONS = ("multiply_by", "add", "at_most", "at_least")
#: What a change sets: a hyperparameter of the script, or a setting of the debugger in the job.
HYPERPARAMETER = "hyperparameter"
DEBUGGER = "debugger"
OPERATIONS = ("set_to", *NUMERIC_OPERATIONS, *MEASURED_OPERATIONS)


@dataclasses.dataclass(frozen=True)
class Change:
    """One setting, one operation, optional inclusive bounds on the result."""

    #: The hyperparameter's name, or the debugger setting's run_spec field (``debugger_robust_loss``): a job's
    #: settings are keyed so (``contracts.debugger_settings.BY_FIELD``).
    setting: str
    operation: str
    operand: Value
    minimum: float | None = None
    maximum: float | None = None
    above: float | None = None
    below: float | None = None
    #: What the setting is (``contracts.hyperparameter_values.KINDS``); None: what its JSON value says.
    kind: str | None = None

    @property
    def target(self) -> str:
        """:data:`DEBUGGER` for a debugger setting, else :data:`HYPERPARAMETER`."""
        return DEBUGGER if self.setting in BY_FIELD else HYPERPARAMETER

    @property
    def label(self) -> str:
        """How the reasons name the setting: the hyperparameter, or "the debugger's robust_loss"."""
        return f"the debugger's {BY_FIELD[self.setting].name}" if self.setting in BY_FIELD else self.setting

    def kind_for(self, current: Value) -> str:
        return self.kind or kind_of_value(current)

    def result(
        self, current: Value, best_epoch: int | None = None, target_scale: float | None = None,
        gradient_norm: float | None = None,
    ) -> Value:
        """The value after the operation, written as its kind is (a whole number rounded, a real number without
        float noise, a flag as the run_spec writes it), whether or not it applies. ``best_epoch``: the job's, for
        :data:`TO_BEST_EPOCH`; ``target_scale``: for :data:`DIVIDE_BY_TARGET_SCALE` (None: it has none, and the value
        stays); ``gradient_norm``: the typical total gradient norm, for :data:`TIMES_TYPICAL_GRADIENT_NORM`."""
        operand = self.operand
        kind = self.kind_for(current)
        if self.operation == TO_BEST_EPOCH:
            return current if best_epoch is None else best_epoch
        if self.operation == DIVIDE_BY_TARGET_SCALE:
            if target_scale is None or not target_scale > 0:
                return current
            return written(float(f"{current / target_scale:.2g}"), REAL, current)  # two digits: 1e-05, not 1.0013e-05
        if self.operation == TIMES_TYPICAL_GRADIENT_NORM:
            if gradient_norm is None or not gradient_norm > 0:
                return current
            return written(float(f"{operand * gradient_norm:.2g}"), REAL, current)
        if self.operation == "set_to":
            if kind == FLAG or (kind == INTEGER and fits_kind(operand, INTEGER)) or (kind == REAL and is_number(operand)):
                return written(operand, kind, current)
            return operand
        if self.operation == "multiply_by":
            new = current * operand
        elif self.operation == "add":
            new = current + operand
        elif self.operation == "at_most":
            new = min(current, operand)
        else:  # at_least
            new = max(current, operand)
        return written(new, INTEGER if kind == INTEGER else REAL, current)

    def apply(
        self, current: Value, best_epoch: int | None = None, target_scale: float | None = None,
        gradient_norm: float | None = None,
    ) -> Value | None:
        """The new value, or None when the change does not apply (no change, or outside its bounds)."""
        new = self.result(current, best_epoch, target_scale, gradient_norm)
        if new == current:
            return None
        if self.minimum is not None and new < self.minimum:
            return None
        if self.maximum is not None and new > self.maximum:
            return None
        if self.above is not None and not new > self.above:
            return None
        if self.below is not None and not new < self.below:
            return None
        return new

    def describe(self) -> str:
        """'multiply lr by 0.5 (not below 1e-05)'."""
        switch = "on" if self.operand else "off"
        verbs = {
            "set_to": f"turn {self.label} {switch}"
            if self.kind == FLAG
            else f"set {self.label} to {show(self.operand)}",
            "multiply_by": f"multiply {self.label} by {show(self.operand)}",
            "add": f"add {show(self.operand)} to {self.label}",
            "at_most": f"cap {self.label} at {show(self.operand)}",
            "at_least": f"raise {self.label} to at least {show(self.operand)}",
            TO_BEST_EPOCH: f"set {self.label} to the epoch at which the objective was met at its best",
            DIVIDE_BY_TARGET_SCALE: f"divide {self.label} by the targets' measured scale",
            TIMES_TYPICAL_GRADIENT_NORM: f"set {self.label} to {show(self.operand)} times the total gradient norm's "
            "typical size before it spiked",
        }
        bounds = []
        if self.minimum is not None:
            bounds.append(f"not below {show(self.minimum)}")
        if self.maximum is not None:
            bounds.append(f"not above {show(self.maximum)}")
        if self.above is not None:
            bounds.append(f"while it stays above {show(self.above)}")
        if self.below is not None:
            bounds.append(f"while it stays below {show(self.below)}")
        return verbs[self.operation] + (f" ({', '.join(bounds)})" if bounds else "")

    def why_not(self, current: Value) -> str:
        """Why it does not apply to ``current``, with the numbers."""
        reason = self._why_not(current)
        if self.kind_for(current) == INTEGER and self.operation in NUMERIC_OPERATIONS:
            exact = self._unrounded(current)
            if exact != self.result(current):
                reason += (
                    f" ({self.label} is a whole number, so its results are rounded: exactly it would be "
                    f"{show(exact)}; declare it real in run_spec.hyperparameter_kinds for a real number)"
                )
        return reason

    def _unrounded(self, current: float) -> float:
        operand = float(self.operand)
        return {
            "multiply_by": current * operand,
            "add": current + operand,
            "at_most": min(current, operand),
            "at_least": max(current, operand),
        }[self.operation]

    def _why_not(self, current: Value) -> str:
        if self.operation == TO_BEST_EPOCH:  # it applies only where a job's course names an epoch
            return "the job's objective was not met at an epoch before its last"
        if self.operation == DIVIDE_BY_TARGET_SCALE:
            return "the job measured no regression targets' scale under a squared-error loss"
        if self.operation == TIMES_TYPICAL_GRADIENT_NORM and self.result(current) == current:
            return "the job measured no total gradient norm"
        new = self.result(current)
        if new == current:
            return f"{self.label} is already {show(current)}"
        if self.minimum is not None and new < self.minimum:
            return f"{self.label} {show(current)} -> {show(new)} would be below {show(self.minimum)}"
        if self.maximum is not None and new > self.maximum:
            return f"{self.label} {show(current)} -> {show(new)} would be above {show(self.maximum)}"
        if self.above is not None and not new > self.above:
            return f"{self.label} {show(current)} -> {show(new)} would be <= {show(self.above)}"
        if self.below is not None and not new < self.below:
            return f"{self.label} {show(current)} -> {show(new)} would be >= {show(self.below)}"
        return f"{self.label} {show(current)} -> {show(new)} applies"

    def to_json(self) -> dict[str, Any]:
        if self.target == DEBUGGER:
            data: dict[str, Any] = {"debugger_setting": BY_FIELD[self.setting].name, self.operation: self.operand}
        else:
            data = {"hyperparameter": self.setting, self.operation: self.operand}
        if self.minimum is not None:
            data["min"] = self.minimum
        if self.maximum is not None:
            data["max"] = self.maximum
        if self.above is not None:
            data["above"] = self.above
        if self.below is not None:
            data["below"] = self.below
        return data
