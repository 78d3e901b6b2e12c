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

from contracts.training_labels import MAX_COUNTED_CLASSES
from debugger.hook.pytorch.gradient_norm import GradientNorm, gradients_of

#: A CPU batch of at most this many labels is tallied by a Python loop (about 0.15 us a label), a larger one by tensor
#: operations (decision 196).
HOST_LABELS = 1024

__all__ = ["GradientNorm", "ReadSignals", "StepLabels", "StepSignals", "gradients_of"]


class StepLabels:
    """A training loss's class labels, tallied on their device: counts by class (classes past
    ``MAX_COUNTED_CLASSES`` in one bin past it) and how many the scores' top class matched; read at the step's check
    with the other signals. Labels outside [0, classes) (``ignore_index``) are not counted.

    One histogram holds both: a label's bin is its class, moved up by ``width`` bins when the top class matched it;
    the labels no class counts fall into bins that are dropped. Neither boolean indexing nor (on a GPU) bincount,
    each of which reads a size back from the device."""

    def __init__(self, scores: torch.Tensor, labels: torch.Tensor, dropout: float | None):
        classes = self._classes_total = scores.shape[1]
        self.bins = min(classes, MAX_COUNTED_CLASSES + 1)
        if classes == self.bins:
            # -1 and classes are the uncounted (below 0, at or past classes): bins 0 and classes + 1
            self._offset, self.width = 1, classes + 2
        else:  # more classes than counted: past the cap in one bin, the uncounted in the last
            self._offset, self.width = 0, self.bins + 1
        self.dropout = dropout
        with torch.no_grad():
            top = scores.detach().argmax(dim=1)
            #: the histogram: a tensor on the labels' device, read with the step's signals; or, for a CPU batch of up
            #: to HOST_LABELS labels, already the host's list: a loop over them touches less than the tensor
            #: operations do, each of which costs tens of microseconds when the training step left the caches cold
            self.values: torch.Tensor | list[int] = (
                self._on_host(top.tolist(), labels.detach().tolist())
                if top.device.type == "cpu" and labels.device.type == "cpu" and labels.numel() <= HOST_LABELS
                else self._on_device(top, labels.detach().to(torch.int64))
            )

    def _on_host(self, top: list[int], labels: list[int]) -> list[int]:
        counts = [0] * (2 * self.width)
        classes, width, uncounted = self._classes_total, self.width, self.bins
        for label, guess in zip(labels, top, strict=True):
            if self._offset:  # bins 0 and classes + 1: below 0, at or past classes
                slot = (-1 if label < 0 else classes if label > classes else label) + 1
            else:  # past the cap in one bin, the uncounted in the last
                slot = min(label, MAX_COUNTED_CLASSES) if 0 <= label < classes else uncounted
            counts[slot + width if guess == label else slot] += 1
        return counts

    def _on_device(self, top: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        hits = top == labels
        if self._offset:
            slots = labels.clamp(-1, self.width - 2) + 1
        else:
            counted = (labels >= 0) & (labels < self._classes_total)
            slots = torch.where(counted, labels.clamp(0, MAX_COUNTED_CLASSES), self.bins)
        slots = slots + hits.to(torch.int64) * self.width
        size = 2 * self.width
        if slots.device.type == "cpu":
            return torch.bincount(slots, minlength=size)
        return torch.zeros(size, dtype=torch.int64, device=slots.device).scatter_add_(0, slots, torch.ones_like(slots))

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
        #: the parameter objects of the (name, parameter) list the gradients come from, listed once per list
        self._named: Sequence[Any] | None = None
        self._objects: list[torch.nn.Parameter] = []
        self.labels: list[StepLabels] = []
        self.inputs: list[torch.Tensor] = []

    def read(self, parameters: Sequence[tuple[str, torch.nn.Parameter]] | None, loss: torch.Tensor | None) -> ReadSignals:
        """The step's signals; ``parameters``: those whose gradients are the step's to judge (None: no gradients)."""
        if parameters is not None and parameters is not self._named:
            self._named, self._objects = parameters, [parameter for _, parameter in parameters]
        gradients = gradients_of(self._objects) if parameters is not None else []
        # None when no parameter has a gradient (no backward this step): nothing to judge, not a vanishing gradient
        norm = self._norm.total(self._objects, gradients) if gradients else None
        labels, inputs, self.labels, self.inputs = self.labels, self.inputs, [], []
        on_device = [tally for tally in labels if isinstance(tally.values, torch.Tensor)]
        if loss is not None:
            # the loss as float32, the mean of its values (a 0-d float32 loss, the usual one, as it is)
            loss = loss if loss.dtype is torch.float32 and loss.dim() == 0 else loss.float().mean()
        scalars = [value for value in (norm, loss) if value is not None]
        parts: list[torch.Tensor] = [value.reshape(1) for value in scalars]
        parts += [tally.values for tally in on_device] + inputs
        values: list[float] = []
        if len(parts) == len(scalars) == 2 and norm.dtype is loss.dtype and norm.device == loss.device:
            values = torch.stack(scalars).tolist()  # the usual step: two floats of one dtype, exact as they are
        elif len(parts) == len(scalars) == 1:
            values = parts[0].tolist()
        elif parts:
            device = parts[0].device
            dtype = torch.float32 if device.type == "mps" else torch.float64  # MPS has no float64
            # every value is exact in float64: a float32 or half norm or loss, counts and fingerprints under 2**52
            values = torch.cat([part.to(device=device, dtype=dtype) for part in parts]).tolist()
        read_norm = values.pop(0) if norm is not None else None
        read_loss = values.pop(0) if loss is not None else None
        pieces = []
        for part in parts[len(parts) - len(on_device) - len(inputs) :]:
            size = part.numel()
            pieces.append(values[:size])
            values = values[size:]
        device_pieces = iter(pieces[: len(on_device)])
        tallies = [
            (*tally.split(next(device_pieces) if isinstance(tally.values, torch.Tensor) else tally.values), tally.dropout)
            for tally in labels
        ]
        fingerprints = [[int(value) for value in piece] for piece in pieces[len(on_device) :]]
        return ReadSignals(read_norm, read_loss, tallies, fingerprints)
