"""A custom rule in the pattern of smdebug's WeightUpdateRatio (smdebug/rules): it requires each weight at the step and
at the saved step before it (tensor.prev_steps) and fires when a weight moved by more than ``threshold`` of its norm.
Written against smdebug 1.0.34's Rule, whose constructor takes ``action_str``."""

import numpy as np

from smdebug.rules.rule import Rule


class WeightChangeRule(Rule):
    def __init__(self, base_trial, threshold="0.5"):
        super().__init__(base_trial, action_str="")
        self.threshold = float(threshold)

    def set_required_tensors(self, step):
        for name in self.base_trial.tensor_names(collection="weights"):
            steps = self.base_trial.tensor(name).prev_steps(step, 2)
            if len(steps) == 2:
                self.req_tensors.add(name, steps=steps)

    def invoke_at_step(self, step):
        for tensor in self.req_tensors.get():
            before, after = self.req_tensors.get_tensor_steps(tensor.name)
            change = np.linalg.norm(tensor.value(after) - tensor.value(before)) / np.linalg.norm(tensor.value(before))
            if change > self.threshold:
                self.logger.info(f"{tensor.name} changed by {change:.3f} between steps {before} and {after}")
                return True
        return False
