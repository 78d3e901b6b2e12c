"""Rules: SageMaker Debugger's built-in rules (documented semantics, parameters, defaults) and custom rules.

A rule is a class in smdebug's style::

    from debugger.rules import Rule

    class LossAbove(Rule):
        def __init__(self, base_trial, threshold="5.0"):
            super().__init__(base_trial)
            self.threshold = float(threshold)      # RuleParameters arrive as strings

        def invoke_at_step(self, step):
            for name in self.base_trial.tensor_names(collection="losses"):
                tensor = self.base_trial.tensor(name)
                if tensor.has_step(step) and float(tensor.value(step)) > self.threshold:
                    self.report(tensor=name, value=float(tensor.value(step)), message="loss above threshold")
                    return True
            return False

The hook calls ``invoke_at_step(step)`` on every training step. Cheap scalars
(every loss, ``total_gradient_norm``, ``learning_rate``) exist at every step;
full tensors only at saved steps, so check ``tensor.has_step(step)`` (a
``TensorNotAvailable`` raised by ``value`` just skips the step). Return True
when the rule finds an issue; ``report`` adds where and why.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import math
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from contracts import ContractError
from contracts.debugger_config import BUILTIN_RULE_DEFAULTS, COLLECTION_NAMES
from debugger.config import RuleSpec, parse_bool, parse_float, parse_int, parse_regex_list, split_list
from debugger.trial import BaseTrial

#: The scalar the hook records at every step: the L2 norm over all parameter gradients.
TOTAL_GRADIENT_NORM = "total_gradient_norm"
GRADIENT_PREFIX = "gradient/"


@dataclasses.dataclass
class Finding:
    tensor: str
    value: float | None
    message: str


@dataclasses.dataclass(frozen=True)
class Requirement:
    """A collection a rule needs saved; ``steps`` None means at the configured save steps."""

    collection: str
    steps: frozenset[int] | None = None
    include_regex: tuple[re.Pattern[str], ...] = ()


class Rule:
    """Base class of every rule (built-in or custom): ``__init__(self, base_trial, **params)``, ``invoke_at_step``."""

    def __init__(self, base_trial: BaseTrial, **params: Any):
        self.base_trial = base_trial
        self.finding: Finding | None = None

    def invoke_at_step(self, step: int) -> bool:
        raise NotImplementedError

    def report(self, tensor: str, value: float | None, message: str) -> None:
        self.finding = Finding(tensor=tensor, value=None if value is None else float(value), message=message)

    def requirements(self) -> list[Requirement]:
        return []


def _first_value(array: np.ndarray) -> float:
    flat = np.asarray(array).reshape(-1)
    return float(flat[0]) if flat.size else float("nan")


def _select(trial: BaseTrial, collections: list[str], regex: tuple[re.Pattern[str], ...]) -> list[str]:
    """Union of the named collections and the regex matches; everything when both are empty."""
    if not collections and not regex:
        return trial.tensor_names()
    names: list[str] = []
    for collection in collections:
        names.extend(trial.tensor_names(collection=collection))
    if regex:
        names.extend(trial.tensor_names(regex=regex))
    return list(dict.fromkeys(names))


class _SelectionCache:
    """Recomputes a rule's tensor selection only when new tensor names appear."""

    def __init__(self, trial: BaseTrial, collections: list[str], regex: tuple[re.Pattern[str], ...], order=None):
        self.trial, self.collections, self.regex, self.order = trial, collections, regex, order
        self._known = -1
        self._names: list[str] = []

    def names(self) -> list[str]:
        count = len(self.trial._names())
        if count != self._known:
            self._known = count
            names = _select(self.trial, self.collections, self.regex)
            self._names = sorted(names, key=self.order) if self.order else names
        return self._names

    def values_at(self, step: int) -> Iterator[tuple[str, np.ndarray]]:
        """(name, value) of the selected tensors that have a value at ``step``, in selection order, read lazily."""
        available = self.trial.names_at(step)
        for name in self.names():
            if name in available:
                yield name, self.trial.tensor(name).value(step)


def _exploding_order(name: str) -> int:
    """Report the culprit, not the aggregate: per-parameter gradients first, derived scalars last."""
    if name.startswith(GRADIENT_PREFIX):
        return 0
    if name == TOTAL_GRADIENT_NORM:
        return 2
    return 1


