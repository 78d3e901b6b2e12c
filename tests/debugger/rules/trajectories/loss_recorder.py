"""A custom rule (debugger.rules.Rule) that records what the built-in curve and gradient rules read at every step:
each loss the hook measures, with the step's mode and mode step, and the latest value of each metric the script
reported; with ``gradients`` "true", the total gradient norm at every step and, at the steps the hook saves, each
gradient tensor's mean absolute value (all VanishingGradient compares) and the tensors the hook found cannot carry a
signal. make_trajectories.py runs it
inside real training jobs."""

import json

import numpy as np

from debugger.rules import Rule


class LossRecorder(Rule):
    def __init__(self, base_trial, path="trajectory.jsonl", gradients="false"):
        super().__init__(base_trial)
        self.gradients = gradients == "true"
        self.out = open(path, "w")  # noqa: SIM115 - open for the job's life; the process's end closes it

    def invoke_at_step(self, step):
        mode, mode_step = self.base_trial._global_to_mode[step]
        record = {"step": step, "mode": mode.name, "mode_step": mode_step, "metrics": dict(self.base_trial.latest_metrics)}
        for name, (collections, value) in self.base_trial.signals_at(step).items():
            if "losses" in collections:
                record["loss"] = float(value)
            elif name == "total_gradient_norm" and self.gradients:
                record["total_gradient_norm"] = float(value)
        if self.gradients:
            saved = self.base_trial.names_at(step)
            record["gradients"] = {
                name: float(np.mean(np.abs(self.base_trial.tensor(name).value(step))))
                for name in self.base_trial.tensor_names(collection="gradients") if name.startswith("gradient/") and name in saved
            }
            record["silent"] = sorted(self.base_trial.silent_tensors)
        if "loss" in record:
            self.out.write(json.dumps(record) + "\n")
            self.out.flush()
        return False
