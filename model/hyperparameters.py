"""The example's hyperparameters: what ``train.py`` accepts, with types, bounds and defaults.

SageMaker passes every hyperparameter as a string (``--name value`` in script
mode, or ``/opt/ml/input/config/hyperparameters.json``); :func:`parse_hyperparameters`
reads them back and rejects unknown names, ill-typed values and values out of
range with a message naming the field and what is allowed.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from typing import Any

from contracts.job import (
    SAGEMAKER_RESERVED_PREFIX,
    HyperparameterError,
)

SUPPORTED_ACTIVATIONS = ("elu", "relu", "leaky_relu", "selu", "gelu", "tanh", "sigmoid")
CLASS_WEIGHTINGS = ("none", "balanced")



@dataclasses.dataclass(frozen=True)
class TrainingHyperparameters:
    """What the training job accepts. Defaults reproduce the reference scenario."""

    warmup_learning_rate: float = 0.1
    learning_rate: float = 0.1
    add_batch_norm: bool = False
    num_epochs: int = 2
    warmup_epochs: int = 1
    batch_size: int = 128
    depth: int = 20
    activation: str = "elu"
    momentum: float = 0.9
    weight_decay: float = 1e-4
    lr_decay_epochs: str = ""  # comma-separated epochs at which learning_rate is divided by 10
    seed: int = 0
    num_workers: int = 0
    grad_clip: float = 0.0  # clip the total gradient norm to this; 0: off
    dropout: float = 0.0  # dropout probability before the head; 0: none
    init_scale: float = 1.0  # factor on the He-normal standard deviation of the initial weights
    class_weighting: str = "none"  # "balanced": the loss weights each class by its inverse frequency
    early_stopping_patience: int = 0  # epochs without a better held-out loss before stopping; 0: off
    normalize_inputs: bool = True  # scale pixels to [0, 1] and subtract the channel mean; false: raw 0-255

    def __post_init__(self) -> None:
        _check_range("warmup_learning_rate", self.warmup_learning_rate, 0.0, 10.0, exclusive_low=True)
        _check_range("learning_rate", self.learning_rate, 0.0, 10.0, exclusive_low=True)
        _check_range("num_epochs", self.num_epochs, 1, 10_000)
        _check_range("warmup_epochs", self.warmup_epochs, 0, 10_000)
        _check_range("batch_size", self.batch_size, 1, 65_536)
        _check_range("momentum", self.momentum, 0.0, 1.0, exclusive_high=True)
        _check_range("weight_decay", self.weight_decay, 0.0, 1.0)
        _check_range("seed", self.seed, 0, 2**32 - 1)
        _check_range("num_workers", self.num_workers, 0, 64)
        _check_range("grad_clip", self.grad_clip, 0.0, 1e6)
        _check_range("dropout", self.dropout, 0.0, 1.0, exclusive_high=True)
        _check_range("init_scale", self.init_scale, 0.0, 100.0)
        _check_range("early_stopping_patience", self.early_stopping_patience, 0, 10_000)
        if self.class_weighting not in CLASS_WEIGHTINGS:
            raise HyperparameterError(
                "class_weighting", f"must be one of {', '.join(CLASS_WEIGHTINGS)}; got {self.class_weighting!r}"
            )
        if self.depth < 8 or (self.depth - 2) % 6 != 0:
            raise HyperparameterError("depth", f"must be 6n+2 with n >= 1 (8, 14, 20, 32, 44, 56, 110); got {self.depth}")
        if self.activation not in SUPPORTED_ACTIVATIONS:
            raise HyperparameterError(
                "activation", f"must be one of {', '.join(SUPPORTED_ACTIVATIONS)}; got {self.activation!r}"
            )
        self.decay_epochs()  # validates the list

    def decay_epochs(self) -> tuple[int, ...]:
        if not self.lr_decay_epochs.strip():
            return ()
        try:
            epochs = tuple(int(part) for part in self.lr_decay_epochs.split(",") if part.strip())
        except ValueError:
            raise HyperparameterError(
                "lr_decay_epochs", f"must be comma-separated whole epochs such as '80,120'; got {self.lr_decay_epochs!r}"
            ) from None
        if any(epoch < 1 for epoch in epochs) or list(epochs) != sorted(set(epochs)):
            raise HyperparameterError("lr_decay_epochs", f"must be increasing epochs >= 1; got {self.lr_decay_epochs!r}")
        return epochs

    def learning_rate_at_epoch(self, epoch: int) -> float:
        """Warmup rate for the first ``warmup_epochs`` epochs, then step decay by 10x."""
        if epoch < self.warmup_epochs:
            return self.warmup_learning_rate
        drops = sum(1 for decay_epoch in self.decay_epochs() if epoch >= decay_epoch)
        return self.learning_rate * (0.1**drops)

    def phase_at_epoch(self, epoch: int) -> str:
        return "warmup" if epoch < self.warmup_epochs else "main"

    def to_sagemaker(self) -> dict[str, str]:
        """Every value as the string SageMaker's HyperParameters map requires; empty ones left out."""
        rendered: dict[str, str] = {}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, bool):
                text = "true" if value else "false"
            else:
                text = str(value)
            if text != "":
                rendered[field.name] = text
        return rendered


