"""SageMaker Debugger's built-in rules on whether training optimizes (ExplodingTensor, VanishingGradient,
LossNotDecreasing, WeightUpdateRatio, PoorWeightInitialization), with the parameters and defaults of the AWS developer guide
(``contracts.debugger_config.BUILTIN_RULE_DEFAULTS``), evaluated in the job on every step.

Cheap every-step signals (loss, total gradient norm) count as tensors of their collections, so an
explosion is caught at the step it happens whatever the save interval; full tensors only at saved steps.
"""

from __future__ import annotations

import math
import re

import numpy as np

from contracts.rule_status import NAN_INPUT, NAN_TARGET
from debugger.core.collection import ACTIVATIONS, GRADIENTS, LOSSES, WEIGHTS
from debugger.core.modes import ModeKeys
from debugger.rules import gradient_flow
from debugger.rules.loss_rule import LossNotDecreasing
from debugger.rules.rule import GRADIENT_PREFIX, TOTAL_GRADIENT_NORM, Requirement, Rule
from debugger.rules.tensor_selection import LossFall
from debugger.rules.tensor_selection import Selection as _Selection
from debugger.rules.tensor_selection import first_value as _first_value
from debugger.trial.trial import BaseTrial


def _nonfinite_model_inputs(trial: BaseTrial, step: int) -> int:
    """NaN or infinite values in the model's own input at ``step`` (held by the in-job trial, read only when a rule has
    already fired): evidence that the data, not the training, is wrong."""
    return _nonfinite(trial.model_inputs(step) if hasattr(trial, "model_inputs") else {})


def _nonfinite_loss_targets(trial: BaseTrial, step: int) -> int:
    """NaN or infinite values in the targets the training loss read at ``step`` (a regression's targets): the data."""
    return _nonfinite(trial.loss_targets(step) if hasattr(trial, "loss_targets") else {})


def _nonfinite(inputs: dict) -> int:
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
        if hasattr(self.base_trial, "finite_scalars"):
            finite |= self.base_trial.finite_scalars(step)  # the every-step loss and gradient norm, already numbers
        for name, value in self._selection.values_at(step, skip=finite.__contains__):
            values = np.asarray(value)
            bad = np.isnan(values) if self.only_nan else ~np.isfinite(values)
            if bad.any():
                offending = float(values[bad].reshape(-1)[0])
                kind = "NaN" if self.only_nan else "NaN or infinite"
                message = f"{int(bad.sum())} {kind} value(s) in {name} at {self.step_name(step)}"
                inputs = _nonfinite_model_inputs(self.base_trial, step)
                targets = 0 if inputs else _nonfinite_loss_targets(self.base_trial, step)
                if inputs:
                    # The model was fed NaN or infinity: no hyperparameter can fix that, the data must be.
                    message += f"; the model's input at that step held {inputs} NaN or infinite value(s): the data is wrong"
                elif targets:
                    message += (
                        f"; the targets the training loss read at that step held {targets} NaN or infinite value(s): the "
                        "data is wrong"
                    )
                self.report(name, offending, message)
                if inputs or targets:
                    self.finding.kind = NAN_INPUT if inputs else NAN_TARGET
                return True
        return False


#: VanishingGradient scales its threshold by the step's own training loss, else by the mean of this many recent ones.
LOSS_SCALE_STEPS = 10
#: VanishingGradient fires on the input side's gradient only when it is under the threshold at this many saved steps
#: in a row (the first of them are saved for it): one batch's gradient is not a run's flow. A step at which every
#: gradient of the model is under the threshold fires at once.
INPUT_SIDE_STEPS = 2


class _Skipped:
    """Tensors a rule left out at some step, with why (``Rule.skipped_tensors`` collects every ``skipped`` dict)."""

    def __init__(self):
        self.skipped: dict[str, str] = {}


