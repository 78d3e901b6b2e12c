"""Whether a step's gradient reaches the model's input side: what VanishingGradient judges beyond SageMaker's "any
gradient tensor under the threshold".

A vanishing gradient is a training signal that dies on its way back from the loss to the first layers: the tensors
nearest the input get (next to) nothing. A small gradient elsewhere, while the input side still gets the signal, is
small by the tensor's own place in the model, not because the flow died: an attention key's bias (softmax ignores a
shift added to every key: its gradient is rounding, 2e-14), the query and key weights of a freshly initialised
attention (every score near 0: 7e-8 at hidden 32, growing as training goes), a parameter the forward pass did not
use, a gate that starts closed. Every such gradient lies *downstream* of the input side on the backward path, so the
signal that reached the input passed through the depth they sit at. This module finds the input side and judges it;
imports numpy only (rules run in XGBoost jobs too).

The input side is the first layer in the model's own order (the order its parameters are registered, which the hook
records them in: ``nn.Sequential``, Hugging Face models and Lightning modules register from the input on), with
every tensor of that layer: it carries the flow when any of them gets a gradient at the threshold. An embedding's
gradient is judged over the rows the batch used (the others are zero by construction: ids not in the batch).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

import numpy as np

GRADIENT_PREFIX = "gradient/"


def layer_of(name: str) -> str:
    """The module path a gradient tensor's parameter belongs to: ``gradient/bert.embeddings.word_embeddings.weight``
    -> ``bert.embeddings.word_embeddings``; a parameter held by the model itself is its own layer."""
    parameter = name[len(GRADIENT_PREFIX) :] if name.startswith(GRADIENT_PREFIX) else name
    return parameter.rsplit(".", 1)[0] if "." in parameter else parameter


def mean_abs(value) -> float:
    """SageMaker's measure: the mean of |gradient| over every entry."""
    return float(np.mean(np.abs(np.asarray(value, dtype=np.float64)))) if np.size(value) else 0.0


def mean_abs_over_used_rows(value) -> float:
    """Mean |gradient| over the rows that received any gradient (a 2-D or larger tensor whose other rows are exactly
    zero: an embedding's ids not in the batch); the plain mean otherwise. A tensor with no such row: 0."""
    array = np.abs(np.asarray(value, dtype=np.float64))
    if array.ndim < 2 or not array.size:
        return mean_abs(array)
    rows = array.reshape(array.shape[0], -1)
    used = rows.any(axis=1)
    return float(rows[used].mean()) if used.any() else 0.0


@dataclasses.dataclass(frozen=True)
class InputSide:
    """The step's verdict on the input side: its layer, the tensors judged and the largest mean |g| among them
    (over the rows the batch used)."""

    layer: str
    tensors: tuple[str, ...]
    strongest: str
    value: float

    def carries(self, threshold: float) -> bool:
        return self.value >= threshold


def input_side(ordered: Iterable[str], read: Callable[[str], object]) -> InputSide | None:
    """The first layer among ``ordered`` gradient tensor names (the model's order) and how much gradient reached it;
    ``read(name)`` gives a tensor's value at the step. None when there is no tensor."""
    names = list(ordered)
    if not names:
        return None
    layer = layer_of(names[0])
    tensors = tuple(name for name in names if layer_of(name) == layer)
    values = {name: mean_abs_over_used_rows(read(name)) for name in tensors}
    strongest = max(values, key=values.get)
    return InputSide(layer, tensors, strongest, values[strongest])


def downstream_reason(step: int, value: float, side: InputSide) -> str:
    """Why a small gradient away from the input side is skipped (the rule's status details name it)."""
    return (
        f"mean |gradient| {value:.2g} at step {step} while the gradient reaching the input side "
        f"({side.strongest[len(GRADIENT_PREFIX):] if side.strongest.startswith(GRADIENT_PREFIX) else side.strongest}: "
        f"{side.value:.2g}) carries the signal past it: small by its place in the model, not a vanishing flow"
    )