class ExplodingTensor(Rule):
    """Fires on any NaN (or, unless only_nan, infinite) value in the selected tensors."""

    def __init__(self, base_trial, collection_names: list[str] | None = None, tensor_regex=(), only_nan: bool = False):
        super().__init__(base_trial)
        self.collection_names = list(collection_names or [])
        self.only_nan = only_nan
        self._selection = _SelectionCache(
            base_trial, self.collection_names, tuple(tensor_regex), order=_exploding_order
        )

    def requirements(self) -> list[Requirement]:
        return [Requirement(collection) for collection in self.collection_names]

    def invoke_at_step(self, step: int) -> bool:
        for name, value in self._selection.values_at(step):
            values = np.asarray(value)
            bad = np.isnan(values) if self.only_nan else ~np.isfinite(values)
            if bad.any():
                offending = float(values[bad].reshape(-1)[0])
                kind = "NaN" if self.only_nan else "NaN or infinite"
                self.report(name, offending, f"{int(bad.sum())} {kind} value(s) in {name} at step {step}")
                return True
        return False


class VanishingGradient(Rule):
    """Fires when the mean of |gradient| of a gradient tensor falls below ``threshold``.

    ``total_gradient_norm`` (every step) counts too: below the threshold it
    implies every gradient's mean |g| is below it.
    """

    def __init__(self, base_trial, threshold: float = 1e-7):
        super().__init__(base_trial)
        self.threshold = threshold
        self._selection = _SelectionCache(base_trial, ["gradients"], ())

    def requirements(self) -> list[Requirement]:
        return [Requirement("gradients")]

    def invoke_at_step(self, step: int) -> bool:
        for name, value in self._selection.values_at(step):
            mean_abs = float(np.mean(np.abs(np.asarray(value, dtype=np.float64))))
            if mean_abs < self.threshold:
                self.report(
                    name, mean_abs, f"mean |gradient| of {name} is {mean_abs:.3g} < threshold {self.threshold:g}"
                )
                return True
        return False


class LossNotDecreasing(Rule):
    """Every ``num_steps`` (at least), compares the loss with the loss at the last checked step.

    Fires when it fell by less than ``diff_percent`` percent, or, when it rose,
    by more than ``increase_threshold_percent`` percent (SageMaker: "the
    maximum threshold percent that loss is allowed to increase").
    """

    def __init__(
        self,
        base_trial,
        tensor_regex=(),
        use_losses_collection: bool = True,
        num_steps: int = 10,
        diff_percent: float = 0.1,
        increase_threshold_percent: float = 5.0,
        mode: str = "",
    ):
        super().__init__(base_trial)
        self.num_steps = num_steps
        self.diff_percent = diff_percent
        self.increase_threshold_percent = increase_threshold_percent
        self.mode = mode
        collections = ["losses"] if use_losses_collection else []
        self._selection = _SelectionCache(base_trial, collections, tuple(tensor_regex))
        self._needs_selection = bool(collections or tensor_regex)
        self._checked: dict[str, tuple[int, float]] = {}

    def requirements(self) -> list[Requirement]:
        return [Requirement("losses")]

    def invoke_at_step(self, step: int) -> bool:
        if not self._needs_selection:
            return False
        for name, value in self._selection.values_at(step):
            loss = _first_value(value)
            if not math.isfinite(loss):
                continue
            previous = self._checked.get(name)
            if previous is None:
                self._checked[name] = (step, loss)
                continue
            previous_step, previous_loss = previous
            if step - previous_step < self.num_steps:
                continue
            self._checked[name] = (step, loss)
            scale = abs(previous_loss) or 1.0
            if loss > previous_loss:
                increase = (loss - previous_loss) / scale * 100.0
                if increase > self.increase_threshold_percent:
                    self.report(
                        name,
                        loss,
                        f"loss rose {increase:.3g}% from {previous_loss:.6g} (step {previous_step}) to {loss:.6g} "
                        f"(step {step}); allowed increase {self.increase_threshold_percent:g}%",
                    )
                    return True
                continue
            decrease = (previous_loss - loss) / scale * 100.0
            if decrease < self.diff_percent:
                self.report(
                    name,
                    loss,
                    f"loss fell only {decrease:.3g}% from {previous_loss:.6g} (step {previous_step}) to {loss:.6g} "
                    f"(step {step}); required {self.diff_percent:g}%",
                )
                return True
        return False


