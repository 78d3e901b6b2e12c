"""SageMaker Debugger's tensor and activation rules: DeadRelu, SaturatedActivation, AllZero, UnchangedTensor,
TensorVariance, CheckInputImages, with the parameters and defaults of the AWS developer guide
(``contracts.debugger_config.BUILTIN_RULE_DEFAULTS``). The arithmetic is :mod:`debugger.rules.rule_checks`'.

The activation rules read module outputs/inputs, saved at the hook's save steps (the ``activations``
collection); CheckInputImages reads the model's input at every step in the job (the hook hands the trial
a reference, nothing is copied or saved), so a NaN in the data is caught at the step it arrives.
Which configurations can never fire is checked before launch: ``contracts.rule_feasibility``.
"""

from __future__ import annotations

import collections
import re
from typing import Any

import numpy as np

from contracts.objective import Objective
from contracts.rule_status import NAN_INPUT
from debugger.core.collection import ACTIVATIONS, BIASES, DEFAULT, SCALAR_COLLECTIONS, WEIGHTS
from debugger.core.modes import ModeKeys
from debugger.rules import rule_checks
from debugger.rules.rule import TOTAL_GRADIENT_NORM, Requirement, Rule
from debugger.rules.run_objective import objective_met
from debugger.rules.tensor_selection import LossFall, Selection
from debugger.storage.step_writer import to_numpy

#: CheckInputImages' documented default regex: MXNet's name for a HybridSequential model's input. Our hook reads
#: it as "the registered model's first input" (``<ModelClass>_input_0``), whatever the model is called.
MXNET_MODEL_INPUT = ".*hybridsequential0_input_0"
#: The collections of a model's parameters (their values, not their gradients).
PARAMETER_COLLECTIONS = frozenset({WEIGHTS, BIASES})
#: smdebug's save_scalar names the script's scalars ``scalar/<name>`` (debugger.hook.pytorch.step_capture.SCALAR_PREFIX).
SCRIPT_SCALAR_PREFIX = "scalar/"


def _requirements(collection_names: list[str], regex: tuple[re.Pattern[str], ...]) -> list[Requirement]:
    """Save the named collections, and the tensors the regex names (through the hook's default collection)."""
    required = [Requirement(collection) for collection in collection_names]
    return required + ([Requirement(DEFAULT, None, regex)] if regex else [])


def _values_at(selection: Selection, step: int, skip_scalars: bool):
    """(name, array) of the selected tensors saved at ``step``. With ``skip_scalars`` (nothing selected: every
    tensor), the hook's scalars (losses, metrics, learning rate, total gradient norm) and the script's own
    (smdebug's ``save_scalar``: ``scalar/<name>``) are left out: a constant learning rate is not an unchanged
    tensor, nor a warmup starting at 0 an all-zero one, nor a validation accuracy that holds at 0.99 a stuck model."""
    membership = selection.trial._names() if skip_scalars else {}
    for name in selection.names_at(step):
        if skip_scalars and (
            name == TOTAL_GRADIENT_NORM or name.startswith(SCRIPT_SCALAR_PREFIX)
            or membership.get(name, set()) & SCALAR_COLLECTIONS
        ):
            continue
        yield name, np.asarray(selection.trial.tensor(name).value(step))