class _Scaled:
    """' / 3.2 (the training loss fell from ...)' in a message when the threshold was scaled, else ''."""

    def __init__(self, fall: float, loss_fall: LossFall):
        self.fall, self.loss_fall = fall, loss_fall

    def __format__(self, spec: str) -> str:
        return f" / {self.fall:.3g} ({self.loss_fall.describe()})" if self.fall > 1.0 else ""


class VanishingGradient(Rule):
    """Fires when the gradient vanishes before it reaches the model's input side: the mean of |gradient| of every
    tensor of the model's first layer (:mod:`debugger.rules.gradient_flow`) is below ``threshold`` at
    ``INPUT_SIDE_STEPS`` saved steps in a row, or every gradient of the model is below it at one step, judged at the
    scale of the loss the gradients carry.

    ``total_gradient_norm`` (every step) counts too: below the threshold it implies every gradient's mean |g| is below
    it. Tensors that cannot carry a gradient (frozen parameters, a bias a normalization removes:
    :mod:`debugger.rules.tensor_signal`) are skipped; so is a small gradient away from the input side while the input
    side gets the signal (an attention key's bias, a fresh attention's query weights, an unused parameter: the signal
    that reached the input passed the depth they sit at), and the status details name each with its value. A gradient
    is as large as the loss it carries: once training has brought the loss down by a factor (the step's training loss
    against the first), the threshold is divided by that factor (:class:`debugger.rules.tensor_selection.LossFall`),
    so a model that has fit its data (a healthy CNN's loss at 7e-6 and its first layer's mean |g| at 3e-8, accuracy
    1.0) is not taken for one whose gradient died on its way to the first layers. SageMaker's rule compares every
    tensor with ``threshold`` alone."""

    def __init__(self, base_trial, threshold: float = 1e-7):
        super().__init__(base_trial)
        self.threshold = threshold
        # a frozen parameter or a bias a normalization removes has no gradient to speak of, by construction
        self._selection = _Selection(base_trial, [GRADIENTS], (), skip_silent=True)
        self._loss_fall = LossFall(base_trial, LOSS_SCALE_STEPS)
        self._downstream = _Skipped()
        self._input_low: list[int] = []  # the latest saved steps in a row whose input side was under the threshold

    def requirements(self) -> list[Requirement]:
        return [Requirement(GRADIENTS), Requirement(GRADIENTS, frozenset(range(INPUT_SIDE_STEPS)))]

    def invoke_at_step(self, step: int) -> bool:
        fall = self._loss_fall.at(step)
        threshold = self.threshold / fall
        scaled = _Scaled(fall, self._loss_fall)  # formatted only into a message
        # In the job: mean |g| = ||g||_1 / n >= ||g||_2 / n, and the L2 norms come from one fused torch call per
        # step; only a tensor whose L2 norm over its size falls below the threshold is read and checked exactly.
        norms = self.base_trial.norms(step, 2) if hasattr(self.base_trial, "norms") else {}
        clear = {
            name for name, norm in norms.items() if math.isfinite(norm) and norm / self.base_trial.numel(step, name) >= threshold
        }
        available = self.base_trial.names_at(step)
        tensors = [name for name in self._selection.present_at(step) if name != TOTAL_GRADIENT_NORM]
        low: dict[str, float] = {}
        for name, value in self._selection.values_at(step, skip=clear.__contains__):
            mean_abs = gradient_flow.mean_abs(value)
            if mean_abs >= threshold:
                continue
            if name == TOTAL_GRADIENT_NORM or name not in available or len(tensors) <= 1:
                # the total gradient norm (or the model's only tensor): no gradient anywhere in the model
                self.report(name, mean_abs, f"mean |gradient| of {name} is {mean_abs:.3g} < threshold {self.threshold:g}{scaled}")
                return True
            low[name] = mean_abs
        if not tensors:
            return False
        if not low:
            self._input_low = []
            return False
        if len(low) == len(tensors):
            name = min(low, key=low.get)
            self.report(name, low[name], f"mean |gradient| of every one of the model's {len(tensors)} gradient tensors is "
                        f"below threshold {self.threshold:g}{scaled}; the smallest, {name}, is {low[name]:.3g}")
            return True
        side = gradient_flow.input_side(tensors, lambda name: self.base_trial.tensor(name).value(step))
        if side.carries(threshold):
            self._input_low = []
            for name, value in low.items():
                self._downstream.skipped[name] = gradient_flow.downstream_reason(self.step_name(step), value, side)
            return False
        self._input_low.append(step)
        if len(self._input_low) < INPUT_SIDE_STEPS:
            self.note(f"the gradient reaching the input side ({side.layer}) is {side.value:.3g} < threshold "
                      f"{self.threshold:g}{scaled} at {self.step_name(step)}: judged again at the next saved step")
            return False
        largest = max((name for name in tensors if name not in low), key=lambda name: norms.get(name, 0.0), default=None)
        beside = f"; the output side still gets it ({largest}: L2 norm {norms[largest]:.3g})" if largest in norms else ""
        names = [self.step_name(s) for s in self._input_low[-INPUT_SIDE_STEPS:]]
        plain = all(name.startswith("step ") for name in names)  # "steps 0, 10", else each named in full
        steps = "steps " + ", ".join(name[len("step "):] for name in names) if plain else ", ".join(names)
        self.report(
            side.strongest,
            side.value,
            f"mean |gradient| of the model's input side ({side.layer}: {len(side.tensors)} tensor(s), at most "
            f"{side.value:.3g} in {side.strongest}) is below threshold {self.threshold:g}{scaled} at {steps}: "
            f"the gradient vanishes before it reaches the first layer; {len(low)} of {len(tensors)} gradient tensors "
            f"are below it{beside}",
        )
        return True


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
        self._selection = _Selection(base_trial, [WEIGHTS], (), skip_silent=True)
        self._previous: dict[str, tuple[int, np.ndarray, int]] = {}  # name -> (mode step, weights, global step)

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
            self._previous[name] = (mode_step, weights.copy(), step)
            if previous is None or previous[0] == mode_step:
                continue
            if self.num_steps is not None and mode_step - previous[0] > self.num_steps:
                continue
            ratio = float(np.linalg.norm(weights - previous[1]) / (np.linalg.norm(previous[1]) + self.epsilon))
            if ratio > self.large_threshold or ratio < self.small_threshold:
                bound = "above large_threshold" if ratio > self.large_threshold else "below small_threshold"
                self.report(name, ratio, f"update/weight ratio of {name} from {self.step_name(previous[2])} to {self.step_name(step)} is {ratio:.3g}, {bound}")
                self.finding.kind = "too_large" if ratio > self.large_threshold else "too_small"  # the remedies key on it
                return True
        return False


