"""AWS's check_accuracy rule (amazon-sagemaker-examples, sagemaker-debugger/pytorch_iterative_model_pruning/
custom_rule/check_accuracy.py), with the trial's public mode()/mode_step() instead of its private step map and
smdebug 1.0.34's action_str: the running accuracy over evaluation steps against the previous accuracy."""

import numpy as np

from smdebug import modes
from smdebug.rules.rule import Rule


class check_accuracy(Rule):
    def __init__(self, base_trial, predictions="CrossEntropyLoss_input_0", labels="CrossEntropyLoss_input_1", previous_accuracy="0.8", threshold="0.05"):
        super().__init__(base_trial, action_str="")
        self.predictions = predictions
        self.labels = labels
        self.previous_accuracy = float(previous_accuracy)
        self.threshold = float(threshold)
        self.correct = 0
        self.samples = 0

    def invoke_at_step(self, step):
        if self.base_trial.mode(step) == modes.EVAL:
            eval_step = self.base_trial.mode_step(step)
            predictions = np.argmax(self.base_trial.tensor(self.predictions).value(eval_step, mode=modes.EVAL), axis=1)
            labels = self.base_trial.tensor(self.labels).value(eval_step, mode=modes.EVAL)
            self.correct += np.sum(predictions == labels)
            self.samples += predictions.shape[0]
            current_accuracy = self.correct / self.samples
            if self.previous_accuracy - current_accuracy > self.threshold:
                self.logger.info(f"Step {eval_step}: accuracy dropped to {current_accuracy}")
                return True
        return False