class _InactiveUnits(Rule):
    """DeadRelu and SaturatedActivation: a layer fires when more than ``threshold_layer`` percent of its units
    were active in less than ``threshold_inactivity`` percent of their values at a saved step. The layer with
    the most inactive units is reported.

    With the documented default regex, the tensors of activation modules of the rule's kinds (``nn.ReLU``;
    ``nn.Tanh``, ``nn.Sigmoid``) count too, whatever their names: the hook tells the trial each module's type,
    so an anonymous ``nn.Sequential(nn.Linear(8, 4), nn.ReLU())`` is watched as well as a module named relu."""

    what = "inactive"
    #: (module class names, tensor suffix) found by type when the regex is the default
    kinds: tuple[tuple[str, ...], str] = ((), "")

    def __init__(self, base_trial, collection_names, tensor_regex, threshold_inactivity: float, threshold_layer: float, by_type: bool):
        super().__init__(base_trial)
        self.collection_names = list(collection_names)
        self.regex = tuple(tensor_regex)
        self.threshold_inactivity = threshold_inactivity
        self.threshold_layer = threshold_layer
        self._by_type = by_type
        # nothing named: the activation modules' inputs and outputs the hook records
        self._selection = Selection(base_trial, self.collection_names or ([] if self.regex else [ACTIVATIONS]), self.regex)

    def requirements(self) -> list[Requirement]:
        return [Requirement(ACTIVATIONS, None, self.regex)] + [Requirement(c) for c in self.collection_names]

    def _inactive(self, name: str, values: np.ndarray) -> tuple[float, int]:
        raise NotImplementedError

    def _kind_of(self, name: str) -> str | None:
        """The class name of the activation module whose tensor ``name`` is, when the hook said."""
        classes, suffix = self.kinds
        module = name[: -len(suffix)] if suffix and name.endswith(suffix) else None
        return getattr(self.base_trial, "activation_kinds", {}).get(module) if module is not None else None

    def _tensors_at(self, step: int):
        seen = set()
        for name, values in _values_at(self._selection, step, skip_scalars=False):
            seen.add(name)
            yield name, values
        if not self._by_type:
            return
        classes, suffix = self.kinds
        available = self.base_trial.names_at(step)
        for module, kind in getattr(self.base_trial, "activation_kinds", {}).items():
            name = module + suffix
            if kind in classes and name in available and name not in seen:
                yield name, np.asarray(self.base_trial.tensor(name).value(step))

    def invoke_at_step(self, step: int) -> bool:
        worst = None
        over = 0
        for name, values in self._tensors_at(step):
            percent, units = self._inactive(name, values)
            if units and percent > self.threshold_layer:
                over += 1
                if worst is None or percent > worst[1]:
                    worst = (name, percent, units)
        if worst is None:
            return False
        name, percent, units = worst
        others = f" ({over - 1} other layer(s) too)" if over > 1 else ""
        self.report(
            name,
            percent,
            f"{percent:.3g}% of the {units} units of {name} were {self.what} (active in < {self.threshold_inactivity:g}% "
            f"of their values) at {self.step_name(step)}, above threshold_layer {self.threshold_layer:g}%{others}",
        )
        return True


class DeadRelu(_InactiveUnits):
    """A ReLU unit (a feature of a linear layer's output, a channel of a convolution's) is dead when it is > 0
    in less than ``threshold_inactivity`` percent of its outputs (over the batch and positions) at a saved step.
    Fires when more than ``threshold_layer`` percent of a layer's units are dead; value: that percent."""

    what = "dead"
    kinds = (("ReLU", "ReLU6"), "_output_0")

    def __init__(self, base_trial, tensor_regex=(re.compile(".*relu_output"),), threshold_inactivity: float = 1.0, threshold_layer: float = 50.0):
        by_type = [pattern.pattern for pattern in tensor_regex] == [".*relu_output"]
        super().__init__(base_trial, [], tensor_regex, threshold_inactivity, threshold_layer, by_type)

    def _inactive(self, name: str, values: np.ndarray) -> tuple[float, int]:
        return rule_checks.inactive_unit_percent(values, self.threshold_inactivity)


class SaturatedActivation(_InactiveUnits):
    """A tanh or sigmoid unit is saturated when its input lies inside ``threshold_tanh`` (tensors whose name
    holds "sigmoid": ``threshold_sigmoid``) in less than ``threshold_inactivity`` percent of its values at a
    saved step; there the function is flat and passes (almost) no gradient. Fires when more than
    ``threshold_layer`` percent of a layer's units are saturated; value: that percent."""

    what = "saturated"
    kinds = (("Tanh", "Sigmoid"), "_input_0")

    def __init__(
        self,
        base_trial,
        collection_names: list[str] | None = None,
        tensor_regex=(re.compile(".*tanh_input"), re.compile(".*sigmoid_input")),
        threshold_tanh: tuple[float, float] = (-9.4999, 9.4999),
        threshold_sigmoid: tuple[float, float] = (-23.0, 16.99999),
        threshold_inactivity: float = 1.0,
        threshold_layer: float = 50.0,
    ):
        by_type = [pattern.pattern for pattern in tensor_regex] == [".*tanh_input", ".*sigmoid_input"]
        super().__init__(base_trial, collection_names or [], tensor_regex, threshold_inactivity, threshold_layer, by_type)
        self.threshold_tanh = tuple(threshold_tanh)
        self.threshold_sigmoid = tuple(threshold_sigmoid)

    def _inactive(self, name: str, values: np.ndarray) -> tuple[float, int]:
        kind = self._kind_of(name)
        sigmoid = kind == "Sigmoid" if kind is not None else "sigmoid" in name.lower()
        low, high = self.threshold_sigmoid if sigmoid else self.threshold_tanh
        return rule_checks.saturated_unit_percent(values, low, high, self.threshold_inactivity)


