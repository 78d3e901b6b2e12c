"""Fingerprints of a training batch's input rows, for ``contracts.training_inputs`` (did the inputs come back
unchanged from one epoch to the next, or were they augmented?)."""

from __future__ import annotations

from typing import Any

import torch

from contracts.training_inputs import FINGERPRINT_VALUES


def first_batch_tensor(inputs: Any) -> torch.Tensor | None:
    """The first tensor among a forward call's positional inputs with a batch dimension (None: none has)."""
    for value in inputs if isinstance(inputs, tuple) else (inputs,):
        if isinstance(value, torch.Tensor) and value.dim() >= 1 and value.shape[0] >= 1:
            return value
    return None


def row_fingerprints(batch: torch.Tensor) -> list[int]:
    """One integer per row of ``batch``: a hash of up to FINGERPRINT_VALUES of its values, spread evenly over the
    row, so an image costs what a short feature vector does. A shift, crop, flip or added noise changes most of them;
    the same sample handed over unchanged gives the same fingerprint in every epoch."""
    with torch.no_grad():
        rows = batch.detach().reshape(batch.shape[0], -1)
        stride = max(1, rows.shape[1] // FINGERPRINT_VALUES)
        values = rows[:, ::stride][:, :FINGERPRINT_VALUES].contiguous().cpu()
    if values.dtype == torch.bfloat16:  # numpy has no bfloat16: its bits as 16-bit integers
        values = values.view(torch.int16)
    array = values.numpy()
    return [hash(row.tobytes()) for row in array]
