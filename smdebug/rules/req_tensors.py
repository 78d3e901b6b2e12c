"""smdebug's RequiredTensors: the tensors (and steps) a rule declares in ``set_required_tensors``."""

from __future__ import annotations

from debugger.core.exceptions import TensorUnavailable


class RequiredTensorsForTrial:
    def __init__(self, trial):
        self.trial = trial
        self._steps: dict[str, list[int]] = {}
        self._tensors: dict = {}

    def add(self, name: str, steps, should_match_regex: bool = False) -> None:
        names = self.trial.tensor_names(regex=[name]) if should_match_regex else [name]
        for found in names:
            if not self.trial.has_tensor(found):
                raise TensorUnavailable(found)
            self._steps.setdefault(found, []).extend(steps)
            self._tensors.setdefault(found, self.trial.tensor(found))

    def get_tensor_steps(self, name: str) -> list[int]:
        return self._steps[name]

    def get_names(self):
        return self._steps.keys()

    def get(self):
        return self._tensors.values()

    def clear(self) -> None:
        self._steps.clear()
        self._tensors.clear()

    def fetch(self) -> None:
        """Wait for the steps (a trial that can wait) and load the values; TensorUnavailableForStep if one is missing."""
        steps = sorted({step for steps in self._steps.values() for step in steps})
        if steps and hasattr(self.trial, "wait_for_steps"):
            self.trial.wait_for_steps(steps)
        for name, wanted in self._steps.items():
            for step in wanted:
                self._tensors[name].value(step)


class RequiredTensors:
    def __init__(self, base_trial, other_trials=None):
        self.base_trial = base_trial
        self._per_trial = {id(trial): RequiredTensorsForTrial(trial) for trial in [base_trial, *(other_trials or [])]}

    def _for(self, trial) -> RequiredTensorsForTrial:
        return self._per_trial[id(trial if trial is not None else self.base_trial)]

    def add(self, name: str, steps, trial=None, should_match_regex: bool = False) -> None:
        self._for(trial).add(name, steps, should_match_regex=should_match_regex)

    def get_tensor_steps(self, name: str, trial=None) -> list[int]:
        return self._for(trial).get_tensor_steps(name)

    def get_names(self, trial=None):
        return self._for(trial).get_names()

    def get(self, trial=None):
        return self._for(trial).get()

    def clear(self) -> None:
        for required in self._per_trial.values():
            required.clear()

    def fetch(self) -> None:
        for required in self._per_trial.values():
            required.fetch()