class _SelectedTensors(Rule):
    """AllZero, UnchangedTensor, TensorVariance: the union of ``collection_names`` and ``tensor_regex`` matches;
    with neither, every saved tensor but the hook's scalars."""

    def __init__(self, base_trial, collection_names, tensor_regex):
        super().__init__(base_trial)
        self.collection_names = list(collection_names or [])
        self.regex = tuple(tensor_regex)
        self._everything = not self.collection_names and not self.regex
        self._selection = Selection(base_trial, self.collection_names, self.regex, skip_silent=True)

    def requirements(self) -> list[Requirement]:
        return _requirements(self.collection_names, self.regex)

    def _values_at(self, step: int):
        return _values_at(self._selection, step, skip_scalars=self._everything)


class AllZero(_SelectedTensors):
    """Fires when at least ``threshold`` percent (default 100: all) of a selected tensor's values are zero;
    value: the percent of zeros.

    A parameter (a tensor of the weights or biases collections) is judged once training has updated it, not at
    the first saved step it is seen: an initial value is the user's choice (PyTorch starts every normalization's
    bias at zero, many recipes zero a bias or a last layer), while a parameter that training leaves at zero is
    the problem this rule looks for (zero weights that never break their symmetry)."""

    def __init__(self, base_trial, collection_names: list[str] | None = None, tensor_regex=(), threshold: float = 100.0):
        super().__init__(base_trial, collection_names, tensor_regex)
        self.threshold = threshold
        self._first_seen: dict[str, int] = {}

    def _initial_value(self, name: str, step: int) -> bool:
        if not self.base_trial._names().get(name, set()) & PARAMETER_COLLECTIONS:
            return False
        return self._first_seen.setdefault(name, step) == step

    def invoke_at_step(self, step: int) -> bool:
        for name, values in self._values_at(step):
            if values.size == 0 or self._initial_value(name, step):
                continue
            percent = rule_checks.zero_percent(values)
            if percent >= self.threshold:
                since = self._first_seen.get(name)
                updated = (
                    f", {self.steps_between(since, step)} training steps after {self.step_name(since)}" if since is not None else ""
                )
                self.report(
                    name,
                    percent,
                    f"{percent:.3g}% of the {values.size} values of {name} are zero at {self.step_name(step)}{updated} "
                    f"(threshold {self.threshold:g}%)",
                )
                return True
        return False


