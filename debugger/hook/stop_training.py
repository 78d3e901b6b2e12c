"""The StopTraining action as the training script sees it. Imports nothing heavy: the job launcher catches
it without importing torch (an XGBoost job has none)."""

from __future__ import annotations

from contracts.job import stop_training_failure_text


class StopTrainingRequested(BaseException):
    """A rule with a StopTraining action found an issue; raised before any further optimizer step.

    A BaseException, like KeyboardInterrupt: a training loop's ``except Exception`` must not swallow
    the stop. The job launcher (or the script) turns it into the job's failure text and exit code 3.
    """

    def __init__(self, rule_name: str, step: int, message: str, step_name: str | None = None):
        """``step``: the global step (as saved); ``step_name``: how the text names it (contracts.step_names)."""
        self.rule_name = rule_name
        self.step = step
        self.message = message
        super().__init__(stop_training_failure_text(rule_name, step, message, step_name))