class WeightUpdateRatio(Rule):
    """Fires when ||w_s - w_p|| / (||w_p|| + epsilon) exceeds ``large_threshold`` or falls below ``small_threshold``.

    ``p`` is the previous saved step of the weight, compared when it lies at
    most ``num_steps`` back; evaluation starts at ``step`` (if given).
    """

    def __init__(
        self,
        base_trial,
        num_steps: int = 500,
        step: int | None = None,
        large_threshold: float = 10.0,
        small_threshold: float = 1e-8,
        epsilon: float = 1e-9,
    ):
        super().__init__(base_trial)
        self.num_steps = num_steps
        self.start = step
        self.large_threshold = large_threshold
        self.small_threshold = small_threshold
        self.epsilon = epsilon
        self._selection = _SelectionCache(base_trial, ["weights"], ())
        self._previous: dict[str, tuple[int, np.ndarray]] = {}

    def requirements(self) -> list[Requirement]:
        return [Requirement("weights")]

    def invoke_at_step(self, step: int) -> bool:
        if self.start is not None and step < self.start:
            return False
        for name, value in self._selection.values_at(step):
            weights = np.asarray(value, dtype=np.float64)
            previous = self._previous.get(name)
            self._previous[name] = (step, weights.copy())
            if previous is None or step - previous[0] > self.num_steps or step == previous[0]:
                continue
            previous_weights = previous[1]
            ratio = float(
                np.linalg.norm(weights - previous_weights) / (np.linalg.norm(previous_weights) + self.epsilon)
            )
            if ratio > self.large_threshold or ratio < self.small_threshold:
                bound = "above large_threshold" if ratio > self.large_threshold else "below small_threshold"
                self.report(
                    name,
                    ratio,
                    f"update/weight ratio of {name} from step {previous[0]} to {step} is {ratio:.3g}, {bound}",
                )
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
        regex = tuple(activation_inputs_regex) or (re.compile(r"_input_0$"),)
        self._activations = _SelectionCache(base_trial, [], regex)
        self._activation_collection = _SelectionCache(base_trial, ["activations"], ())
        self._gradients = _SelectionCache(base_trial, ["gradients"], ())
        self._losses = _SelectionCache(base_trial, ["losses"], ())
        self._best_loss: float | None = None
        self._best_step = 0

    def requirements(self) -> list[Requirement]:
        window = frozenset(range(self.steps))
        return [Requirement("activations", window, self._activations.regex), Requirement("gradients", window)]

    def invoke_at_step(self, step: int) -> bool:
        if step >= self.steps:
            return False
        return self._activation_variance(step) or self._gradient_spread(step) or self._loss_stalled(step)

    def _activation_variance(self, step: int) -> bool:
        members = set(self._activation_collection.names())
        variances = {}
        for name in self._activations.names():
            tensor = self.base_trial.tensor(name)
            if name in members and tensor.has_step(step):
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


def _collection_list(text: str, where: str) -> list[str]:
    names = split_list(text)
    for name in names:
        if name not in COLLECTION_NAMES:
            raise ContractError(where, f"{name!r} is not a collection; allowed: {', '.join(COLLECTION_NAMES)}")
    return names


def _optional_step(text: str, where: str) -> int | None:
    return None if str(text).strip() in ("", "None") else parse_int(text, where)


def _mode(text: str, where: str) -> str:
    if str(text).strip() not in ("", "TRAIN", "EVAL", "GLOBAL"):
        raise ContractError(where, f"must be TRAIN, EVAL, GLOBAL or empty; got {text!r}")
    return str(text).strip()