class UnchangedTensor(_SelectedTensors):
    """Fires when a selected tensor is ``numpy.allclose`` (``rtol``, ``atol``, ``equal_nan``) to itself over its
    last ``num_steps`` saved steps (not necessarily consecutive); value: the largest absolute change seen.

    ``rtol`` and ``atol`` are divided by the training loss's fall (:class:`debugger.rules.tensor_selection.LossFall`), as
    VanishingGradient divides its threshold: a gradient is as large as the loss it carries, and a parameter moves by
    its gradient times the learning rate, so a model that has fit its data changes little without being stuck (a
    CNN at loss 1e-5: gradients that change by 8e-9 over steps 50-70, a batch norm's weights by 7e-6 over steps
    160-180). A tensor that does not change at all is reported whatever the loss did; one that barely changes while
    the loss has not fallen (a learning rate of 1e-9) too.

    With an ``objective`` (the workflow's parameter, as for LossNotDecreasing) a run whose latest metric meets it is
    not reported: a model that has converged stops changing (in float32 an update below a weight's precision leaves it
    exactly as it was).

    The rule keeps a copy of each selected tensor for its last ``num_steps - 1`` saved steps."""

    def __init__(
        self,
        base_trial,
        collection_names: list[str] | None = None,
        tensor_regex=(),
        num_steps: int = 3,
        rtol: float = 1e-05,
        atol: float = 1e-08,
        equal_nan: bool = False,
        objective: Objective | None = None,
    ):
        super().__init__(base_trial, collection_names, tensor_regex)
        self.num_steps, self.rtol, self.atol, self.equal_nan = num_steps, rtol, atol, equal_nan
        self.objective = objective
        self._history: dict[str, collections.deque[tuple[int, np.ndarray]]] = {}
        self._loss_fall = LossFall(base_trial)

    def _saved_steps(self, steps: list[int]) -> str:
        """'0, 10, 20' as the user counts steps (an evaluation pass among them named in full); saved steps that share
        an optimizer step (accumulation's micro-batches) by their global steps: 'global steps 0, 1, 2: step 0'."""
        names = [self.step_name(step) for step in steps]
        if not all(named.startswith("step ") for named in names):
            return ", ".join(names)
        said = [named[len("step "):] for named in names]
        if len(set(said)) == len(said):
            return ", ".join(said)
        where = f"step {said[0]}" if said[0] == said[-1] else f"steps {said[0]}-{said[-1]}"
        return f"global steps {', '.join(str(step) for step in steps)}: {where}"

    def invoke_at_step(self, step: int) -> bool:
        fall = self._loss_fall.at(step)
        for name, values in self._values_at(step):
            history = self._history.setdefault(name, collections.deque(maxlen=self.num_steps))
            if history and history[-1][0] == step:
                continue
            history.append((step, np.array(values, copy=True)))
            arrays = [array for _, array in history]
            rtol, atol = self.rtol / fall, self.atol / fall
            if len(history) < self.num_steps or not rule_checks.unchanged(arrays, rtol, atol, self.equal_nan):
                continue
            first = arrays[0].astype(np.float64)
            change = max((float(np.nanmax(np.abs(a.astype(np.float64) - first), initial=0.0)) for a in arrays[1:]), default=0.0)
            steps = self._saved_steps([s for s, _ in history])
            scaled = f" (rtol and atol / {fall:.3g}: {self._loss_fall.describe()})" if fall > 1.0 else ""
            message = (
                f"{name} did not change over its last {self.num_steps} saved steps ({steps}): largest change "
                f"{change:.3g} within numpy.allclose(rtol={self.rtol:g}, atol={self.atol:g}, equal_nan={self.equal_nan})"
                f"{scaled}"
            )
            met, value = objective_met(self.base_trial, self.objective)
            if met:  # a model that is good enough stops changing because it has converged
                self.note(f"{message}; but the run meets its objective ({self.objective.describe()}: {value:.4g})")
                continue
            self.report(name, change, message)
            return True
        return False


#: TensorVariance's issue kinds (contracts.rule_status.RuleIssue.kind): the planner's remedies key on them.
ABOVE_MAX = "above_max"
BELOW_MIN = "below_min"


class TensorVariance(_SelectedTensors):
    """Fires when a selected tensor's variance exceeds ``max_threshold`` (kind "above_max") or falls below
    ``min_threshold`` (kind "below_min"); None means no bound on that side. Value: the variance."""

    def __init__(
        self,
        base_trial,
        collection_names: list[str] | None = None,
        tensor_regex=(),
        max_threshold: float | None = None,
        min_threshold: float | None = None,
    ):
        super().__init__(base_trial, collection_names, tensor_regex)
        self.max_threshold, self.min_threshold = max_threshold, min_threshold

    def invoke_at_step(self, step: int) -> bool:
        if self.max_threshold is None and self.min_threshold is None:
            return False
        for name, values in self._values_at(step):
            found = rule_checks.variance(values)
            if self.max_threshold is not None and found > self.max_threshold:
                kind, bound = ABOVE_MAX, f"above max_threshold {self.max_threshold:g}"
            elif self.min_threshold is not None and found < self.min_threshold:
                kind, bound = BELOW_MIN, f"below min_threshold {self.min_threshold:g}"
            else:
                continue  # within bounds, or NaN (a non-finite tensor is ExplodingTensor's)
            self.report(name, found, f"variance of {name} is {found:.3g} at {self.step_name(step)}, {bound}", kind=kind)
            return True
        return False


def _as_array(value: Any) -> np.ndarray:
    try:
        return to_numpy(value)
    except TypeError:  # a torch dtype numpy lacks (bfloat16): its float32 values
        return to_numpy(value.float())