def _check_range(
    field: str,
    value: float,
    low: float,
    high: float,
    *,
    exclusive_low: bool = False,
    exclusive_high: bool = False,
) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise HyperparameterError(field, f"must be a finite number; got {value}")
    too_low = value <= low if exclusive_low else value < low
    too_high = value >= high if exclusive_high else value > high
    if too_low or too_high:
        low_sign = ">" if exclusive_low else ">="
        high_sign = "<" if exclusive_high else "<="
        raise HyperparameterError(field, f"must be {low_sign} {low} and {high_sign} {high}; got {value}")


def _parse_bool(field: str, raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise HyperparameterError(field, f"must be true or false; got {raw!r}")


def _parse_value(field: dataclasses.Field, raw: Any) -> Any:
    kind = field.type if isinstance(field.type, str) else field.type.__name__
    if kind == "bool":
        return _parse_bool(field.name, raw)
    if kind == "int":
        if isinstance(raw, bool):
            raise HyperparameterError(field.name, f"must be a whole number; got {raw!r}")
        try:
            number = float(raw)
        except (TypeError, ValueError):
            raise HyperparameterError(field.name, f"must be a whole number; got {raw!r}") from None
        if not number.is_integer():
            raise HyperparameterError(field.name, f"must be a whole number; got {raw!r}")
        return int(number)
    if kind == "float":
        if isinstance(raw, bool):
            raise HyperparameterError(field.name, f"must be a number; got {raw!r}")
        try:
            return float(raw)
        except (TypeError, ValueError):
            raise HyperparameterError(field.name, f"must be a number; got {raw!r}") from None
    if isinstance(raw, (dict, list)):
        return json.dumps(raw, separators=(",", ":"))
    return str(raw)


def parse_hyperparameters(raw: Mapping[str, Any]) -> TrainingHyperparameters:
    """Build TrainingHyperparameters from SageMaker's string map (or argv pairs).

    SageMaker's JSON file may hold each value JSON-encoded a second time
    ("\"0.1\""); both forms are accepted. Keys starting with ``sagemaker_`` are
    the platform's own and are ignored. Anything else unknown is an error.
    """
    known = {field.name: field for field in dataclasses.fields(TrainingHyperparameters)}
    values: dict[str, Any] = {}
    for name, value in raw.items():
        if name.startswith(SAGEMAKER_RESERVED_PREFIX):
            continue
        if name not in known:
            raise HyperparameterError(name, f"is not a known hyperparameter; allowed: {', '.join(sorted(known))}")
        if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] == '"':
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                pass
        values[name] = _parse_value(known[name], value)
    return TrainingHyperparameters(**values)


def check_json_values(values: Mapping[str, Any]) -> TrainingHyperparameters:
    """Hyperparameters as a run_spec writes them (JSON values): a number where a number belongs, true/false for a
    flag, text for text (strict: "0.1" is not a number here), then every name and range as the job checks them."""
    known = {field.name: field for field in dataclasses.fields(TrainingHyperparameters)}
    for name, value in values.items():
        field = known.get(name)
        if field is None:
            continue  # parse_hyperparameters names it with the list of known names
        kind = field.type if isinstance(field.type, str) else field.type.__name__
        is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
        expected = {"bool": "true or false", "int": "a whole number", "float": "a number", "str": "text"}[kind]
        fits = {
            "bool": isinstance(value, bool),
            "int": is_number and float(value).is_integer(),
            "float": is_number,
            "str": isinstance(value, str),
        }[kind]
        if not fits:
            shown = json.dumps(value)
            hint = " (write it without quotes)" if isinstance(value, str) and kind in ("int", "float") else ""
            raise HyperparameterError(name, f"must be {expected}; got {shown}{hint}")
    return parse_hyperparameters(values)


def main(argv: list[str] | None = None) -> int:
    """``python -m model.hyperparameters check '{"learning_rate": 0.1}'``: exit 0 and the full set as JSON, or
    exit 2 with one line naming the hyperparameter, what was given and what is allowed."""
    import sys

    arguments = sys.argv[1:] if argv is None else argv
    if len(arguments) != 2 or arguments[0] != "check":
        print("usage: python -m model.hyperparameters check JSON_OBJECT", file=sys.stderr)
        return 2
    try:
        values = json.loads(arguments[1])
        if not isinstance(values, dict):
            raise HyperparameterError("(all)", "give a JSON object of name: value")
        checked = check_json_values(values)
    except (json.JSONDecodeError, HyperparameterError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(checked.to_sagemaker(), sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