#: PoorWeightInitialization's loss criterion: a loss "does not move" when its values stay within this fraction of their
#: mean (healthy runs' first losses spread far wider: docs/decisions/020).
LOSS_STILL = 0.01
#: PoorWeightInitialization's gradient spread counts as narrow below this fraction of the gradient's mean |g|
#: (healthy layers spread several times their mean |g| early on: docs/decisions/020).
NARROW_SPREAD = 0.1
#: A loss that does not move while this much gradient reaches the input side is a plateau, not an initialisation
#: that blocks learning (VanishingGradient's default threshold: docs/decisions/190).
FLOW_THRESHOLD = 1e-7


class PoorWeightInitialization(Rule):
    """In the first ``steps`` steps: activation-input variances across layers differ by more than ``threshold``x,
    the 5th-95th percentile spread of a gradient is below ``distribution_range``, or the loss makes no new
    minimum for ``patience`` steps while the gradient does not reach the input side (else a plateau)."""

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
        self._gradients = _Selection(base_trial, [GRADIENTS], (), skip_silent=True)
        self._losses = _Selection(base_trial, [LOSSES], ())
        self._best_loss: float | None = None
        self._best_step = 0
        self._seen_losses: list[float] = []

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
            values = gradient_flow.used_rows(value).reshape(-1)
            if values.size < 2 or not np.isfinite(values).all():
                continue
            low, high = np.percentile(values, [5, 95])
            scale = float(np.median(np.abs(values)))
            # narrow, not merely small: a small gradient (a sigmoid network's first layer: spread 7e-4, 4x its mean
            # |g|) spreads as widely for its size as any; a gradient whose entries all agree (units that start
            # alike) or that is all zero does not. Its typical entry (the median |g|) is the yardstick, not the mean
            # that a few large rows set (a position embedding whose first row, the classifier's token, is 1000x
            # the others'); an embedding's rows the batch did not use are zero by construction and left out.
            if high - low < self.distribution_range and (scale == 0.0 or high - low < NARROW_SPREAD * scale):
                self.report(
                    name,
                    high - low,
                    f"5th-95th percentile spread of {name} is {high - low:.3g} < {self.distribution_range:g}, "
                    f"{(high - low) / scale if scale else 0.0:.3g} times its median |gradient| {scale:.3g}",
                )
                return True
        return False

    def _loss_stalled(self, step: int) -> bool:
        """No new minimum for ``patience`` steps (SageMaker's test), and the loss does not move: the mean of the
        latest ``patience`` losses is not below the mean of the ``patience`` before them, and all the losses seen
        lie within LOSS_STILL of their mean. Minibatch noise alone makes a slow start miss a new minimum for 5
        steps (3 of 27 healthy runs of the corpus); a loss frozen by the initialisation does not move at all."""
        for name, value in self._losses.values_at(step):
            loss = _first_value(value)
            if not math.isfinite(loss):
                continue
            self._seen_losses.append(loss)
            if self._best_loss is None or loss < self._best_loss:
                self._best_loss, self._best_step = loss, step
                return False
            if step - self._best_step < self.patience or len(self._seen_losses) < 2 * self.patience:
                return False
            latest = float(np.mean(self._seen_losses[-self.patience :]))
            before = float(np.mean(self._seen_losses[-2 * self.patience : -self.patience]))
            level = float(np.mean(self._seen_losses))
            spread = (max(self._seen_losses) - min(self._seen_losses)) / (abs(level) or 1.0)
            if latest < before or spread >= LOSS_STILL:
                return False
            side = self._input_side(step)
            if side is not None and side.carries(FLOW_THRESHOLD):
                self.note(
                    f"the loss has made no new minimum for {self.steps_between(self._best_step, step)} steps (within "
                    f"{spread:.2%} of {level:.6g}) while the gradient reaching the input side ({side.layer}: "
                    f"{side.value:.2g}) carries the signal at {self.step_name(step)}: a plateau, not an initialisation that blocks learning"
                )
                return False
            self.report(
                name,
                loss,
                f"loss made no new minimum for {self.steps_between(self._best_step, step)} steps (best {self._best_loss:.6g}) and does not "
                f"move: its {len(self._seen_losses)} values lie within {spread:.2%} of their mean {level:.6g}",
            )
            return True
        return False


    def _input_side(self, step: int) -> gradient_flow.InputSide | None:
        """How much gradient reached the model's input side at ``step`` (None when no gradient was saved then)."""
        available = self.base_trial.names_at(step)
        tensors = [name for name in self._gradients.names() if name in available and name != TOTAL_GRADIENT_NORM]
        return gradient_flow.input_side(tensors, lambda name: self.base_trial.tensor(name).value(step))


OPTIMIZATION_RULES: dict[str, type[Rule]] = {
    "ExplodingTensor": ExplodingTensor,
    "VanishingGradient": VanishingGradient,
    "LossNotDecreasing": LossNotDecreasing,
    "WeightUpdateRatio": WeightUpdateRatio,
    "PoorWeightInitialization": PoorWeightInitialization,
}