class CheckInputImages(Rule):
    """Fires when, over at least ``threshold_samples`` samples (the input's first axis) of the training steps, the
    mean of a colour channel (axis ``channel``) of the model's input differs from 0 by more than ``threshold_mean``;
    value: that mean. Fires at once, with kind "nan_input" and the count of bad values, when an input holds NaN or
    inf, at any step. The means count the inputs the model trains on (TRAIN or GLOBAL steps): evaluation inputs,
    standardised with the training set's statistics, can put a pixel that never varies in training at 1e6 in one
    validation image (digits, a corner pixel) without the training seeing it.

    ``regex`` names the input tensor; its default (MXNet's model input) means the registered model's first
    input, read at every step in the job. Other names are read where saved (the hook saves what they match)."""

    def __init__(
        self,
        base_trial,
        threshold_mean: float = 0.2,
        threshold_samples: int = 500,
        regex: re.Pattern[str] = re.compile(MXNET_MODEL_INPUT),
        channel: int = 1,
    ):
        super().__init__(base_trial)
        self.threshold_mean, self.threshold_samples, self.channel = threshold_mean, threshold_samples, channel
        self.regex = regex
        self._model_input = regex.pattern == MXNET_MODEL_INPUT
        self._selection = Selection(base_trial, [], (regex,))
        # per input tensor: samples seen, sum over steps of (channel means x samples)
        self._samples: dict[str, int] = {}
        self._sums: dict[str, np.ndarray] = {}

    def requirements(self) -> list[Requirement]:
        return [] if self._model_input else [Requirement(DEFAULT, None, (self.regex,))]

    def _inputs_at(self, step: int):
        live = getattr(self.base_trial, "model_inputs", None)
        seen = set()
        for name, value in (live(step) if live else {}).items():
            if (name.endswith("_input_0") if self._model_input else self.regex.search(name)):
                seen.add(name)
                yield name, _as_array(value)
        for name, values in _values_at(self._selection, step, skip_scalars=False):
            if name not in seen:
                yield name, values

    def invoke_at_step(self, step: int) -> bool:
        training = self.base_trial._global_to_mode.get(step, (ModeKeys.GLOBAL, step))[0] in (ModeKeys.TRAIN, ModeKeys.GLOBAL)
        for name, images in self._inputs_at(step):
            if np.issubdtype(images.dtype, np.inexact):
                bad = int(np.count_nonzero(~np.isfinite(images)))
                if bad:
                    self.report(name, bad, f"{bad} NaN or infinite value(s) in the model input {name} at {self.step_name(step)}", kind=NAN_INPUT)
                    return True
            if training and self._accumulate(name, images) and self._judge(name, step):
                return True
        return False

    def _accumulate(self, name: str, images: np.ndarray) -> bool:
        axis = self.channel if self.channel >= 0 else images.ndim + self.channel
        if images.ndim < 2 or not 0 < axis < images.ndim or images.shape[0] == 0:
            return False  # no batch and channel axes to average over
        weighted = rule_checks.channel_means(images, axis) * images.shape[0]
        if name in self._sums and self._sums[name].shape != weighted.shape:
            self._samples.pop(name)  # the channels changed: start again
            self._sums.pop(name)
        self._sums[name] = self._sums.get(name, 0.0) + weighted
        self._samples[name] = self._samples.get(name, 0) + images.shape[0]
        return True

    def _judge(self, name: str, step: int) -> bool:
        samples = self._samples[name]
        if samples < self.threshold_samples:
            return False
        means = self._sums[name] / samples
        worst = int(np.argmax(np.abs(means)))
        mean = float(means[worst])
        if abs(mean) <= self.threshold_mean:
            return False
        self.report(
            name,
            mean,
            f"the mean of channel {worst} of the model input {name} over {samples} samples is {mean:.3g} at "
            f"{self.step_name(step)}; it differs from 0 by more than threshold_mean {self.threshold_mean:g} (inputs not normalized?)",
        )
        return True


TENSOR_RULES: dict[str, type[Rule]] = {
    "DeadRelu": DeadRelu,
    "SaturatedActivation": SaturatedActivation,
    "AllZero": AllZero,
    "UnchangedTensor": UnchangedTensor,
    "TensorVariance": TensorVariance,
    "CheckInputImages": CheckInputImages,
}
