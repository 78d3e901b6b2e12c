"""SageMaker Debugger's built-in rules, with the parameters and defaults of the AWS developer guide
(``contracts.debugger_config.BUILTIN_RULE_DEFAULTS``), evaluated in the job on every step.

Cheap every-step signals (loss, total gradient norm) count as tensors of their collections, so an
explosion is caught at the step it happens whatever the save interval; full tensors only at saved steps.
"""

from __future__ import annotations

import math
import re

import numpy as np

from contracts.rule_status import NAN_INPUT
from debugger.collection import ACTIVATIONS, GRADIENTS, LOSSES, WEIGHTS
from debugger.modes import ModeKeys
from debugger.rules import GRADIENT_PREFIX, TOTAL_GRADIENT_NORM, Requirement, Rule
from debugger.tensor_selection import Selection as _Selection
from debugger.tensor_selection import first_value as _first_value
from debugger.trial import BaseTrial


def _nonfinite_model_inputs(trial: BaseTrial, step: int) -> int:
    """NaN or infinite values in the model's own input at ``step`` (held by the in-job trial, read only when a rule has
    already fired): evidence that the data, not the training, is wrong."""
    inputs = trial.model_inputs(step) if hasattr(trial, "model_inputs") else {}
    count = 0
    for value in inputs.values():
        array = value.float().cpu().numpy() if hasattr(value, "detach") and value.is_floating_point() else np.asarray(value)
        if array.dtype.kind == "f":
            count += int((~np.isfinite(array)).sum())
    return count


def _exploding_order(name: str) -> int:
    """Report the culprit, not the aggregate: per-parameter gradients first, derived scalars last."""
    if name.startswith(GRADIENT_PREFIX):
        return 0
    return 2 if name == TOTAL_GRADIENT_NORM else 1


class ExplodingTensor(Rule):
    """Fires on any NaN (or, unless only_nan, infinite) value in the selected tensors."""

    def __init__(self, base_trial, collection_names: list[str] | None = None, tensor_regex=(), only_nan: bool = False):
        super().__init__(base_trial)
        self.collection_names = list(collection_names or [])
        self.only_nan = only_nan
        self._selection = _Selection(base_trial, self.collection_names, tuple(tensor_regex), order=_exploding_order)

    def requirements(self) -> list[Requirement]:
        return [Requirement(collection) for collection in self.collection_names]

    def invoke_at_step(self, step: int) -> bool:
        # In the job: a tensor whose L2 norm is finite holds no NaN or infinity, so only the others are read
        # (a finite tensor can still overflow the norm: then it is read and checked value by value).
        norms = self.base_trial.norms(step, 2) if hasattr(self.base_trial, "norms") else {}
        finite = {name for name, norm in norms.items() if math.isfinite(norm)}
        for name, value in self._selection.values_at(step, skip=finite.__contains__):
            values = np.asarray(value)
            bad = np.isnan(values) if self.only_nan else ~np.isfinite(values)
            if bad.any():
                offending = float(values[bad].reshape(-1)[0])
                kind = "NaN" if self.only_nan else "NaN or infinite"
                message = f"{int(bad.sum())} {kind} value(s) in {name} at step {step}"
                inputs = _nonfinite_model_inputs(self.base_trial, step)
                if inputs:
                    # The model was fed NaN or infinity: no hyperparameter can fix that, the data must be.
                    message += f"; the model's input at that step held {inputs} NaN or infinite value(s): the data is wrong"
                self.report(name, offending, message)
                if inputs:
                    self.finding.kind = NAN_INPUT
                return True
        return False


class VanishingGradient(Rule):
    """Fires when the mean of |gradient| of a gradient tensor falls below ``threshold``.

    ``total_gradient_norm`` (every step) counts too: below the threshold it implies every gradient's mean
    |g| is below it."""

    def __init__(self, base_trial, threshold: float = 1e-7):
        super().__init__(base_trial)
        self.threshold = threshold
        self._selection = _Selection(base_trial, [GRADIENTS], ())

    def requirements(self) -> list[Requirement]:
        return [Requirement(GRADIENTS)]

    def invoke_at_step(self, step: int) -> bool:
        # In the job: mean |g| = ||g||_1 / n >= ||g||_2 / n, and the L2 norms come from one fused torch call per
        # step; only a tensor whose L2 norm over its size falls below the threshold is read and checked exactly.
        norms = self.base_trial.norms(step, 2) if hasattr(self.base_trial, "norms") else {}
        clear = {
            name for name, norm in norms.items() if math.isfinite(norm) and norm / self.base_trial.numel(step, name) >= self.threshold
        }
        for name, value in self._selection.values_at(step, skip=clear.__contains__):
            mean_abs = float(np.mean(np.abs(np.asarray(value, dtype=np.float64))))
            if mean_abs < self.threshold:
                self.report(name, mean_abs, f"mean |gradient| of {name} is {mean_abs:.3g} < threshold {self.threshold:g}")
                return True
        return False


#: The order LossNotDecreasing picks a mode in when none is given (AWS developer guide).
AUTO_MODES = (ModeKeys.EVAL, ModeKeys.TRAIN, ModeKeys.GLOBAL)


