"""ObjectiveOutOfReach: the product's own rule (SageMaker Debugger has none like it) that stops a job which can no
longer reach the run's objective in the epochs it has left, so the workflow plans the next job from what this one
showed instead of waiting for it to end short. The judgement is ``contracts.objective_reach``'s; the rule feeds it the
objective's metric as the script reports it (saved with the debugger, or printed and read with the run_spec's
metric_definitions), once per epoch, and the planned epochs.

The workflow gives it the run's objective and ``planned_epochs`` (the run_spec's epochs knob, ``num_epochs`` in
``hyperparameter_names``); without either it never fires, and its status says why.
"""

from __future__ import annotations

from contracts.objective import Objective
from contracts.objective_reach import NEAR_MISS_SHARE, OUT_OF_REACH, RULE_NAME, judge_reach
from debugger.rules.rule import Rule
from debugger.rules.run_objective import metric_values


class ObjectiveOutOfReach(Rule):
    """Fires when the objective's metric, judged each time a value comes, cannot reach the objective by the last of
    ``planned_epochs`` (see contracts.objective_reach)."""

    def __init__(self, base_trial, planned_epochs: int | None = None, objective: Objective | None = None):
        super().__init__(base_trial)
        self.planned_epochs = planned_epochs
        self.objective = objective
        self._judged = 0
        if objective is None or planned_epochs is None:
            missing = "objective" if objective is None else "planned_epochs (the run_spec maps no num_epochs)"
            self.note(f"not judged: no {missing}")

    def invoke_at_step(self, step: int) -> bool:
        if self.objective is None or self.planned_epochs is None:
            return False
        values = metric_values(self.base_trial, self.objective.metric_name)
        if len(values) == self._judged:
            return False
        self._judged = len(values)
        reach = judge_reach(self.objective, values, self.planned_epochs)
        if reach is None:
            return False
        if reach.near_miss:
            self.note(
                f"not judged after {reach.reports} of {reach.planned} epochs: its best, {reach.best:.4g}, is within "
                f"{NEAR_MISS_SHARE:.0%} of {self.objective.describe()}"
            )
            return False
        if not reach.out_of_reach:
            self.note(f"within reach after {reach.reports} of {reach.planned} epochs: at most {reach.projected:.4g}")
            return False
        self.report(self.objective.metric_name, reach.best, reach.describe(self.objective), kind=OUT_OF_REACH)
        return True


OBJECTIVE_RULES: dict[str, type[Rule]] = {RULE_NAME: ObjectiveOutOfReach}
