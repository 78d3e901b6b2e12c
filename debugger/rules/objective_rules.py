"""ObjectiveOutOfReach: the product's own rule (SageMaker Debugger has none like it) that stops a job which can no
longer reach the run's objective in the epochs it has left, so the workflow plans the next job from what this one
showed instead of waiting for it to end short. The judgement is ``contracts.objective_reach``'s; the rule feeds it the
objective's metric as the script reports it (saved with the debugger, or printed and read with the run_spec's
metric_definitions), once per epoch, and the planned epochs.

The workflow gives it the run's objective and ``planned_epochs`` (wherever the run_spec states the epochs:
``contracts.planned_epochs``). A job it cannot judge (no objective, no epochs, a job too short to judge, a metric
reported more often than once an epoch or not a finite number) is named in its status (``not_judged``) and in the
run's summary: its quiet status is no verdict. A metric never reported is the monitor's to say (objective_unmeasured).
"""

from __future__ import annotations

import math

from contracts.objective import Objective
from contracts.objective_reach import (
    NEAR_MISS_SHARE,
    OUT_OF_REACH,
    RULE_NAME,
    first_judged_report,
    judge_reach,
    reaches,
)
from contracts.planned_epochs import EPOCH_NAMES_SHOWN
from debugger.rules.rule import Rule
from debugger.rules.run_objective import metric_values

NO_OBJECTIVE = "no objective: the run_spec declares none"
NO_EPOCHS = (
    "no planned epochs: the run_spec states no epoch count (a hyperparameter named "
    f"{EPOCH_NAMES_SHOWN}, or the one hyperparameter_names maps as num_epochs)"
)


class ObjectiveOutOfReach(Rule):
    """Fires when the objective's metric, judged each time a value comes, cannot reach the objective by the last of
    ``planned_epochs`` (see contracts.objective_reach)."""

    def __init__(self, base_trial, planned_epochs: int | None = None, objective: Objective | None = None):
        super().__init__(base_trial)
        self.planned_epochs = planned_epochs
        self.objective = objective
        self._values: list[float] = []
        self._judged_once = False
        if objective is None or planned_epochs is None:
            self.note(f"not judged: {self._missing()}")

    def _missing(self) -> str | None:
        if self.objective is None:
            return NO_OBJECTIVE
        if self.planned_epochs is None:
            return NO_EPOCHS
        return None

    @property
    def not_judged(self) -> str | None:
        """Why this job cannot be judged (None: it was judged, or may still be)."""
        missing = self._missing()
        if missing is not None:
            return missing
        planned, first, name = self.planned_epochs, first_judged_report(self.planned_epochs), self.objective.metric_name
        if len(self._values) > planned:  # whatever it judged, it judged reports as epochs
            return f"{name} was reported {len(self._values)} times in a job of {planned} planned epochs, not once an epoch"
        if self._judged_once:
            return None
        if planned <= first:
            return (
                f"a job of {planned} planned epochs is too short: the rule judges from epoch {first} on and never at "
                "the last"
            )
        if not all(math.isfinite(value) for value in self._values):
            return f"{name} was not a finite number"
        return None

    def invoke_at_step(self, step: int) -> bool:
        if self.objective is None or self.planned_epochs is None:
            return False
        values = metric_values(self.base_trial, self.objective.metric_name)
        if len(values) == len(self._values):
            return False
        self._values = values
        reach = judge_reach(self.objective, values, self.planned_epochs)
        if reach is None:
            return False
        self._judged_once = True
        if reach.near_miss:
            self.note(
                f"not judged after {reach.reports} of {reach.planned} epochs: its best, {reach.best:.4g}, is within "
                f"{NEAR_MISS_SHARE:.0%} of {self.objective.describe()}"
            )
            return False
        if not reach.out_of_reach:
            self.note(
                f"within reach after {reach.reports} of {reach.planned} epochs: it {reaches(self.objective)} "
                f"{reach.projected:.4g}"
            )
            return False
        self.report(self.objective.metric_name, reach.best, reach.describe(self.objective), kind=OUT_OF_REACH)
        return True


OBJECTIVE_RULES: dict[str, type[Rule]] = {RULE_NAME: ObjectiveOutOfReach}