class LossNotDecreasing(Rule):
    """Compares each selected loss with its value at the newest step at least ``num_steps`` (mode steps)
    before, checking at most every ``num_steps``: fires when it fell by less than ``diff_percent`` percent
    (with 0: did not fall at all), or rose by more than ``increase_threshold_percent`` percent. A rise within
    that allowance is tolerated. ``mode`` picks the steps; by default EVAL, else TRAIN, else GLOBAL."""

    def __init__(
        self,
        base_trial,
        collection_names: list[str] | None = None,
        tensor_regex=(),
        use_losses_collection: bool = True,
        num_steps: int = 10,
        diff_percent: float = 0.0,
        increase_threshold_percent: float = 5.0,
        mode: str = "",
    ):
        super().__init__(base_trial)
        self.num_steps = num_steps
        self.diff_percent = diff_percent
        self.increase_threshold_percent = increase_threshold_percent
        self.mode = ModeKeys[mode] if mode else None
        collections = list(collection_names or []) + ([LOSSES] if use_losses_collection else [])
        self._needs_selection = bool(collections or tensor_regex)
        self._selection = _Selection(base_trial, collections, tuple(tensor_regex))
        self._history: dict[str, list[tuple[int, float]]] = {}
        self._last_check: dict[str, int] = {}

    def requirements(self) -> list[Requirement]:
        return [Requirement(LOSSES)]

    def _chosen_mode(self) -> ModeKeys:
        if self.mode is not None:
            return self.mode
        seen = {mode for mode, _ in self.base_trial._global_to_mode.values()}
        return next((mode for mode in AUTO_MODES if mode in seen), ModeKeys.GLOBAL)

    def invoke_at_step(self, step: int) -> bool:
        if not self._needs_selection:
            return False
        mode, mode_step = self.base_trial._global_to_mode.get(step, (ModeKeys.GLOBAL, step))
        if mode is not self._chosen_mode():
            return False
        for name, value in self._selection.values_at(step):
            loss = _first_value(value)
            if not math.isfinite(loss):
                continue
            history = self._history.setdefault(name, [])
            history.append((mode_step, loss))
            reference = next((entry for entry in reversed(history) if entry[0] <= mode_step - self.num_steps), None)
            last = self._last_check.get(name)
            if reference is None or (last is not None and mode_step - last < self.num_steps):
                continue
            self._last_check[name] = mode_step
            del history[: history.index(reference)]  # older entries can no longer be a reference
            if self._judge(name, loss, reference, mode_step):
                return True
        return False

    def _judge(self, name: str, loss: float, reference: tuple[int, float], mode_step: int) -> bool:
        reference_step, reference_loss = reference
        scale = abs(reference_loss) or 1.0
        where = f"from {reference_loss:.6g} (step {reference_step}) to {loss:.6g} (step {mode_step})"
        if loss > reference_loss:
            increase = (loss - reference_loss) / scale * 100.0
            if increase > self.increase_threshold_percent:
                self.report(name, loss, f"loss rose {increase:.3g}% {where}; allowed increase {self.increase_threshold_percent:g}%")
                self.finding.kind = "rising"  # RuleIssue.kind, as contracts.rule_status documents it
                return True
            return False
        decrease = (reference_loss - loss) / scale * 100.0
        if decrease < self.diff_percent or decrease == 0.0:
            self.report(name, loss, f"loss fell only {decrease:.3g}% {where}; required more than {self.diff_percent:g}%")
            self.finding.kind = "flat"
            return True
        return False


class WeightUpdateRatio(Rule):
    """Fires when ||w_s - w_p|| / (||w_p|| + epsilon) exceeds ``large_threshold`` or falls below
    ``small_threshold``; ``p`` is the previous saved step of the weight (with ``num_steps``: only when it lies
    at most ``num_steps`` back). Runs on TRAIN steps when there are any, else on GLOBAL steps."""

    def __init__(self, base_trial, num_steps: int | None = None, large_threshold: float = 10.0, small_threshold: float = 1e-8, epsilon: float = 1e-9):
        super().__init__(base_trial)
        self.num_steps = num_steps
        self.large_threshold = large_threshold
        self.small_threshold = small_threshold
        self.epsilon = epsilon
        self._selection = _Selection(base_trial, [WEIGHTS], ())
        self._previous: dict[str, tuple[int, np.ndarray]] = {}

    def requirements(self) -> list[Requirement]:
        # with num_steps the rule compares weights at most num_steps apart: the AWS guide has the user set
        # train.save_interval to num_steps; we save them that often, so a sparser save interval cannot disable it
        return [Requirement(WEIGHTS, every=self.num_steps)]

    def invoke_at_step(self, step: int) -> bool:
        mode, mode_step = self.base_trial._global_to_mode.get(step, (ModeKeys.GLOBAL, step))
        train_seen = ModeKeys.TRAIN in {m for m, _ in self.base_trial._global_to_mode.values()}
        if mode is not (ModeKeys.TRAIN if train_seen else ModeKeys.GLOBAL):
            return False
        for name, value in self._selection.values_at(step):
            weights = np.asarray(value, dtype=np.float64)
            previous = self._previous.get(name)
            self._previous[name] = (mode_step, weights.copy())
            if previous is None or previous[0] == mode_step:
                continue
            if self.num_steps is not None and mode_step - previous[0] > self.num_steps:
                continue
            ratio = float(np.linalg.norm(weights - previous[1]) / (np.linalg.norm(previous[1]) + self.epsilon))
            if ratio > self.large_threshold or ratio < self.small_threshold:
                bound = "above large_threshold" if ratio > self.large_threshold else "below small_threshold"
                self.report(name, ratio, f"update/weight ratio of {name} from step {previous[0]} to {mode_step} is {ratio:.3g}, {bound}")
                self.finding.kind = "too_large" if ratio > self.large_threshold else "too_small"  # the remedies key on it
                return True
        return False