#: How each built-in parameter's string is parsed (and checked).
_PARSERS = {
    "collection_names": _collection_list,
    "tensor_regex": parse_regex_list,
    "activation_inputs_regex": parse_regex_list,
    "only_nan": parse_bool,
    "use_losses_collection": parse_bool,
    "threshold": lambda text, where: parse_float(text, where, minimum=0.0),
    "num_steps": lambda text, where: parse_int(text, where, minimum=1),
    "diff_percent": lambda text, where: parse_float(text, where),
    "increase_threshold_percent": lambda text, where: parse_float(text, where, minimum=0.0),
    "mode": _mode,
    "step": _optional_step,
    "large_threshold": lambda text, where: parse_float(text, where, minimum=0.0),
    "small_threshold": lambda text, where: parse_float(text, where, minimum=0.0),
    "epsilon": lambda text, where: parse_float(text, where, minimum=0.0),
    "distribution_range": lambda text, where: parse_float(text, where, minimum=0.0),
    "patience": lambda text, where: parse_int(text, where, minimum=1),
    "steps": lambda text, where: parse_int(text, where, minimum=1),
}


def builtin_rule_parameters(rule_name: str, parameters: dict[str, str], where: str) -> dict[str, Any]:
    """SageMaker's string parameters (defaults filled in) -> typed keyword arguments. Raises ContractError."""
    defaults = BUILTIN_RULE_DEFAULTS[rule_name]
    typed = {}
    for key, text in {**defaults, **parameters}.items():
        if key not in defaults:
            raise ContractError(
                f"{where}.{key}", f"is not a parameter of {rule_name}; allowed: {', '.join(sorted(defaults))}"
            )
        typed[key] = _PARSERS[key](text, f"{where}.{key}")
    return typed


def build_rule(spec: RuleSpec, trial: BaseTrial, source_dir: str | Path | None = None) -> Rule:
    """Instantiate a configured rule: built-in by name, or a custom class from ``custom_rule_source``."""
    if spec.custom_rule_source is None:
        if spec.rule_to_invoke not in BUILTIN_RULES:
            raise ContractError(
                f"{spec.where}.rule_to_invoke",
                f"{spec.rule_to_invoke!r} is not a built-in rule ({', '.join(BUILTIN_RULES)}); give custom_rule_source for a custom rule",
            )
        return BUILTIN_RULES[spec.rule_to_invoke](
            trial, **builtin_rule_parameters(spec.rule_to_invoke, spec.parameters, spec.where)
        )
    rule_class = load_rule_class(spec.custom_rule_source, spec.rule_to_invoke, source_dir, spec.where)
    _check_custom_parameters(rule_class, spec)
    return rule_class(trial, **spec.parameters)


def load_rule_class(
    source: str, class_name: str, source_dir: str | Path | None = None, where: str = "RuleParameters"
) -> type[Rule]:
    """Load ``class_name`` (a Rule subclass) from a Python file; relative paths are under ``source_dir`` (default: cwd)."""
    path = Path(source)
    if not path.is_absolute():
        path = Path(source_dir or os.getcwd()) / path
    if not path.is_file():
        raise ContractError(
            f"{where}.custom_rule_source", f"no file at {path} (relative paths are resolved under the job's source dir)"
        )
    module_name = f"debugger_custom_rule_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        del sys.modules[module_name]
        raise ContractError(
            f"{where}.custom_rule_source", f"{path} failed to import: {type(error).__name__}: {error}"
        ) from error
    rule_class = getattr(module, class_name, None)
    if not (inspect.isclass(rule_class) and issubclass(rule_class, Rule)):
        found = sorted(
            name
            for name, value in vars(module).items()
            if inspect.isclass(value) and issubclass(value, Rule) and value is not Rule
        )
        raise ContractError(
            f"{where}.rule_to_invoke",
            f"{class_name!r} is not a debugger.rules.Rule subclass in {path}; rule classes there: {', '.join(found) or 'none'}",
        )
    return rule_class


def _check_custom_parameters(rule_class: type[Rule], spec: RuleSpec) -> None:
    signature = inspect.signature(rule_class.__init__)
    parameters = list(signature.parameters.values())[2:]  # self, base_trial
    if any(parameter.kind is inspect.Parameter.VAR_KEYWORD for parameter in parameters):
        return
    accepted = {parameter.name for parameter in parameters}
    for key in spec.parameters:
        if key not in accepted:
            raise ContractError(
                f"{spec.where}.{key}",
                f"is not a parameter of {rule_class.__name__}; allowed: {', '.join(sorted(accepted)) or 'none'}",
            )
