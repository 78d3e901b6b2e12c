"""The training job's progress lines: one format written by the job and read by
SageMaker MetricDefinitions (regexes over the job's log) and the local runtime.

    training_step step=12 epoch=0 phase=warmup loss=2.304100 learning_rate=0.1 gradient_norm=512.3
    epoch_end epoch=0 train_loss=1.92 test_loss=1.88 test_accuracy=0.41 seconds=8.1

Non-finite values print as nan / inf / -inf. Standard library only.
"""

from __future__ import annotations

import math
import re
from typing import Any

STEP_LINE_TAG = "training_step"
EPOCH_LINE_TAG = "epoch_end"

_NUMBER = r"(-?[0-9.]+(?:[eE][-+]?[0-9]+)?|nan|-?inf)"

#: SageMaker MetricDefinitions for the CreateTrainingJob request.
METRIC_DEFINITIONS = [
    {"Name": "train:loss", "Regex": rf"{STEP_LINE_TAG} .*\bloss={_NUMBER}"},
    {"Name": "train:gradient_norm", "Regex": rf"{STEP_LINE_TAG} .*\bgradient_norm={_NUMBER}"},
    {"Name": "train:learning_rate", "Regex": rf"{STEP_LINE_TAG} .*\blearning_rate={_NUMBER}"},
    {"Name": "test:loss", "Regex": rf"{EPOCH_LINE_TAG} .*\btest_loss={_NUMBER}"},
    {"Name": "test:accuracy", "Regex": rf"{EPOCH_LINE_TAG} .*\btest_accuracy={_NUMBER}"},
]

_FIELD = re.compile(r"(\w+)=(\S+)")


def _render(value: Any) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return f"{value:.6g}"
    return str(value)


def format_step_line(*, step: int, epoch: int, phase: str, loss: float, learning_rate: float, gradient_norm: float) -> str:
    return (
        f"{STEP_LINE_TAG} step={step} epoch={epoch} phase={phase} loss={_render(loss)} "
        f"learning_rate={_render(learning_rate)} gradient_norm={_render(gradient_norm)}"
    )


def format_epoch_line(*, epoch: int, train_loss: float, test_loss: float, test_accuracy: float, seconds: float) -> str:
    return (
        f"{EPOCH_LINE_TAG} epoch={epoch} train_loss={_render(train_loss)} test_loss={_render(test_loss)} "
        f"test_accuracy={_render(test_accuracy)} seconds={_render(seconds)}"
    )


def parse_progress_line(line: str) -> dict[str, Any] | None:
    """{'kind': 'training_step'|'epoch_end', field: int|float|str, ...} or None for other lines."""
    stripped = line.strip()
    tag, _, rest = stripped.partition(" ")
    if tag not in (STEP_LINE_TAG, EPOCH_LINE_TAG):
        return None
    parsed: dict[str, Any] = {"kind": tag}
    for name, raw in _FIELD.findall(rest):
        if name in ("step", "epoch"):
            parsed[name] = int(raw)
        elif name == "phase":
            parsed[name] = raw
        else:
            try:
                parsed[name] = float(raw)
            except ValueError:
                parsed[name] = raw
    return parsed


def metric_values_in(line: str, definitions: list[dict[str, str]]) -> list[tuple[str, float]]:
    """What SageMaker's MetricDefinitions read from one log line: (Name, the Regex's first group as a number) for each
    definition whose regex occurs in the line and captures a finite number (CloudWatch takes finite values only)."""
    found = []
    for definition in definitions:
        match = re.search(definition["Regex"], line)
        if not match:
            continue
        try:
            value = float(match.group(1))
        except (ValueError, IndexError, TypeError):
            continue
        if math.isfinite(value):
            found.append((definition["Name"], value))
    return found
