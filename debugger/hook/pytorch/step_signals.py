"""The every-step signals of the PyTorch hook's check, reduced where the tensors live and read in one host transfer.

Every step (saved or not) the check needs a few numbers: the total gradient norm (ExplodingTensor's non-finite check,
VanishingGradient, the divergence evidence), the loss, and the training labels' tally (how many labels of each class,
how many the model's top class matched). Read one by one, each is a host-device synchronisation on a GPU, and the
gradient norm of a model of a few hundred parameter tensors costs a Python call per tensor
(``torch.nn.utils.get_total_norm`` moves every per-tensor norm to the first device). Here the norm is one
``torch._foreach_norm`` over every gradient (one fused kernel on a GPU), the label tallies are computed without a
synchronising op, and everything the step needs is stacked and read with one ``tolist()`` (decision 180).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import torch
from torch.utils._foreach_utils import _device_has_foreach_support

from contracts.training_labels import MAX_COUNTED_CLASSES


def gradients_of(parameters: Sequence[tuple[str, torch.nn.Parameter]]) -> list[torch.Tensor]:
    """The gradients the step's backward left (the parameters without one took no part in it)."""
    return [parameter.grad for _, parameter in parameters if parameter.grad is not None]


class GradientNorm:
    """The total L2 norm of a step's gradients, as ``torch.nn.utils.get_total_norm`` computes it (the same value),
    with what does not change between steps worked out once per parameter list: whether every gradient is a plain
    tensor of one device and dtype that has fused foreach kernels (else ``get_total_norm`` itself)."""

    def __init__(self) -> None:
        self._parameters: Sequence[Any] | None = None
        self._fused = False

    def total(self, parameters: Sequence[tuple[str, torch.nn.Parameter]], gradients: list[torch.Tensor]) -> torch.Tensor:
        if parameters is not self._parameters:
            self._parameters, self._fused = parameters, self._fusable(gradients)
        if self._fused and len(gradients) > 0:
            return torch.linalg.vector_norm(torch.stack(torch._foreach_norm(gradients, 2.0)), 2.0)
        return torch.nn.utils.get_total_norm(gradients, 2.0)

    @staticmethod
    def _fusable(gradients: list[torch.Tensor]) -> bool:
        # a gradient has its parameter's device and dtype: one look at a step's gradients holds for the list's life
        kinds = {(gradient.device, gradient.dtype) for gradient in gradients}
        return (
            len(kinds) == 1
            and all(type(gradient) is torch.Tensor for gradient in gradients)
            and _device_has_foreach_support(next(iter(kinds))[0])
        )


class StepLabels:
    """A training loss's class labels, tallied on their device: counts by class (classes past
    ``MAX_COUNTED_CLASSES`` in one bin past it) and how many the scores' top class matched; read at the step's check
    with the other signals. Labels outside [0, classes) (``ignore_index``) are not counted.

    One histogram holds both: a label's bin is its class, moved up by ``width`` bins when the top class matched it;
    the labels no class counts fall into bins that are dropped. Neither boolean indexing nor (on a GPU) bincount,
    each of which reads a size back from the device."""

    def __init__(self, scores: torch.Tensor, labels: torch.Tensor, dropout: float | None):
        classes = scores.shape[1]
        self.bins = min(classes, MAX_COUNTED_CLASSES + 1)
        with torch.no_grad():
            labels = labels.detach().to(torch.int64)
            hits = scores.detach().argmax(dim=1) == labels
            if classes == self.bins:
                # -1 and classes are the uncounted (below 0, at or past classes): bins 0 and classes + 1
                self._offset, self.width = 1, classes + 2
                slots = labels.clamp(-1, classes) + 1
            else:  # more classes than counted: past the cap in one bin, the uncounted in the last
                counted = (labels >= 0) & (labels < classes)
                self._offset, self.width = 0, self.bins + 1
                slots = torch.where(counted, labels.clamp(0, MAX_COUNTED_CLASSES), self.bins)
            slots = slots + hits.to(torch.int64) * self.width
            size = 2 * self.width
            if slots.device.type == "cpu":
                self.values = torch.bincount(slots, minlength=size)
            else:
                self.values = torch.zeros(size, dtype=torch.int64, device=slots.device).scatter_add_(
                    0, slots, torch.ones_like(slots)
                )
        self.dropout = dropout

    def split(self, read: list[float]) -> tuple[list[int], int]:
        """(counts by class, matched) from this tally's values as read back."""
        first, width = self._offset, self.width
        missed, hit = read[first : first + self.bins], read[width + first : width + first + self.bins]
        return [int(a + b) for a, b in zip(missed, hit, strict=True)], int(sum(hit))


@dataclasses.dataclass
class ReadSignals:
    """A step's signals as Python numbers: the gradient norm and the loss (None: none this step), each training
    forward's label tally (counts by class, matched, the dropout active) and its input rows' fingerprints."""

    gradient_norm: float | None
    loss: float | None
    labels: list[tuple[list[int], int, float | None]]
    inputs: list[list[int]]


class StepSignals:
    """What a step's check reads from the device, gathered as the step runs (the label tallies and input
    fingerprints of its training forwards) and read in one transfer at the check (:meth:`read`)."""

    def __init__(self) -> None:
        self._norm = GradientNorm()
        self.labels: list[StepLabels] = []
        self.inputs: list[torch.Tensor] = []

    def read(self, parameters: Sequence[tuple[str, torch.nn.Parameter]] | None, loss: torch.Tensor | None) -> ReadSignals:
        """The step's signals; ``parameters``: those whose gradients are the step's to judge (None: no gradients)."""
        gradients = gradients_of(parameters) if parameters is not None else []
        # None when no parameter has a gradient (no backward this step): nothing to judge, not a vanishing gradient
        norm = self._norm.total(parameters, gradients) if gradients else None
        labels, inputs, self.labels, self.inputs = self.labels, self.inputs, [], []
        parts: list[torch.Tensor] = []
        if norm is not None:
            parts.append(norm.reshape(1))
        if loss is not None:
            parts.append(loss.float().mean().reshape(1))
        parts += [tally.values for tally in labels] + inputs
        if not parts:
            return ReadSignals(None, None, [], [])
        device = parts[0].device
        dtype = torch.float32 if device.type == "mps" else torch.float64  # MPS has no float64
        # every value is exact in float64: a float32 or half norm or loss, counts and fingerprints under 2**52
        values = torch.cat([part.to(device=device, dtype=dtype) for part in parts]).tolist()
        read_norm = values.pop(0) if norm is not None else None
        read_loss = values.pop(0) if loss is not None else None
        pieces = []
        for part in parts[len(parts) - len(labels) - len(inputs) :]:
            size = part.numel()
            pieces.append(values[:size])
            values = values[size:]
        tallies = [(*tally.split(piece), tally.dropout) for tally, piece in zip(labels, pieces, strict=False)]
        fingerprints = [[int(value) for value in piece] for piece in pieces[len(labels) :]]
        return ReadSignals(read_norm, read_loss, tallies, fingerprints)
