"""The total L2 norm of a step's gradients in a few kernels whatever the number of small parameter tensors (decision 196).

``torch.nn.utils.get_total_norm`` (and ``torch._foreach_norm``, which it uses) runs one reduction per tensor on a CPU:
about 1.5 us each, so a model of 300 small tensors pays 0.5 ms a step for 1.3 MB of gradients its memory reads in
0.04 ms. On a CPU, when a model has many small gradients, they are copied into one preallocated buffer and reduced
there: one ``torch.cat`` per chunk of gradients that stack along their first dimension without a view, then the norms
of the buffer's rows of :data:`ROW` values, then the norm of those (and of the large tensors' own norms), as
``get_total_norm`` reduces per tensor then across: float32 sums of a few thousand squares, so the same finiteness and
a value within a few units in the last place. Every chunk and block of rows stays under torch's parallel grain
(:data:`SERIAL_VALUES`), so each runs as one loop on the calling thread: a parallel kernel would wake torch's helper
threads for microseconds of work (and, on a busy machine, spin the caller while they come). Large tensors, GPUs (where
``_foreach_norm`` is one fused kernel), mixed devices or dtypes and sparse gradients keep the per-tensor norms.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Sequence
from typing import Any

import torch
from torch.utils._foreach_utils import _device_has_foreach_support

#: Values per row of the flat buffer: each row's sum of squares is one float32 accumulation, as one tensor's is.
ROW = 4096
#: Fewer values than torch's parallel grain (at::internal::GRAIN_SIZE, 32768): a copy or reduction this size runs
#: serially on the calling thread (torch.cat's serial kernel, a reduction not split among threads).
SERIAL_VALUES = 32767
#: A gradient of at most this many values goes to the flat buffer; a larger one is worth its own kernel.
SMALL_VALUES = 8192
#: The flat path pays from this many small gradients on (one copy per chunk of them against one kernel each; measured
#: in decision 196) ...
MIN_SMALL_TENSORS = 32
#: ... and holds at most this many values (the buffer is a copy of the small gradients: 16 MB of float32 at most).
FLAT_MAX_VALUES = 1 << 22

_GRAD = operator.attrgetter("grad")
_PRESENT = functools.partial(operator.is_not, None)


def gradients_of(parameters: Sequence[torch.nn.Parameter]) -> list[torch.Tensor]:
    """The gradients the step's backward left (the parameters without one took no part in it), gathered in C."""
    return list(filter(_PRESENT, map(_GRAD, parameters)))


def _one(index: int):
    return lambda items: (items[index],)


