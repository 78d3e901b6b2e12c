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

The same input side tells every parameter rule which gradients are zero by the model's structure
(:func:`structurally_silent`): float32 rounding of the model's own gradient scale while the input side gets more.
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
    if isinstance(value, (float, np.ndarray)) and np.ndim(value) == 0:  # an every-step signal: no array to build
        return abs(float(value))
    return float(np.mean(np.abs(np.asarray(value, dtype=np.float64)))) if np.size(value) else 0.0


def used_rows(value) -> np.ndarray:
    """The rows of a 2-D or larger gradient that received any gradient (the others are exactly zero: an embedding's
    ids not in the batch), as float64; the whole tensor when it has no rows or no row was used."""
    array = np.asarray(value, dtype=np.float64)
    if array.ndim < 2 or not array.size:
        return array
    rows = array.reshape(array.shape[0], -1)
    used = rows.any(axis=1)
    return rows[used] if used.any() else rows


def mean_abs_over_used_rows(value) -> float:
    """Mean |gradient| over the rows that received any gradient (:func:`used_rows`); the plain mean of a tensor
    with no rows. A tensor with no used row: 0."""
    return mean_abs(used_rows(value))


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


def downstream_reason(step: str, value: float, side: InputSide) -> str:
    """Why a small gradient away from the input side is skipped (the rule's status details name it); ``step``: the
    step as the message names it (Rule.step_name)."""
    return (
        f"mean |gradient| {value:.2g} at {step} while the gradient reaching the input side "
        f"({side.strongest[len(GRADIENT_PREFIX):] if side.strongest.startswith(GRADIENT_PREFIX) else side.strongest}: "
        f"{side.value:.2g}) carries the signal past it: small by its place in the model, not a vanishing flow"
    )


# --------------------------------------------------------------------------- structural silence, shared by the rules

#: float32's machine epsilon: a gradient no larger than this times the model's gradient scale is what summing
#: float32 terms of that scale leaves of an exact zero (attention key biases at most 3e-9 of the scale, the smallest
#: real gradient of the same BERTs 3e-6: decision 151).
FLOAT32_EPSILON = float(np.finfo(np.float32).eps)
#: Steps whose judgement is kept on the trial (every rule of the step reads the same one).
CACHED_STEPS = 4


def model_scale(rms: dict[str, float]) -> tuple[str, float]:
    """The model's own gradient scale at a step: its largest root-mean-square gradient tensor (name, value)."""
    finite = {name: value for name, value in rms.items() if np.isfinite(value)}
    if not finite:
        return "", 0.0
    name = max(finite, key=finite.get)
    return name, finite[name]


def silent_reason(step: str, largest: float, scale_name: str, scale: float, side: InputSide) -> str:
    """Why a parameter's tensors are skipped: its gradient is float32 rounding of the model's scale (the rules'
    status details name it)."""
    bare = side.strongest[len(GRADIENT_PREFIX):] if side.strongest.startswith(GRADIENT_PREFIX) else side.strongest
    return (
        f"its gradient is zero by the model's structure: at most {largest:.2g} at {step}, within float32 "
        f"rounding of the model's gradient scale ({scale_name[len(GRADIENT_PREFIX):]}: {scale:.2g} root mean "
        f"square) while the input side ({bare}: {side.value:.2g}) carries the signal"
    )


def structurally_silent(trial, step: int) -> dict[str, str]:
    """Tensor name -> why, for the parameters whose gradient at ``step`` is zero by the model's invariances (an
    attention key's bias under softmax, a parameter the forward pass did not use): every entry at most float32
    rounding of the model's gradient scale while the input side gets more than that. Both the gradient and the
    parameter's own tensor are named (it does not move either). Judged at steps whose gradients are saved, once per
    trial and step for every rule; a step without gradients takes the latest judgement before it.

    The input side's condition keeps the failures this is not: a gradient that dies on its way back leaves the
    input side at rounding too, and then nothing is skipped."""
    cache = trial.__dict__.setdefault("_structural_silence", {})
    if step in cache:
        return cache[step]
    available = trial.names_at(step)
    # a step that saved no gradient (most steps) holds only the every-step signals: no pass over every tensor name
    names = (
        [name for name in trial._names() if name.startswith(GRADIENT_PREFIX) and name in available]
        if any(name.startswith(GRADIENT_PREFIX) for name in available)
        else []
    )
    if not names:
        earlier = [judged for judged in cache if judged < step]
        return cache[max(earlier)] if earlier else {}
    norms = trial.norms(step, 2) if hasattr(trial, "norms") else {}
    rms: dict[str, float] = {}
    values: dict[str, np.ndarray] = {}
    for name in names:
        size = trial.numel(step, name) if name in norms else None
        if size:
            rms[name] = norms[name] / np.sqrt(size)
        else:  # a saved trial: read the tensor (a live one's norms come from one fused call)
            values[name] = np.asarray(trial.tensor(name).value(step), dtype=np.float64)
            rms[name] = float(np.sqrt(np.mean(values[name] ** 2))) if values[name].size else 0.0
    scale_name, scale = model_scale(rms)
    bound = FLOAT32_EPSILON * scale
    found: dict[str, str] = {}
    # a tensor's largest entry is at least its root mean square: only those under the bound are read
    candidates = [name for name in names if rms.get(name, np.inf) <= bound]
    if candidates and scale > 0.0:
        side = input_side(names, lambda name: values[name] if name in values else trial.tensor(name).value(step))
        if side is not None and side.value > bound:
            for name in candidates:
                value = values[name] if name in values else np.asarray(trial.tensor(name).value(step), dtype=np.float64)
                largest = float(np.max(np.abs(value))) if np.size(value) else 0.0
                if largest <= bound and np.isfinite(largest):
                    reason = silent_reason(trial.step_name(step) if hasattr(trial, "step_name") else f"step {step}", largest, scale_name, scale, side)
                    found[name] = reason
                    found[name[len(GRADIENT_PREFIX):]] = reason
    cache[step] = found
    for old in sorted(cache)[:-CACHED_STEPS]:  # later steps without gradients read the latest judgement
        del cache[old]
    return found
