"""A custom rule (debugger.rules.Rule) that records what the built-in loss-curve rules read at every step: each
loss the hook measures, with the step's mode and mode step, and the latest value of each metric the script
reported. make_trajectories.py runs it inside real training jobs."""

import json

from debugger.rules import Rule


class LossRecorder(Rule):
    def __init__(self, base_trial, path="trajectory.jsonl"):
        super().__init__(base_trial)
        self.path = path
        self.out = open(path, "w")  # noqa: SIM115 - open for the job's life; the process's end closes it

    def invoke_at_step(self, step):
        mode, mode_step = self.base_trial._global_to_mode[step]
        for name, (collections, value) in self.base_trial.signals_at(step).items():
            if "losses" in collections:
                record = {"step": step, "mode": mode.name, "mode_step": mode_step, "loss": float(value),
                          "metrics": dict(self.base_trial.latest_metrics), "name": name}
                self.out.write(json.dumps(record) + "\n")
                self.out.flush()
        return False