class _FlatPlan:
    """Where each small gradient goes in the buffer: chunks of gradients that concatenate along their first dimension
    (the same number of dimensions and the same trailing sizes; 0-d tensors stacked as a vector), each chunk's slot a
    view of one zero-padded buffer of whole rows; the large gradients' norms join the rows' norms."""

    def __init__(self, gradients: list[torch.Tensor], small: list[int]):
        self.count = len(gradients)
        chunks: list[tuple[tuple | None, list[int]]] = []
        for trailing in dict.fromkeys(_trailing(gradients[index]) for index in small):
            chunk, size = [], 0
            for index in small:
                if _trailing(gradients[index]) != trailing:
                    continue
                if chunk and size + gradients[index].numel() > SERIAL_VALUES:
                    chunks.append((trailing, chunk))
                    chunk, size = [], 0
                chunk.append(index)
                size += gradients[index].numel()
            chunks.append((trailing, chunk))
        total = sum(gradients[index].numel() for index in small)
        rows = -(-total // ROW)
        first = gradients[small[0]]
        # the padding stays zero: no chunk's slot covers it
        self.buffer = torch.zeros(rows * ROW, dtype=first.dtype, device=first.device)
        #: (the chunk's gradients from the step's list, stacked (0-d) or concatenated, the chunk's slot)
        self.chunks: list[tuple[Any, bool, torch.Tensor]] = []
        start = 0
        for trailing, indices in chunks:
            size = sum(gradients[index].numel() for index in indices)
            slot = self.buffer[start : start + size]
            if trailing:
                slot = slot.view(sum(gradients[index].shape[0] for index in indices), *trailing)
            self.chunks.append((_taker(indices), trailing is None, slot))
            start += size
        large = [index for index in range(len(gradients)) if index not in set(small)]
        self.large = _taker(large) if large else None
        self.norms = torch.zeros(rows + len(large), dtype=first.dtype, device=first.device)
        table, per_block = self.buffer.view(rows, ROW), max(1, SERIAL_VALUES // ROW)
        self.blocks = [(table[row : row + per_block], self.norms[row : min(row + per_block, rows)]) for row in range(0, rows, per_block)]
        self.large_norms = self.norms[rows:]

    def norm(self, gradients: list[torch.Tensor]) -> torch.Tensor:
        with torch.no_grad():  # a create_graph backward leaves gradients that require grad: nothing to trace here
            for take, scalar, slot in self.chunks:
                if scalar:
                    torch.stack(take(gradients), out=slot)
                else:
                    torch.cat(take(gradients), out=slot)
            for block, norms in self.blocks:
                torch.linalg.vector_norm(block, 2.0, dim=1, out=norms)
            if self.large is not None:
                torch.stack(torch._foreach_norm(self.large(gradients), 2.0), out=self.large_norms)
            return torch.linalg.vector_norm(self.norms, 2.0)


def _trailing(gradient: torch.Tensor) -> tuple | None:
    """What gradients must share to concatenate along their first dimension (None: a 0-d tensor)."""
    return tuple(gradient.shape[1:]) if gradient.dim() else None


def _taker(indices: list[int]):
    """The items at ``indices`` of a list, as a tuple, in one C call."""
    if len(indices) == 1:
        return lambda items, index=indices[0]: (items[index],)
    return operator.itemgetter(*indices)


class GradientNorm:
    """The total L2 norm of a step's gradients, as ``torch.nn.utils.get_total_norm`` computes it (the same
    finiteness; the value itself on the per-tensor path), with what does not change between steps worked out once per
    parameter list: the flat buffer's plan, or whether the gradients allow ``_foreach_norm`` (else ``get_total_norm``)."""

    def __init__(self) -> None:
        self._parameters: Sequence[Any] | None = None
        self._fused = False
        self._plan: _FlatPlan | None = None

    def total(self, parameters: Sequence[Any], gradients: list[torch.Tensor]) -> torch.Tensor:
        """``parameters``: the list the gradients come from (its identity keys what is worked out once)."""
        if parameters is not self._parameters:
            self._parameters, self._fused = parameters, self._fusable(gradients)
            # the plan needs every parameter's gradient: which ones are present then decides the layout for good
            small = self._small(gradients) if self._fused and len(gradients) == len(parameters) else []
            self._plan = _FlatPlan(gradients, small) if small else None
        plan = self._plan
        if plan is not None and len(gradients) == plan.count:
            return plan.norm(gradients)
        if self._fused and len(gradients) > 0:
            return torch.linalg.vector_norm(torch.stack(torch._foreach_norm(gradients, 2.0)), 2.0)
        return torch.nn.utils.get_total_norm(gradients, 2.0)

    @staticmethod
    def _fusable(gradients: list[torch.Tensor]) -> bool:
        # a gradient has its parameter's device, dtype and layout: one look at a step's gradients holds for the list's life
        kinds = {(gradient.device, gradient.dtype, gradient.layout) for gradient in gradients}
        return (
            len(kinds) == 1
            and next(iter(kinds))[2] is torch.strided
            and all(type(gradient) is torch.Tensor for gradient in gradients)
            and _device_has_foreach_support(next(iter(kinds))[0])
        )

    @staticmethod
    def _small(gradients: list[torch.Tensor]) -> list[int]:
        """The gradients for the flat buffer (see MIN_SMALL_TENSORS); none on a GPU, where ``_foreach_norm`` is one kernel."""
        if gradients[0].device.type != "cpu" or not gradients[0].is_floating_point():
            return []
        small = [index for index, gradient in enumerate(gradients) if gradient.numel() <= SMALL_VALUES]
        if len(small) < MIN_SMALL_TENSORS or sum(gradients[index].numel() for index in small) > FLAT_MAX_VALUES:
            return []
        return small