class PoorWeightInitialization(Rule):
    """In the first ``steps`` steps: activation-input variances across layers differ by more than ``threshold``x,
    the 5th-95th percentile spread of a gradient is below ``distribution_range``, or the loss makes no new
    minimum for ``patience`` steps."""

    def __init__(
        self,
        base_trial,
        activation_inputs_regex=(),
        threshold: float = 10.0,
        distribution_range: float = 0.001,
        patience: int = 5,
        steps: int = 10,
    ):
        super().__init__(base_trial)
        self.threshold = threshold
        self.distribution_range = distribution_range
        self.patience = patience
        self.steps = steps
        regex = tuple(activation_inputs_regex) or (re.compile(".*relu_input"),)
        self._activations = _Selection(base_trial, [], regex)
        self._gradients = _Selection(base_trial, [GRADIENTS], ())
        self._losses = _Selection(base_trial, [LOSSES], ())
        self._best_loss: float | None = None
        self._best_step = 0

    def requirements(self) -> list[Requirement]:
        window = frozenset(range(self.steps))
        return [Requirement(ACTIVATIONS, window, self._activations.regex), Requirement(GRADIENTS, window)]

    def invoke_at_step(self, step: int) -> bool:
        if step >= self.steps:
            return False
        return self._activation_variance(step) or self._gradient_spread(step) or self._loss_stalled(step)

    def _activation_variance(self, step: int) -> bool:
        variances = {}
        for name in self._activations.names():
            tensor = self.base_trial.tensor(name)
            if tensor.has_step(step):
                variances[name] = float(np.var(np.asarray(tensor.value(step), dtype=np.float64)))
        if len(variances) < 2:
            return False
        smallest = min(variances, key=variances.get)
        largest = max(variances, key=variances.get)
        ratio = math.inf if variances[smallest] == 0 else variances[largest] / variances[smallest]
        if ratio > self.threshold:
            self.report(
                largest,
                ratio,
                f"activation-input variance ratio across layers is {ratio:.3g} (max {largest}, min {smallest}) "
                f"> threshold {self.threshold:g}",
            )
            return True
        return False

    def _gradient_spread(self, step: int) -> bool:
        for name, value in self._gradients.values_at(step):
            if name == TOTAL_GRADIENT_NORM:
                continue
            values = np.asarray(value, dtype=np.float64).reshape(-1)
            if values.size < 2 or not np.isfinite(values).all():
                continue
            low, high = np.percentile(values, [5, 95])
            if high - low < self.distribution_range:
                self.report(
                    name,
                    high - low,
                    f"5th-95th percentile spread of {name} is {high - low:.3g} < {self.distribution_range:g}",
                )
                return True
        return False

    def _loss_stalled(self, step: int) -> bool:
        for name, value in self._losses.values_at(step):
            loss = _first_value(value)
            if not math.isfinite(loss):
                continue
            if self._best_loss is None or loss < self._best_loss:
                self._best_loss, self._best_step = loss, step
            elif step - self._best_step >= self.patience:
                self.report(
                    name,
                    loss,
                    f"loss made no new minimum for {step - self._best_step} steps (best {self._best_loss:.6g})",
                )
                return True
            return False
        return False


BUILTIN_RULES: dict[str, type[Rule]] = {
    "ExplodingTensor": ExplodingTensor,
    "VanishingGradient": VanishingGradient,
    "LossNotDecreasing": LossNotDecreasing,
    "WeightUpdateRatio": WeightUpdateRatio,
    "PoorWeightInitialization": PoorWeightInitialization,
}

# The tensor and activation rules live in their own module; registered here so BUILTIN_RULES names every rule.
from debugger.tensor_rules import TENSOR_RULES  # noqa: E402

BUILTIN_RULES.update(TENSOR_RULES)
# The training-curve rules (ClassImbalance, StalledTrainingRule) use _Selection and add themselves to BUILTIN_RULES
# when their module has run: here, or later when the import began with that module (then it is still running).
# --- curve and XGBoost rules: modules of their own that build on the classes above and add themselves to
# BUILTIN_RULES as they load (a plain module import, so that importing either of them first works too)
import debugger.curve_rules  # noqa: E402, F401
import debugger.training_rules  # noqa: E402, F401
import debugger.xgboost_rules  # noqa: E402, F401

# --- end of curve and XGBoost rules
